import {
  backends,
  canUseFlashAttention,
  explain,
  fromFloat64,
  kernelPriority,
  memoryStats,
  ready,
  resetPeakMemory,
  SDPAParams,
  SDPBackend,
  scaledDotProductAttention,
  sdpaKernel,
  type Tensor,
  tensor,
} from "@backplane/core";
import { getKernel } from "@backplane/core/backend";
import {
  chunkArgs,
  chunksOf,
  type ParallelService,
  type ParallelTask,
  parallelService,
  setParallelService,
  wasmModules,
} from "@backplane/core/cpu";
import {
  boolMask,
  type OpCase,
  randomTensor as R,
  type Rng,
  runCase,
  runConformance,
} from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { WASM_BACKEND } from "../src/index.ts";
import { f32, perm, poisoned, qkv } from "./attention-helpers.ts";

const OP = "scaledDotProductAttention";
/** Worst error relative to the float64 reference's largest magnitude (the testkit's float32 default). */
const TOLERANCE = 2e-5;

/** An additive mask with some -inf entries (never a whole row). */
function additiveWithInf(shape: number[], r: Rng): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const last = shape[shape.length - 1];
  const x = new Float64Array(n);
  for (let i = 0; i < n; i++)
    x[i] = r() < 0.2 && i % last !== 0 ? Number.NEGATIVE_INFINITY : r() * 4 - 2;
  return fromFloat64(x, shape, "float32");
}

/** Masks, causal, GQA, layouts, scales: short sequences (1 to 150). */
const SHORT: OpCase[] = [
  { name: "L=S=1, E=16", make: (d, r) => qkv(d, r, [1, 1, 1, 16], [1, 1, 1, 16]) },
  { name: "L=S=7, 2 heads, E=16", make: (d, r) => qkv(d, r, [1, 2, 7, 16], [1, 2, 7, 16]) },
  {
    name: "L=S=129, causal, E=32",
    make: (d, r) => [...qkv(d, r, [2, 129, 32], [2, 129, 32]), { isCausal: true }],
  },
  {
    name: "L=7, S=129, E=128, bool mask [L, S]",
    make: (d, r) => [
      ...qkv(d, r, [1, 2, 7, 128], [1, 2, 129, 128]),
      { attnMask: boolMask([7, 129], r) },
    ],
  },
  { name: "E=64, Ev=40", make: (d, r) => qkv(d, r, [2, 17, 64], [2, 65, 64], [2, 65, 40]) },
  {
    name: "E=13, Ev=5 (no multiple of 4)",
    make: (d, r) => qkv(d, r, [1, 9, 13], [1, 66, 13], [1, 66, 5]),
  },
  {
    name: "GQA: 8 query heads over 2 kv heads, causal",
    make: (d, r) => [
      ...qkv(d, r, [2, 8, 37, 32], [2, 2, 37, 32]),
      { enableGqa: true, isCausal: true },
    ],
  },
  {
    name: "GQA: 4 query heads over 1 (multi-query), bool mask",
    make: (d, r) => [
      ...qkv(d, r, [1, 4, 20, 16], [1, 1, 75, 16]),
      { enableGqa: true, attnMask: boolMask([20, 75], r) },
    ],
  },
  {
    name: "causal L > S",
    make: (d, r) => [...qkv(d, r, [1, 70, 16], [1, 33, 16]), { isCausal: true }],
  },
  {
    name: "causal L < S",
    make: (d, r) => [...qkv(d, r, [1, 33, 16], [1, 150, 16]), { isCausal: true }],
  },
  {
    name: "per-head additive mask [B, H, L, S] with -inf entries",
    make: (d, r) => [
      ...qkv(d, r, [2, 3, 11, 16], [2, 3, 67, 16]),
      { attnMask: additiveWithInf([2, 3, 11, 67], r) },
    ],
  },
  {
    name: "additive mask of finfo.min entries, one row all finfo.min (uniform, as the reference)",
    make: (d, r) => {
      const x = new Float64Array(5 * 40).map((_, i) =>
        r() < 0.3 || (i >= 80 && i < 120) ? -3.4028234663852886e38 : 0,
      );
      return [
        ...qkv(d, r, [2, 5, 16], [2, 40, 16]),
        { attnMask: fromFloat64(x, [5, 40], "float32") },
      ];
    },
  },
  {
    name: "additive mask broadcast over keys [L, 1]",
    make: (d, r) => [...qkv(d, r, [2, 9, 16], [2, 40, 16]), { attnMask: R([9, 1], d, r) }],
  },
  {
    name: "bool mask [1, 1, L, S] with a fully masked row (0, as the reference and PyTorch 2.13)",
    make: (d, r) => {
      const m = new Uint8Array(6 * 70).map(() => (r() < 0.5 ? 1 : 0));
      m.fill(0, 2 * 70, 3 * 70);
      m[0] = 1;
      return [
        ...qkv(d, r, [1, 2, 6, 16], [1, 2, 70, 16]),
        { attnMask: tensor(m, { shape: [1, 1, 6, 70], dtype: "bool" }) },
      ];
    },
  },
  {
    name: "scale 10 (sharp softmax)",
    make: (d, r) => [...qkv(d, r, [2, 8, 32], [2, 90, 32]), { scale: 10 }],
  },
  { name: "scale -0.3", make: (d, r) => [...qkv(d, r, [2, 8, 32], [2, 90, 32]), { scale: -0.3 }] },
  {
    name: "strided views: [B, L, H, d] permuted to [B, H, L, d]",
    make: (d, r) => [
      perm(R([2, 9, 3, 16], d, r), [0, 2, 1, 3]),
      perm(R([2, 70, 3, 16], d, r), [0, 2, 1, 3]),
      perm(R([2, 70, 3, 8], d, r), [0, 2, 1, 3]),
    ],
  },
  {
    name: "broadcast batch: key/value [1, H, S, E] for query [3, H, L, E]",
    make: (d, r) => qkv(d, r, [3, 2, 10, 16], [1, 2, 50, 16]),
  },
];

