/**
 * The WGSL kernels beyond the testkit's cases: views made on the device (transposes,
 * permutes, broadcasts are read through their strides, never copied), sizes that take
 * the tiled paths (several tiles, ragged edges), int32, refusal reasons, and the verbose
 * trace with GPU time.
 */
import {
  add,
  backends,
  conv2d,
  explain,
  gelu,
  getFlag,
  logSoftmax,
  matmul,
  mul,
  nn,
  rand,
  randn,
  relu,
  scaledDotProductAttention,
  setFlag,
  setVerboseSink,
  softmax,
  type Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect } from "vitest";
import { webgpuCapability } from "../src/index.ts";
import { gpuIt, heavyGpuIt, relErr, values } from "./helpers.ts";

type Device = "cpu" | "webgpu";
const TOL = 2e-5;

/** Seeded inputs, the same numbers on both devices. */
const R = (shape: number[], seed: number, dev: Device, scale = 1) => {
  const t = randn(shape, { seed });
  if (scale !== 1) {
    const s = tensor(new Float32Array([scale]));
    const scaled = mul(t, s);
    t.dispose();
    s.dispose();
    return dev === "cpu" ? scaled : move(scaled, dev);
  }
  return dev === "cpu" ? t : move(t, dev);
};
const move = (t: Tensor, dev: Device) => {
  const m = t.to(dev);
  t.dispose();
  return m;
};

/** Builds the same computation on cpu (the reference kernels) and on webgpu; compares. */
async function same(build: (dev: Device) => Tensor, tol = TOL): Promise<number> {
  const want = build("cpu");
  const got = build("webgpu");
  expect(got.device).toBe("webgpu");
  expect(got.shape).toEqual(want.shape);
  const err = relErr(await values(got), await values(want));
  want.dispose();
  got.dispose();
  expect(err).toBeLessThanOrEqual(tol);
  return err;
}

const which = (op: string, ...args: unknown[]) => explain(op, ...args).selected;

