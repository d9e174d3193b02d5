/**
 * The package as a user meets it: importing it registers conv2d and attention kernels on
 * "cuda"; on this machine explain() lists them with the reason they cannot run; with a
 * device (a fake context over the recording layer) they are chosen, cudnn.enabled turns
 * them off, and bad input is a typed error before any cuDNN call; on two devices each builds
 * and runs its own plans, that device current.
 */
import { cudaStatus } from "@backplane/backend-cuda";
import "../src/index.ts";
import {
  backends,
  conv2d,
  DeviceError,
  DisposedError,
  explain,
  getFlag,
  NoKernelError,
  nn,
  ones,
  randn,
  refreshAvailability,
  SDPBackend,
  scaledDotProductAttention,
  Tensor,
} from "@backplane/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlanSummary } from "../src/index.ts";
import { RecordingLayer } from "../src/recording.ts";
import { installLayer, libraryStatus, maybeRuntime } from "../src/state.ts";
import { fakeAddress, fakeContext, hostCudaMemory } from "./helpers.ts";

const memory = hostCudaMemory();
afterAll(() => memory.restore());
const cuda = (shape: number[], dtype: "float32" | "float16" = "float32") =>
  randn(shape, { dtype }).to("cuda");

// On a machine with a GPU these two describe what it lacks, so they skip there.
const itNoGpu = cudaStatus().available ? it.skip : it;

describe("on this machine (no GPU)", () => {
  itNoGpu("registers both kernels; explain() lists them with the reason they cannot run", () => {
    const conv = explain("conv2d", cuda([1, 8, 8, 8]), cuda([4, 8, 3, 3]));
    const c = conv.candidates.find((k) => k.kernel === "cudnn-conv2d")!;
    expect(c.backend).toBe("cudnn");
    expect(c.reason).toMatch(/cudnn is not available: (CUDA is not available|libcudnn)/);
    const q = cuda([1, 2, 16, 64], "float16");
    const att = explain("scaledDotProductAttention", q, q, q);
    expect(att.candidates.find((k) => k.kernel === "cudnn-attention")?.reason).toMatch(
      /not available/,
    );
  });

  itNoGpu("status() gives a short reason with the fix; version() is torch's integer", () => {
    const st = backends.cudnn.status();
    expect(st.available).toBe(false);
    expect(st.reason!.length).toBeLessThanOrEqual(300);
    if (libraryStatus().version !== undefined)
      expect(backends.cudnn.version()).toBe(libraryStatus().version);
    else expect(st.reason).toMatch(/pip install nvidia-cudnn/);
  });
});

describe("backends.cudnn's own members", () => {
  it("diagnostics(), plans() and clearPlanCache() are typed as the README uses them", () => {
    // tsc checks this file (npx tsc -p tsconfig.json): before the core typed them on
    // backends.cudnn, each was error TS2339 here.
    const d = backends.cudnn.diagnostics();
    const size: number = d.planCacheSize;
    expect(d.version).toBe(libraryStatus().version);
    expect(size).toBe(backends.cudnn.plans().length);
    expect(backends.cudnn.clearPlanCache()).toBeUndefined();
    const plans: PlanSummary[] = backends.cudnn.plans();
    expect(plans).toEqual([]);
  });
});