/** Head dims 16 to 128. */
const DIMS: OpCase[] = [
  ...[16, 24, 40, 48, 64, 80, 96, 112, 128].map(
    (E): OpCase => ({
      name: `head dim ${E}, L=33, S=70`,
      make: (d, r) => qkv(d, r, [1, 2, 33, E], [1, 2, 70, E]),
    }),
  ),
];

/** Sequence lengths of 1000 (few heads: the float64 reference is plain TypeScript). */
const LONG: OpCase[] = [
  { name: "L=129, S=1000, E=64", make: (d, r) => qkv(d, r, [1, 1, 129, 64], [1, 1, 1000, 64]) },
  {
    name: "L=S=1000, causal, E=16, one head",
    make: (d, r) => [...qkv(d, r, [1, 1000, 16], [1, 1000, 16]), { isCausal: true }],
  },
  {
    name: "L=1000, S=7, additive mask, E=24",
    make: (d, r) => [...qkv(d, r, [1000, 24], [7, 24]), { attnMask: R([1000, 7], d, r, 3) }],
  },
];

const reasonOf = (q: Tensor, k: Tensor, v: Tensor, opts?: object) => {
  using _ = kernelPriority(OP, ["flash-cpu"]);
  const e = explain(OP, q, k, v, opts);
  return e.selected === "flash-cpu"
    ? "selected"
    : e.candidates.find((c) => c.kernel === "flash-cpu")!.reason;
};

/** Runs the cases on flash-cpu (forced) against the float64 reference; every one must pass. */
async function conformance(cases: OpCase[]): Promise<void> {
  await ready(WASM_BACKEND);
  const results = await poisoned(async () => {
    const out = [];
    for (const c of cases)
      out.push(
        await runCase(OP, c, "float32", {
          kernel: "flash-cpu",
          backend: WASM_BACKEND,
          tolerances: { float32: TOLERANCE },
          seed: 77,
        }),
      );
    return out;
  });
  const bad = results.filter((r) => r.status !== "pass" || r.kernel !== "flash-cpu");
  expect(
    bad.map((r) => `${r.case}: ${r.status} ${r.message ?? `${r.error} at ${r.where}`}`),
  ).toEqual([]);
  // The measured worst error is far inside the tolerance (typically below 1e-6).
  expect(Math.max(...results.map((r) => r.error ?? 0))).toBeLessThan(TOLERANCE / 4);
}

/** Time limit of the reference-heavy tests (bun's default is 5 s; these machines are shared). */
const SLOW = 120_000;

/** The largest |got - want| over the largest |want|. */
function relErr(got: Float64Array, want: Float64Array): number {
  let scale = 0;
  let err = 0;
  for (let i = 0; i < want.length; i++) {
    scale = Math.max(scale, Math.abs(want[i]));
    err = Math.max(err, Math.abs(got[i] - want[i]));
  }
  return err / scale;
}