describe("webgpu kernels", () => {
  gpuIt("matmul: tiled sizes, ragged edges, transposed and permuted views, batches", async () => {
    await same((d) => matmul(R([128, 128], 1, d), R([128, 128], 2, d)));
    await same((d) => matmul(R([65, 97], 3, d), R([97, 70], 4, d)));
    // transposes on the device: strided operands, read in place
    const a = R([97, 65], 5, "webgpu").transpose();
    expect(a.isContiguous).toBe(false);
    expect(which("matmul", a, a.transpose())).toBe("wgsl-matmul-tiled");
    a.dispose();
    await same((d) => matmul(R([97, 65], 5, d).transpose(), R([70, 97], 6, d).transpose()));
    // a permuted batch ([40, 2, 33] seen as [2, 40, 33]) times a broadcast matrix
    await same((d) => matmul(R([40, 2, 33], 7, d).permute([1, 0, 2]), R([33, 50], 8, d)));
    // broadcast batch dims, small-matrix path
    await same((d) =>
      matmul(R([2, 1, 3, 4], 9, d), R([5, 4, 2], 10, d).transpose(-1, -2).transpose(-1, -2)),
    );
    await same((d) => matmul(R([3, 7, 5], 11, d).transpose(1, 2), R([7, 6], 12, d)));
  });

  gpuIt("add, mul, relu, gelu on strided views and broadcasts", async () => {
    await same((d) => add(R([5, 7], 1, d).transpose(), R([5], 2, d)));
    await same((d) => mul(R([2, 3, 4], 3, d).permute([2, 0, 1]), R([4, 1, 1], 4, d)));
    await same((d) => add(R([4, 1, 6], 5, d), R([3, 1], 6, d)));
    await same((d) => relu(R([6, 5], 7, d).transpose()));
    await same((d) => gelu(R([3, 4, 5], 8, d, 3).permute([1, 2, 0])));
    // tanh form far out in the tails stays finite (the argument is clamped)
    await same((d) => gelu(R([64], 9, d, 30), { approximate: "tanh" }));
    await same((d) => add(R([1000], 10, d), R([1000], 11, d))); // the contiguous path
  });

  gpuIt("int32 add, mul and relu", async () => {
    const a = tensor(new Int32Array([1, -2, 3, 2 ** 30, -7]), { device: "webgpu" });
    const b = tensor(new Int32Array([10, 20, -30, 2 ** 30, 3]), { device: "webgpu" });
    expect(Array.from(await values(add(a, b)))).toEqual([11, 18, -27, -(2 ** 31), -4]);
    expect(Array.from(await values(mul(a, b)))).toEqual([10, -40, -90, 0, -21]);
    expect(Array.from(await values(relu(a)))).toEqual([1, 0, 3, 2 ** 30, 0]);
  });

  gpuIt("softmax and logSoftmax along any dim, on permuted inputs", async () => {
    await same((d) => softmax(R([3, 4, 5], 1, d).permute([2, 0, 1]), 1));
    await same((d) => softmax(R([7, 300], 2, d, 20), -1));
    await same((d) => logSoftmax(R([9, 6], 3, d).transpose(), -1));
    await same((d) => softmax(R([2, 3, 5], 4, d), 0));
  });

  heavyGpuIt("conv2d: NHWC views, several tiles, groups, bias", async () => {
    const opts = (d: Device) => ({ stride: 2, padding: 1, bias: R([5], 3, d) });
    await same((d) =>
      conv2d(R([2, 9, 9, 3], 1, d).permute([0, 3, 1, 2]), R([5, 3, 3, 3], 2, d), opts(d)),
    );
    // 70 output channels (two row tiles), 144 positions (three column tiles)
    await same((d) => conv2d(R([1, 8, 12, 12], 4, d), R([70, 8, 3, 3], 5, d), { padding: 1 }));
    // a permuted weight ([kh, kw, in, out] seen as [out, in, kh, kw]), groups 2, dilation 2
    await same((d) =>
      conv2d(R([1, 4, 10, 10], 6, d), R([3, 3, 2, 6], 7, d).permute([3, 2, 0, 1]), {
        groups: 2,
        dilation: 2,
        padding: 2,
      }),
    );
  });

  heavyGpuIt(
    "scaledDotProductAttention: tiles of queries and keys, views, masks, GQA",
    async () => {
      const sdpa = scaledDotProductAttention;
      // L = 40 (two query tiles), S = 45 (two key tiles), k from a transposed [E, S] view
      await same((d) =>
        sdpa(
          R([1, 2, 40, 16], 1, d),
          R([1, 2, 16, 45], 2, d).transpose(-2, -1),
          R([1, 2, 45, 16], 3, d),
        ),
      );
      await same((d) =>
        sdpa(R([2, 40, 24], 4, d), R([2, 40, 24], 5, d), R([2, 40, 24], 6, d), { isCausal: true }),
      );
      // head dims padded in the shader (E 64, Ev 48), value as a permuted view
      await same((d) =>
        sdpa(
          R([1, 3, 5, 64], 7, d),
          R([1, 3, 9, 64], 8, d),
          R([1, 9, 3, 48], 9, d).permute([0, 2, 1, 3]),
        ),
      );
      // GQA: 6 query heads on 2 kv heads
      await same((d) =>
        sdpa(R([1, 6, 4, 8], 10, d), R([1, 2, 7, 8], 11, d), R([1, 2, 7, 8], 12, d), {
          enableGqa: true,
        }),
      );
      // a boolean mask with a row that masks everything: 0 there, as the reference (PyTorch 2.13)
      const mask = (d: Device) => {
        const m = new Uint8Array(3 * 5).fill(1);
        m.fill(0, 5, 10); // query row 1 sees no key
        return tensor(m, { shape: [3, 5], dtype: "bool", device: d });
      };
      await same((d) =>
        sdpa(R([2, 3, 8], 13, d), R([2, 5, 8], 14, d), R([2, 5, 8], 15, d), { attnMask: mask(d) }),
      );
      const q = R([2, 3, 8], 13, "webgpu");
      const k = R([2, 5, 8], 14, "webgpu");
      const m = mask("webgpu");
      const o = sdpa(q, k, k, { attnMask: m });
      const out = await values(o);
      for (const t of [q, k, m, o]) t.dispose();
      expect(out.slice(8, 16)).toEqual(new Float64Array(8));
      // an additive mask broadcast over heads
      await same((d) =>
        sdpa(R([1, 2, 4, 8], 16, d), R([1, 2, 6, 8], 17, d), R([1, 2, 6, 8], 18, d), {
          attnMask: R([1, 4, 6], 19, d),
        }),
      );
    },
  );

  gpuIt("non-finite values land where the reference puts them", async () => {
    const LOWEST = -3.4028234663852886e38; // float32's lowest: an HF-style padding mask
    const T = (x: number[], shape: number[], d: Device) =>
      tensor(new Float32Array(x), { shape, device: d });
    // NaN where the reference has NaN, else within TOL of it.
    const alike = async (build: (d: Device) => Tensor, what: string) => {
      const want = build("cpu");
      const got = build("webgpu");
      const [g, w] = [await values(got), await values(want)];
      for (const t of [want, got]) t.dispose();
      expect(
        Array.from(g, (v, i) =>
          Number.isNaN(w[i]) ? Number.isNaN(v) : Math.abs(v - w[i]) <= TOL * (1 + Math.abs(w[i])),
        ).every(Boolean),
        `${what}: ${g} against ${w}`,
      ).toBe(true);
    };
    // max() may drop a NaN: relu keeps it.
    await alike((d) => relu(T([Number.NaN, -1, 2, 0], [4], d)), "relu");
    // A row of the lowest float: its max is that value, not a constant above it.
    await alike((d) => softmax(T([LOWEST, LOWEST, LOWEST, 0, -1, 1], [2, 3], d), -1), "softmax");
    await alike((d) => logSoftmax(T([LOWEST, LOWEST, LOWEST], [1, 3], d), -1), "logSoftmax");
    const k = (d: Device) => T([1, 0, 0, 1, 1, 1], [3, 2], d);
    const v = (d: Device) => T([1, 2, 3, 4, 5, 6], [3, 2], d);
    const sdpa = (q: number[], mask: number[] | undefined, d: Device) =>
      scaledDotProductAttention(T(q, [1, 2], d), k(d), v(d), {
        attnMask: mask ? T(mask, [1, 3], d) : undefined,
      });
    // A NaN score makes the row NaN (it was skipped as if masked).
    await alike((d) => sdpa([Number.NaN, 1], undefined, d), "NaN query");
    await alike((d) => sdpa([1, 1], [0, Number.NaN, 0], d), "NaN in the mask");
    await alike((d) => sdpa([1, 1], [0, Number.POSITIVE_INFINITY, 0], d), "+inf in the mask");
    // Scores at the lowest float are scores, not masked keys: the mean of V.
    await alike((d) => sdpa([1, 1], [LOWEST, LOWEST, LOWEST], d), "lowest-float mask");
    await alike((d) => sdpa([1, 1], [-3.2e38, -3.2e38, -3.3e38], d), "very negative mask");
    await alike((d) => sdpa([1, 1], [0, Number.NEGATIVE_INFINITY, 0], d), "-inf masks one key");
  });

  gpuIt("softmax rows with NaN, +inf or only -inf are NaN, float32 and float16", async () => {
    // A shader's max, exp and log promise nothing for NaN and infinities (SwiftShader:
    // max(2, NaN) = 2, exp(NaN) = +inf, log(0) = -88): the kernel classifies by bits.
    const I = Number.POSITIVE_INFINITY;
    const rows = [
      [Number.NaN, 1, 2],
      [I, 1, 2],
      [-I, I, 0],
      [-I, -I, -I],
      [-I, 1, 2],
      [3e38, -3e38, 0], // x - max overflows to -inf: exp gives 0 (float16: +inf, a NaN row)
      [1, 2, 3],
    ];
    // a row longer than the workgroup: the NaN and +inf meet the max in the reduction
    const long = (at: number, v: number) =>
      Array.from({ length: 200 }, (_, i) => (i === at ? v : Math.sin(i)));
    const cases: [number[], number[]][] = [
      [rows.flat(), [rows.length, 3]],
      [
        [...long(150, Number.NaN), ...long(77, I), ...long(199, -I)],
        [3, 200],
      ],
      ...[-I, I, Number.NaN, 5].map((v): [number[], number[]] => [[v], []]),
    ];
    const f16 = webgpuCapability()!.features.shaderF16;
    if (!f16) console.log("[backend-webgpu] no shader-f16 on this adapter: softmax float32 only");
    for (const dtype of f16 ? (["float32", "float16"] as const) : (["float32"] as const)) {
      for (const [data, shape] of cases) {
        for (const op of [softmax, logSoftmax]) {
          const make = (d: Device) => tensor(data, { shape, dtype, device: d });
          const [x, y] = [make("cpu"), make("webgpu")];
          const [want, got] = [op(x, -1), op(y, -1)];
          const [w, g] = [await values(want), await values(got)];
          for (const t of [x, y, want, got]) t.dispose();
          const ok = Array.from(g, (v, i) =>
            Number.isFinite(w[i])
              ? Math.abs(v - w[i]) <= 4e-3 * (1 + Math.abs(w[i]))
              : Object.is(v, w[i]),
          );
          const at = ok.indexOf(false);
          expect(at, `${dtype} ${op.name} [${shape}] at ${at}: ${g[at]}, reference ${w[at]}`).toBe(
            -1,
          );
        }
      }
    }
  });

  gpuIt("refusals name the reason", async () => {
    const q = R([1, 4, 8], 1, "webgpu");
    const sdpaReason = (opts: object) =>
      explain("scaledDotProductAttention", q, q, q, opts).candidates.find(
        (c) => c.kernel === "wgsl-sdpa-tiled",
      )?.reason;
    expect(sdpaReason({ dropoutP: 0.1 })).toMatch(/dropout is not implemented/);
    {
      using _ = backends.cuda.flags({ memEfficientSdp: false });
      expect(sdpaReason({})).toMatch(/disabled by flag cuda.memEfficientSdp/);
    }
    {
      using _ = nn.attention.sdpaKernel([nn.attention.SDPBackend.EFFICIENT_ATTENTION]);
      expect(sdpaReason({})).toBe("selected");
    }
    const wide = R([1, 2, 300], 2, "webgpu");
    expect(
      explain("scaledDotProductAttention", wide, wide, wide).candidates.find(
        (c) => c.kernel === "wgsl-sdpa-tiled",
      )?.reason,
    ).toMatch(/at most 256/);
    // float16: the feature, then the flag
    const h = rand([4, 4], { dtype: "float16", seed: 3, device: "webgpu" });
    const mmReason = () =>
      explain("matmul", h, h).candidates.find((c) => c.kernel === "wgsl-matmul-tiled")?.reason;
    if (webgpuCapability()!.features.shaderF16) {
      expect(mmReason()).toBe("selected");
      using _ = backends.webgpu.flags({ allowF16: false });
      expect(mmReason()).toMatch(/allowF16 = false/);
    } else {
      expect(mmReason()).toMatch(/shader-f16/);
    }
    for (const t of [q, wide, h]) t.dispose();
  });

  gpuIt("float16 matmul where the adapter has shader-f16", async () => {
    if (!webgpuCapability()!.features.shaderF16) {
      console.log(
        "[backend-webgpu] no shader-f16 on this adapter: float16 is refused (checked above)",
      );
      return;
    }
    const f16 = (t: Tensor) => {
      const h = t.astype("float16");
      t.dispose();
      return h;
    };
    const err = await same(
      (d) => matmul(move(f16(R([128, 96], 1, "cpu")), d), move(f16(R([96, 80], 2, "cpu")), d)),
      4e-3,
    );
    console.log(
      `[backend-webgpu] float16 matmul 128x96x80: relative error ${err.toExponential(1)}`,
    );
  });

  gpuIt("the verbose trace gets GPU times", async () => {
    const lines: string[] = [];
    const prev = setVerboseSink((l) => lines.push(l));
    const before = getFlag("webgpu.verbose");
    setFlag("webgpu.verbose", true);
    try {
      const a = R([32, 32], 1, "webgpu");
      const c = matmul(a, a);
      await c.data(); // waits for the queue and the trace readbacks
      const exec = lines.find((l) => l.startsWith("backplane_verbose,exec,matmul,webgpu:"));
      const gpu = lines.find((l) => l.startsWith("backplane_verbose,gpu,matmul,webgpu:"));
      expect(exec).toMatch(
        /^backplane_verbose,exec,matmul,webgpu:wgsl-matmul-tiled,32x32x32,float32,/,
      );
      expect(gpu).toMatch(
        /^backplane_verbose,gpu,matmul,webgpu:wgsl-matmul-tiled,32x32x32,float32,[\d.]+ ms,/,
      );
      expect(gpu).toMatch(
        webgpuCapability()!.features.timestampQuery ? /timestamp-query$/ : /queue/,
      );
      console.log(`[backend-webgpu] ${gpu}`);
      a.dispose();
      c.dispose();
    } finally {
      setFlag("webgpu.verbose", before);
      setVerboseSink(prev);
    }
  });
});
