/**
 * Everything above the hardware through the CPU stand-in helper: buffer lifetimes and
 * copies, error codes as typed errors with the helper's message, out-of-memory, freed and
 * forged handles, bad input refused before any native call, kernels on device-side views
 * (offsets, transposes, broadcast strides), and the CPU fallback.
 */
import {
  ArgumentError,
  add,
  BackplaneError,
  backends,
  conv2d,
  DeviceError,
  DisposedError,
  empty,
  fft,
  matmul,
  NoKernelError,
  randn,
  scaledDotProductAttention,
  setLogHandler,
  softmax,
  type Tensor,
  tensor,
} from "@backplane/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetFallbackWarnings } from "../src/fallback.ts";
import {
  loadHelper,
  MpsError,
  MpsFreedBufferError,
  type MpsHandle,
  MpsOutOfMemoryError,
  mpsApi,
  mpsState,
} from "../src/index.ts";
import { standin } from "./helpers.ts";
import { view } from "./views.ts";

const built = standin();
const d = built.path ? describe : describe.skip;

const helper = () => mpsState().helper!;
const handle = (t: Tensor) => t.storage.handle as MpsHandle;

/** Largest |a - b| over two same-shaped tensors (read back to the CPU). */
function maxDiff(a: Tensor, b: Tensor): number {
  const x = a.device === "cpu" ? a.toFloat64() : a.to("cpu").toFloat64();
  const y = b.device === "cpu" ? b.toFloat64() : b.to("cpu").toFloat64();
  expect(x.length).toBe(y.length);
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]! - y[i]!));
  return m;
}

/** The elements of a tensor on any device, as numbers. */
function values(t: Tensor): number[] {
  return Array.from((t.device === "cpu" ? t : t.to("cpu")).toFloat64());
}

/** Runs `fn` and returns the native calls it made. */
function callsDuring(fn: () => void): number {
  const before = helper().calls;
  fn();
  return helper().calls - before;
}