describe("flash-cpu (fused attention, WASM SIMD)", () => {
  it("is registered as FLASH_ATTENTION on cpu, above the math kernel", async () => {
    await ready(WASM_BACKEND);
    const k = getKernel(OP, "flash-cpu")!;
    expect(k.backend).toBe(WASM_BACKEND);
    expect(k.family).toBe("FLASH_ATTENTION");
    expect(k.device).toBe("cpu");
    expect(k.flags).toEqual(["cuda.flashSdp"]);
    expect(k.priority).toBeGreaterThan(getKernel(OP, "math")!.priority);
    expect(wasmModules().some((m) => m.id === "backend-cpu-mkl/attention")).toBe(true);
    const q = f32([1, 2, 8, 16], 1);
    // Without the native BLAS (flash-cpu-blas ranks first where one is loaded).
    using _ = backends.cpu.flags({ preferredBlasLibrary: "wasm" });
    const e = explain(OP, q, q, q);
    expect(e.selected).toBe("flash-cpu");
    expect(canUseFlashAttention(new SDPAParams(q, q, q))).toBe(true);
  });

  for (const [what, cases] of [
    ["masks, causal, GQA, strided and broadcast layouts, scales; L and S from 1 to 150", SHORT],
    ["head dims 16 to 128", DIMS],
    ["sequence lengths of 1000", LONG],
  ] as const) {
    it(`matches the float64 reference: ${what}`, () => conformance(cases), SLOW);
  }

  it("passes the testkit's scaledDotProductAttention cases (runConformance)", async () => {
    await ready(WASM_BACKEND);
    const report = await runConformance(WASM_BACKEND, {
      ops: [OP],
      kernels: ["flash-cpu"],
    });
    report.assertPassed();
    const passed = report.results.filter((r) => r.status === "pass" && r.kernel === "flash-cpu");
    expect(passed.filter((r) => !r.case.endsWith(" view)")).length).toBe(12);
    // The views the fused kernel reads in place (it refuses a strided last dim, with the reason).
    expect(passed.filter((r) => r.case.endsWith(" view)")).length).toBeGreaterThanOrEqual(2);
  });

  it("reproduces the reference's seeded dropout", async () => {
    await ready(WASM_BACKEND);
    const q = f32([2, 2, 9, 16], 3);
    const k = f32([2, 2, 40, 16], 4);
    const v = f32([2, 2, 40, 8], 5);
    const opts = { dropoutP: 0.3, seed: 12345 };
    expect(reasonOf(q, k, v, opts)).toBe("selected");
    const fused = scaledDotProductAttention(q, k, v, opts).toFloat64();
    let ref: Float64Array;
    {
      using _ = sdpaKernel([SDPBackend.MATH]);
      ref = scaledDotProductAttention(q, k, v, opts).toFloat64();
    }
    expect(relErr(fused, ref)).toBeLessThan(TOLERANCE);
    // Another seed draws another mask.
    const other = scaledDotProductAttention(q, k, v, { dropoutP: 0.3, seed: 1 }).toFloat64();
    expect(other.some((x, i) => Math.abs(x - fused[i]) > 1e-3)).toBe(true);
  });

  it("every bit of a seed counts: seeds 2^32 apart draw other masks, the same on both kernels", async () => {
    await ready(WASM_BACKEND);
    const q = f32([1, 2, 9, 16], 13);
    const k = f32([1, 2, 40, 16], 14);
    const v = f32([1, 2, 40, 8], 15);
    const run = (seed: number, math: boolean) => {
      using _ = math ? sdpaKernel([SDPBackend.MATH]) : undefined;
      return scaledDotProductAttention(q, k, v, { dropoutP: 0.3, seed }).toFloat64();
    };
    const draws = [12345, 12345 + 2 ** 32, 2 ** 53, 2 ** 60, 0].map((seed) => run(seed, false));
    for (let a = 0; a < draws.length; a++)
      for (let b = a + 1; b < draws.length; b++)
        expect(
          draws[a].some((x, i) => Math.abs(x - draws[b][i]) > 1e-3),
          `seeds #${a} and #${b}`,
        ).toBe(true);
    // The fused kernel and the math path still draw the same mask for a large seed.
    const fused = run(2 ** 40 + 3, false);
    const ref = run(2 ** 40 + 3, true);
    expect(relErr(fused, ref)).toBeLessThan(TOLERANCE);
  });

  it("reproduces the reference's dropout after a fully masked row (draws fixed per element)", async () => {
    await ready(WASM_BACKEND);
    const q = f32([2, 2, 6, 16], 6);
    const k = f32([2, 2, 70, 16], 7);
    const v = f32([2, 2, 70, 8], 8);
    const m = new Uint8Array(6 * 70).map((_, i) => ((i * 7) % 5 !== 0 ? 1 : 0));
    m.fill(0, 70, 140); // query row 1 sees no key
    const opts = {
      dropoutP: 0.3,
      seed: 4321,
      attnMask: tensor(m, { shape: [6, 70], dtype: "bool" }),
    };
    expect(reasonOf(q, k, v, opts)).toBe("selected");
    const fused = scaledDotProductAttention(q, k, v, opts).toFloat64();
    let ref: Float64Array;
    {
      using _ = sdpaKernel([SDPBackend.MATH]);
      ref = scaledDotProductAttention(q, k, v, opts).toFloat64();
    }
    // float32 against the float64 reference, relative to its largest magnitude.
    const scale = ref.reduce((a, x) => Math.max(a, Math.abs(x)), 0);
    const err = ref.reduce((a, x, i) => Math.max(a, Math.abs(fused[i] - x)), 0);
    expect(err / scale).toBeLessThan(TOLERANCE);
  });

  it("supports() refuses what it cannot do, and says why", async () => {
    await ready(WASM_BACKEND);
    const q = f32([1, 2, 5, 16], 6);
    // float64: the dtype
    const d = q.astype("float64");
    expect(reasonOf(d, d, d)).toBe("dtype float64 not supported (supports float32)");
    expect(explain(OP, d, d, d).selected).toBe("math");
    // a transposed last dimension
    const t = f32([1, 2, 16, 5], 7).transpose(-2, -1);
    expect(reasonOf(t, q, q)).toMatch(/^query's last dimension is strided \(stride 5/);
    // head dim > 256
    const big = f32([1, 3, 300], 8);
    expect(reasonOf(big, big, big)).toBe("head dim 300 > 256: flash-cpu's tiles hold at most 256");
    // flags
    {
      using _ = sdpaKernel([SDPBackend.MATH]);
      expect(reasonOf(q, q, q)).toBe("disabled by flag cuda.flashSdp = false");
      expect(explain(OP, q, q, q).selected).toBe("math");
    }
    {
      // oneDNN's switch: the WASM kernel is not oneDNN.
      using _ = backends.mkldnn.flags({ enabled: false });
      expect(reasonOf(q, q, q)).not.toMatch(/mkldnn/);
    }
  });

  it("needs memory linear in the sequence length: no L x S scores", async () => {
    await ready(WASM_BACKEND);
    const extra = (n: number) => {
      using _ = kernelPriority(OP, ["flash-cpu"]);
      const q = f32([1, 1, n, 64], 9);
      const before = memoryStats("cpu").allocatedBytes;
      resetPeakMemory("cpu");
      const o = scaledDotProductAttention(q, q, q);
      const peak = memoryStats("cpu").peakBytes - before - o.numel * 4;
      o.dispose();
      q.dispose();
      return peak;
    };
    const small = extra(256);
    const large = extra(2048);
    expect(large).toBe(small); // one workspace per thread, whatever L and S
    expect(large).toBeLessThan((2048 * 2048 * 4) / 64);
    expect(large).toBeGreaterThan(0); // the workspace is counted (it is a tensor)
  });

  it("splits work over threads without changing a bit (simulated pool, chunks out of order)", async () => {
    await ready(WASM_BACKEND);
    const q = f32([2, 3, 70, 32], 10);
    const k = f32([2, 3, 90, 32], 11);
    const v = f32([2, 3, 90, 32], 12);
    using _flash = kernelPriority(OP, ["flash-cpu"]);
    const one = (() => {
      using _ = backends.openmp.numThreadsScope(1);
      return scaledDotProductAttention(q, k, v, { isCausal: true }).toFloat64();
    })();
    const seen: number[] = [];
    const fake: ParallelService = {
      threads: () => 3,
      run(task: ParallelTask, threads: number) {
        const fn = wasmModules().find((m) => m.id === task.module)!.instance.exports[task.fn] as (
          ...a: number[]
        ) => void;
        const chunks = chunksOf(task, threads).reverse();
        chunks.forEach(([i0, n], c) => {
          seen.push(c % threads);
          fn(...chunkArgs(task, i0, n, c % threads));
        });
      },
    };
    const prev = parallelService();
    setParallelService(fake);
    try {
      using _ = backends.openmp.numThreadsScope(3);
      const three = scaledDotProductAttention(q, k, v, { isCausal: true }).toFloat64();
      expect(Array.from(three)).toEqual(Array.from(one));
    } finally {
      setParallelService(prev);
    }
    expect(new Set(seen).size).toBe(3);
  });
});