describe("with a device (recording layer, fake context)", () => {
  let layer: RecordingLayer;
  let undo: () => void;
  let device: ReturnType<typeof fakeContext>;
  beforeAll(() => {
    layer = new RecordingLayer([{ index: 2, numericalNotes: [], workspaceBytes: 256 }]);
    undo = installLayer(layer);
    device = fakeContext();
    refreshAvailability();
  });
  afterAll(() => {
    device.restore();
    undo();
    refreshAvailability();
  });

  it("conv2d runs on cuDNN: one execution binding x, w, y and the bias", () => {
    const x = cuda([2, 8, 9, 9]);
    const w = cuda([4, 8, 3, 3]);
    const bias = cuda([4]);
    expect(explain("conv2d", x, w, { bias, padding: 1 }).selected).toBe("cudnn-conv2d");
    const y = conv2d(x, w, { bias, padding: 1 });
    expect(y.shape).toEqual([2, 4, 9, 9]);
    const e = layer.executions.at(-1)!;
    expect(e.uids).toEqual([1, 2, 3, 4]);
    expect(e.pointers).toEqual([fakeAddress(x), fakeAddress(w), fakeAddress(y), fakeAddress(bias)]);
  });

  it("channels-last input gives channels-last output", () => {
    const x = randn([1, 6, 6, 8]).to("cuda").permute([0, 3, 1, 2]);
    const w = randn([4, 3, 3, 8]).to("cuda").permute([0, 3, 1, 2]);
    const y = conv2d(x, w, { padding: 1 });
    expect(y.strides).toEqual([6 * 6 * 4, 1, 6 * 4, 4]);
    // The caller's dispose() is the last reference: the output's memory is given back at once.
    expect(y.storage.refs).toBe(1);
    y.dispose();
    expect(y.storage.refs).toBe(0);
  });

  it("attention runs as CUDNN_ATTENTION; cudnn.enabled = false and enableCudnnSdp(false) turn it off", () => {
    const q = cuda([1, 2, 16, 64], "float16");
    // Chosen by default: it ranks above backend-cuda's attention kernels (on a GPU too).
    expect(explain("scaledDotProductAttention", q, q, q).selected).toBe("cudnn-attention");
    const cudnnOnly = <R>(f: () => R) =>
      nn.attention.withSdpaKernel([SDPBackend.CUDNN_ATTENTION], f);
    expect(cudnnOnly(() => explain("scaledDotProductAttention", q, q, q).selected)).toBe(
      "cudnn-attention",
    );
    cudnnOnly(() => scaledDotProductAttention(q, q, q, { isCausal: true }));
    // Q, K, V, O, the softmax statistics (cuDNN 9.19's engines match only graphs that write
    // them: an H200 refused the graph without), then the scale and -inf by value.
    const run = layer.executions.at(-1)!;
    expect(run.uids).toEqual([11, 12, 13, 14, 18, 15, 17]);
    const [, , , out, stats] = run.pointers;
    expect(stats).not.toBe(0n);
    expect(stats).not.toBe(out);
    backends.cudnn.enabled = false;
    try {
      const why = explain("scaledDotProductAttention", q, q, q).candidates.find(
        (k) => k.kernel === "cudnn-attention",
      )!.reason;
      expect(why).toMatch(/cudnn\.enabled/);
      expect(() => conv2d(cuda([1, 8, 8, 8]), cuda([4, 8, 3, 3]))).toThrow(NoKernelError);
    } finally {
      backends.cudnn.enabled = true;
    }
    backends.cuda.enableCudnnSdp(false);
    try {
      expect(explain("scaledDotProductAttention", q, q, q).selected).not.toBe("cudnn-attention");
    } finally {
      backends.cuda.enableCudnnSdp(true);
    }
    expect(getFlag("cudnn.enabled")).toBe(true);
  });

  it("out of cuDNN's range: the reason, so the dispatcher can fall back", () => {
    const q = cuda([1, 2, 16, 160], "float16");
    const why = explain("scaledDotProductAttention", q, q, q).candidates.find(
      (k) => k.kernel === "cudnn-attention",
    )!.reason;
    expect(why).toMatch(/head dims up to 128; got E=160/);
    const odd = cuda([1, 2, 16, 20], "float16");
    expect(
      explain("scaledDotProductAttention", odd, odd, odd).candidates.find(
        (k) => k.kernel === "cudnn-attention",
      )!.reason,
    ).toMatch(/multiples of 8/);
  });

  it("inputs cuDNN 9.19 mishandled on an H200 are refused: misaligned views, boolean masks", () => {
    const reason = (...args: Parameters<typeof explain>) =>
      explain(...args).candidates.find((k) => k.kernel === "cudnn-attention")!.reason;
    const q = cuda([1, 2, 16, 64], "float16");
    // A view of a new "cuda" storage of `size` elements.
    const view = (size: number, shape: number[], strides: number[], offset: number) => {
      const base = cuda([size], "float16");
      base.storage.retain();
      const t = new Tensor(base.storage, "float16", shape, strides, offset);
      base.dispose();
      return t;
    };
    // Planned, then wrong by 11.8 (the testkit's offset view: 5 elements into its storage).
    const offset = view(5 + 2048, [1, 2, 16, 64], [2048, 1024, 64, 1], 5);
    expect(reason("scaledDotProductAttention", offset, q, q)).toMatch(
      /query to start 16-byte aligned; it starts at byte 10/,
    );
    const rows = view(2 * 16 * 68, [1, 2, 16, 64], [2176, 1088, 68, 1], 0);
    expect(reason("scaledDotProductAttention", q, rows, q)).toMatch(
      /key rows 16-byte aligned; dim 2 has a stride of 68 elements/,
    );
    const additive = view(1 + 256, [16, 16], [16, 1], 1);
    expect(reason("scaledDotProductAttention", q, q, q, { attnMask: additive })).toMatch(
      /mask to start 16-byte aligned/,
    );
    // SIGFPE while planning: the process died.
    const bool = ones([16, 16], { dtype: "bool" }).to("cuda");
    expect(reason("scaledDotProductAttention", q, q, q, { attnMask: bool })).toMatch(
      /additive float masks, not boolean ones/,
    );
    // Aligned views still run on cuDNN.
    const fine = view(2 * 16 * 72, [1, 2, 16, 64], [2304, 1152, 72, 1], 0);
    const accepted = explain("scaledDotProductAttention", fine, fine, fine).candidates.find(
      (k) => k.kernel === "cudnn-attention",
    )!.accepted;
    expect(accepted).toBe(true);
  });

  it("a problem cuDNN makes no plan for is refused in supports(), with cuDNN's reason", () => {
    // As on an H200 (cuDNN 9.19): the static checks pass, every engine refuses the graph.
    const refusing = new RecordingLayer([
      { index: 0, refuse: "CUDNN_STATUS_NOT_SUPPORTED (fake)" },
    ]);
    const undoLayer = installLayer(refusing);
    refreshAvailability();
    try {
      const q = cuda([1, 2, 24, 64], "float16");
      const e = explain("scaledDotProductAttention", q, q, q);
      const why = e.candidates.find((k) => k.kernel === "cudnn-attention")!.reason;
      expect(why).toMatch(/cuDNN makes no plan for this attention: .*NOT_SUPPORTED/);
      expect(e.selected).not.toBe("cudnn-attention");
      // Asked again, the refusal is remembered: no second round of plan building.
      const calls = refusing.calls.length;
      explain("scaledDotProductAttention", q, q, q);
      expect(refusing.calls.length).toBe(calls);
    } finally {
      undoLayer();
      refreshAvailability();
    }
  });

  it("bad input is a typed error before any cuDNN call", () => {
    const before = layer.calls.length + layer.executions.length;
    const x = cuda([1, 8, 8, 8]);
    const w = cuda([4, 8, 3, 3]);
    x.dispose();
    expect(() => conv2d(x, w)).toThrow(DisposedError);
    expect(() => conv2d(cuda([1, 8, 8, 8]), randn([4, 8, 3, 3]))).toThrow(DeviceError);
    expect(() => conv2d(cuda([1, 8, 8, 8]), cuda([4, 3, 3, 3]))).toThrow(/channels/);
    const f64 = randn([1, 8, 8, 8], { dtype: "float64" }).to("cuda");
    expect(() => conv2d(f64, randn([4, 8, 3, 3], { dtype: "float64" }).to("cuda"))).toThrow(
      NoKernelError,
    );
    // Zero input channels: cuDNN's finalize refuses them (BAD_PARAM), so supports() does.
    const empty = [cuda([1, 0, 5, 5]), cuda([2, 0, 3, 3])] as const;
    expect(
      explain("conv2d", ...empty).candidates.find((k) => k.kernel === "cudnn-conv2d")!.reason,
    ).toMatch(/no empty input-channel dimension; input is \[1,0,5,5\]/);
    expect(() => conv2d(...empty)).toThrow(NoKernelError);
    expect(layer.calls.length + layer.executions.length).toBe(before);
  });
});