d("mps device through the CPU stand-in helper", () => {
  beforeAll(async () => {
    const st = await loadHelper(built.path!);
    expect(st.reason).toBeUndefined();
  });
  afterAll(() => {
    helper().setMemoryLimit(0);
  });

  it("is available, names the stand-in, and reports its device", () => {
    const ws = mpsApi.recommendedMaxMemory();
    expect(mpsApi.memoryStats().capBytes).toBe(Math.floor(ws / 10) * 17);
    expect(backends.mps.isAvailable()).toBe(true);
    expect(mpsApi.deviceName()).toBe("Backplane CPU stand-in (not Metal)");
    const diag = mpsApi.diagnostics();
    expect(diag.implementation).toBe("cpu-stand-in");
    expect(diag.built).toBe(true);
    expect(mpsApi.recommendedMaxMemory()).toBeGreaterThan(0);
  });

  it("round-trips bytes, copies between buffers, and frees what it allocates", () => {
    const before = mpsApi.memoryStats();
    const x = randn([5, 7]);
    const m = x.to("mps");
    expect(m.device).toBe("mps");
    expect(mpsApi.memoryStats().liveBuffers).toBe(before.liveBuffers + 1);
    expect(values(m)).toEqual(values(x));
    const c = m.clone();
    expect(values(c.to("cpu"))).toEqual(values(x));
    m.dispose();
    c.dispose();
    const after = mpsApi.memoryStats();
    expect(after.liveBuffers).toBe(before.liveBuffers);
    expect(after.heldBytes).toBe(before.heldBytes);
  });

  it("a helper error code becomes a typed error with the helper's message", () => {
    const h = helper();
    const id = h.alloc(16);
    h.free(id);
    expect(() => h.free(id)).toThrow(MpsFreedBufferError);
    expect(() => h.read(id, 0, new Uint8Array(4))).toThrow(/buffer 0x[0-9a-f]+ was freed/);
    expect(() => h.free(0xdead_0000_0001n)).toThrow(MpsError);
    const small = h.alloc(8);
    try {
      expect(() => h.read(small, 4, new Uint8Array(8))).toThrow(
        /bp_mps_buffer_read failed \(BP_MPS_E_OUT_OF_RANGE\): buffer_read: needs 12 bytes, the buffer has 8/,
      );
      expect(() => h.matmul(0, small, small, small, [1, 4, 4, 4], true, true)).toThrow(
        /matmul a: needs 64 bytes/,
      );
      expect(() => h.matmul(9, small, small, small, [1, 1, 1, 1], true, true)).toThrow(
        /BP_MPS_E_INVALID_ARGUMENT.*dtype 9/,
      );
      expect(() =>
        h.stridedCopy(4, small, 0, new Array(9).fill(1), new Array(9).fill(1), small),
      ).toThrow(/rank 9/);
    } finally {
      h.free(small);
    }
  });

  it("out of memory is MpsOutOfMemoryError, and the cap is torch's per-process fraction", () => {
    const ws = mpsApi.recommendedMaxMemory();
    mpsApi.setPerProcessMemoryFraction((1 << 20) / ws); // a 1 MiB cap
    try {
      const err = (() => {
        try {
          empty([1 << 19], { device: "mps" }); // 2 MiB of float32
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(MpsOutOfMemoryError);
      expect((err as Error).message).toMatch(
        /MPS out of memory: \d+ bytes held, 2097152 more asked/,
      );
      const fits = empty([1 << 10], { device: "mps" });
      fits.dispose();
    } finally {
      mpsApi.setPerProcessMemoryFraction(0);
    }
    // 0 lifts the cap; the default is PyTorch's high watermark, 1.7 x the working set.
    expect(mpsApi.memoryStats().capBytes).toBe(0);
    expect(() => mpsApi.setPerProcessMemoryFraction(3)).toThrow(ArgumentError);
    expect(() => mpsApi.setPerProcessMemoryFraction(Number.NaN)).toThrow(ArgumentError);
  });

  it("bad input raises typed errors before any native call", () => {
    const a = randn([4, 4]).to("mps");
    const b = randn([5, 4]).to("mps");
    const cpu = randn([4, 4]);
    const x4 = randn([1, 2, 3, 3]).to("mps");
    const w4 = randn([1, 3, 2, 2]).to("mps");
    const expectRefused = (fn: () => unknown, type: new (...a: never[]) => BackplaneError) =>
      expect(
        callsDuring(() => expect(fn).toThrow(type)),
        String(fn),
      ).toBe(0);
    expectRefused(() => matmul(a, b), BackplaneError); // shapes
    expectRefused(() => matmul(a, cpu), DeviceError); // devices
    expectRefused(() => empty([2], { device: "mps:1" }), DeviceError);
    expectRefused(() => a.to("mps:3"), DeviceError);
    expectRefused(
      () => conv2d(x4, w4), // 2 input channels, the weight wants 3
      BackplaneError,
    );
    expectRefused(() => softmax(a, 5), BackplaneError);
    const gone = randn([4, 4]).to("mps");
    gone.dispose();
    expectRefused(() => matmul(gone, a), DisposedError);
    expectRefused(() => mpsMemoryRange(a), ArgumentError);
    a.dispose();
    b.dispose();
  });

  it("kernels read device-side views: offsets, transposes, broadcast (stride 0) operands", () => {
    const base = randn([2 * 3 * 4 + 5]);
    const onMps = base.to("mps");
    // [3, 4] at offset 5, and its transpose [4, 3]
    const a = view(onMps, [3, 4], [4, 1], 5);
    const at = view(onMps, [4, 3], [1, 4], 5);
    const b = randn([4, 6]).to("mps");
    const want = matmul(view(base, [3, 4], [4, 1], 5), b.to("cpu"));
    expect(maxDiff(matmul(a, b), want)).toBeLessThan(1e-5);
    // a view read back or made contiguous on the device (DeviceMemory.gather)
    const cpuT = view(base, [4, 3], [1, 4], 5);
    expect(values(at.to("cpu"))).toEqual(values(cpuT.contiguous()));
    expect(values(at.contiguous())).toEqual(values(cpuT.contiguous()));
    expect(
      maxDiff(
        matmul(at, view(b, [3, 4], [6, 1], 0)),
        matmul(cpuT, view(b.to("cpu"), [3, 4], [6, 1], 0)),
      ),
    ).toBeLessThan(1e-5);
    // an expanded batch operand: [5, 3, 4] with batch stride 0
    const expanded = view(onMps, [5, 3, 4], [0, 4, 1], 5);
    const got = matmul(expanded, b);
    const wantE = matmul(view(base, [5, 3, 4], [0, 4, 1], 5), b.to("cpu"));
    expect(maxDiff(got, wantE)).toBeLessThan(1e-5);
    // softmax of the transpose
    expect(maxDiff(softmax(at, 0), softmax(view(base, [4, 3], [1, 4], 5), 0))).toBeLessThan(1e-6);
    // conv2d on a channel slice of a bigger NCHW tensor (offset + strides)
    const big = randn([2, 5, 6, 6]);
    const slice = (t: Tensor) => view(t, [2, 3, 6, 6], [180, 36, 6, 1], 36);
    const w = randn([4, 3, 3, 3]);
    const convGot = conv2d(slice(big.to("mps")), w.to("mps"), { padding: 1 });
    expect(maxDiff(convGot, conv2d(slice(big), w, { padding: 1 }))).toBeLessThan(1e-4);
    // attention with a mask broadcast over batch and heads ([1, 1, L, S] -> stride 0)
    const q = randn([2, 4, 5, 8]);
    const k = randn([2, 2, 7, 8]);
    const v = randn([2, 2, 7, 3]);
    const mask = randn([1, 1, 5, 7]);
    const opts = { attnMask: mask, enableGqa: true };
    const sd = scaledDotProductAttention(q.to("mps"), k.to("mps"), v.to("mps"), {
      ...opts,
      attnMask: mask.to("mps"),
    });
    expect(maxDiff(sd, scaledDotProductAttention(q, k, v, opts))).toBeLessThan(1e-5);
  });

  it("an op without an mps kernel raises NoKernelError naming mps.fallback; with it on, it runs on the CPU once-warned", () => {
    const x = randn([8, 2]).to("mps");
    expect(() => fft(x)).toThrow(NoKernelError);
    expect(() => fft(x)).toThrow(/mps\.fallback is off/);
    const warnings: string[] = [];
    const prev = setLogHandler((_level, m) => warnings.push(m));
    resetFallbackWarnings();
    backends.mps.fallback = true;
    try {
      const y = fft(x);
      expect(y.device).toBe("mps");
      expect(maxDiff(y, fft(x.to("cpu")))).toBeLessThan(1e-5);
      fft(x);
      expect(warnings.filter((w) => w.startsWith("fft has no mps kernel"))).toHaveLength(1);
      // an int32 add has no mps kernel either
      const i = tensor([1, 2, 3], { dtype: "int32" }).to("mps");
      const sum = add(i, i);
      expect(sum.device).toBe("mps");
      expect(values(sum)).toEqual([2, 4, 6]);
    } finally {
      backends.mps.fallback = false;
      setLogHandler(prev);
    }
  });
});

/** A download past the end of a storage (refused by the memory's range check). */
function mpsMemoryRange(t: Tensor): void {
  const h = handle(t);
  t.storage.memory.downloadSync!(h, 0, h.byteLength + 4);
}