describe("on two devices (recording layer, fake context)", () => {
  let layer: RecordingLayer;
  let undo: () => void;
  let device: ReturnType<typeof fakeContext>;
  /** The device current at each plan finalize and execution, since the last clear. */
  const seen: number[] = [];
  beforeAll(() => {
    layer = new RecordingLayer([{ index: 2, numericalNotes: [], workspaceBytes: 256 }]);
    undo = installLayer(layer);
    device = fakeContext(90, 2);
    refreshAvailability();
    const s = layer.symbols as Record<string, (...a: never[]) => unknown>;
    for (const name of ["cudnnBackendFinalize", "cudnnBackendExecute"]) {
      const f = s[name]!;
      s[name] = (...a: never[]) => {
        seen.push(device.current());
        return f(...a);
      };
    }
  });
  afterAll(() => {
    device.restore();
    undo();
    refreshAvailability();
  });

  it("each device builds and runs its own plan with its own handle, that device current", () => {
    const on = (d: string) => [randn([1, 8, 9, 9]).to(d), randn([4, 8, 3, 3]).to(d)] as const;
    const [x0, w0] = on("cuda:0");
    const [x1, w1] = on("cuda:1");
    const conv = (x: Tensor, w: Tensor, want: number) => {
      seen.length = 0;
      conv2d(x, w);
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen)).toEqual(new Set([want]));
      const e = layer.executions.at(-1)!;
      // Finalized with the handle it runs on: a plan is one device's.
      expect(e.planHandle).toBe(e.handle);
      return e.handle;
    };
    const h0 = conv(x0, w0, 0);
    const h1 = conv(x1, w1, 1);
    expect(h1).not.toBe(h0);
    expect(conv(x0, w0, 0)).toBe(h0);
    // A new problem on cuda:0 after work on cuda:1 (both handles exist): built on cuda:0.
    conv(x1, w1, 1);
    expect(conv(x0, randn([4, 8, 5, 5]).to("cuda:0"), 0)).toBe(h0);
    const keys = maybeRuntime()!.plans.keys();
    expect(keys.filter((k) => k.startsWith("conv2d|cuda:0@sm90|"))).toHaveLength(2);
    expect(keys.filter((k) => k.startsWith("conv2d|cuda:1@sm90|"))).toHaveLength(1);
  });

  it("attention plans are per device too", () => {
    const q0 = randn([1, 2, 16, 64], { dtype: "float16" }).to("cuda:0");
    const q1 = randn([1, 2, 16, 64], { dtype: "float16" }).to("cuda:1");
    for (const [q, want] of [
      [q0, 0],
      [q1, 1],
      [q0, 0],
    ] as const) {
      seen.length = 0;
      scaledDotProductAttention(q, q, q);
      expect(new Set(seen)).toEqual(new Set([want]));
      const e = layer.executions.at(-1)!;
      expect(e.planHandle).toBe(e.handle);
    }
    const keys = maybeRuntime()!
      .plans.keys()
      .filter((k) => k.startsWith("sdpa|"));
    expect(keys.map((k) => k.split("|")[1]).sort()).toEqual(["cuda:0@sm90", "cuda:1@sm90"]);
  });
});
