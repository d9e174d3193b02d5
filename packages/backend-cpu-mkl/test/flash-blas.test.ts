/**
 * The FlashAttention-2 tile kernels on a native GEMM: flash-cpu-blas (the BLAS's
 * cblas_sgemm) and flash-cpu-dnnl (oneDNN's matmul primitive) are held to the same cases.
 */
import {
  backends,
  explain,
  kernelPriority,
  memoryStats,
  ready,
  resetPeakMemory,
  SDPBackend,
  scaledDotProductAttention,
  sdpaKernel,
  type Tensor,
  tensor,
} from "@backplane/core";
import { getKernel } from "@backplane/core/backend";
import {
  boolMask,
  type OpCase,
  randomTensor as R,
  runCase,
  runConformance,
} from "@backplane/testkit";
import { describe, expect } from "vitest";
import { BOUNDED_ROWS } from "../src/dnnl/flash-bounded.ts";
import { dnnlSoftmaxStep, softmaxStepProblem } from "../src/dnnl/flash-softmax.ts";
import { DNNL_BACKEND, NATIVE_BACKEND, WASM_BACKEND } from "../src/index.ts";
import { f32, perm, poisoned, qkv } from "./attention-helpers.ts";
import { itDnnl } from "./dnnl-helpers.ts";
import { itNative } from "./native-helpers.ts";

const OP = "scaledDotProductAttention";
/** Worst error relative to the float64 reference's largest magnitude (the testkit's float32 default). */
const TOLERANCE = 2e-5;
/** Time limit of the reference-heavy tests (bun's default is 5 s; these machines are shared). */
const SLOW = 120_000;

/**
 * Shapes around the kernel's blocks (256 query rows, 2048 keys): one row and one key,
 * sizes that are not multiples of 4 or 8, several blocks with ragged last ones, causal
 * with L < S and L > S, GQA, broadcast and strided layouts, head dims 16 to 128.
 */
const CASES: OpCase[] = [
  { name: "L=S=1, E=16", make: (d, r) => qkv(d, r, [1, 1, 1, 16], [1, 1, 1, 16]) },
  { name: "L=S=7, 2 heads", make: (d, r) => qkv(d, r, [1, 2, 7, 16], [1, 2, 7, 16]) },
  {
    name: "E=13, Ev=5, S=601 (tails everywhere)",
    make: (d, r) => qkv(d, r, [1, 9, 13], [1, 601, 13], [1, 601, 5]),
  },
  {
    name: "L=257, S=1025 (ragged last blocks), E=64",
    make: (d, r) => qkv(d, r, [1, 1, 257, 64], [1, 1, 1025, 64]),
  },
  {
    name: "L=S=1000, causal, E=16",
    make: (d, r) => [...qkv(d, r, [1, 1000, 16], [1, 1000, 16]), { isCausal: true }],
  },
  {
    name: "S=2500: two key blocks, the last ragged (the running max and sum carried over)",
    make: (d, r) => qkv(d, r, [1, 2, 37, 24], [1, 2, 2500, 24]),
  },
  {
    name: "causal L=S=2200: two key blocks on the last query blocks, E=8",
    make: (d, r) => [...qkv(d, r, [1, 2200, 8], [1, 2200, 8]), { isCausal: true }],
  },
  {
    name: "causal L=700 > S=300",
    make: (d, r) => [...qkv(d, r, [1, 700, 32], [1, 300, 32]), { isCausal: true }],
  },
  {
    name: "causal L=300 < S=1100",
    make: (d, r) => [...qkv(d, r, [2, 300, 32], [2, 1100, 32]), { isCausal: true }],
  },
  {
    name: "GQA: 8 query heads over 2, causal",
    make: (d, r) => [
      ...qkv(d, r, [1, 8, 129, 32], [1, 2, 129, 32]),
      { enableGqa: true, isCausal: true },
    ],
  },
  {
    name: "broadcast batch: key/value [1, H, S, E] for query [3, H, L, E]",
    make: (d, r) => qkv(d, r, [3, 2, 10, 16], [1, 2, 50, 16]),
  },
  {
    name: "strided views: [B, L, H, d] permuted to [B, H, L, d]",
    make: (d, r) => [
      perm(R([2, 9, 3, 16], d, r), [0, 2, 1, 3]),
      perm(R([2, 70, 3, 16], d, r), [0, 2, 1, 3]),
      perm(R([2, 70, 3, 8], d, r), [0, 2, 1, 3]),
    ],
  },
  {
    name: "one query row of stride 1 (a permuted [E, 1] view), E=24",
    make: (d, r) => [
      perm(R([1, 24, 1], d, r), [0, 2, 1]),
      ...qkv(d, r, [1, 40, 24], [1, 40, 24]).slice(1),
    ],
  },
  {
    name: "scale 10 (sharp softmax)",
    make: (d, r) => [...qkv(d, r, [2, 8, 32], [2, 600, 32]), { scale: 10 }],
  },
  ...[16, 40, 64, 96, 128].map(
    (E): OpCase => ({
      name: `head dim ${E}, L=33, S=530`,
      make: (d, r) => qkv(d, r, [1, 2, 33, E], [1, 2, 530, E]),
    }),
  ),
];

/**
 * The tests both tile kernels pass: `gate` skips them where the library is missing.
 * `keyFloats`: floats per key the kernel keeps for the head it runs (flash-cpu-dnnl's
 * bounded path: each key with one more column, and its norm), 0 when nothing grows with S.
 */
function tileKernelTests(
  KERNEL: string,
  BACKEND: string,
  gate: typeof itNative,
  keyFloats = 0,
): void {
  const reasonOf = (q: Tensor, k: Tensor, v: Tensor, opts?: object) => {
    using _ = kernelPriority(OP, [KERNEL]);
    const e = explain(OP, q, k, v, opts);
    return e.selected === KERNEL
      ? "selected"
      : e.candidates.find((c) => c.kernel === KERNEL)!.reason;
  };
  const loaded = async () => {
    await ready(WASM_BACKEND);
    await ready(BACKEND);
  };

  gate(
    "matches the float64 reference (blocks, tails, causal, GQA, layouts, head dims)",
    async () => {
      await loaded();
      const results = await poisoned(async () => {
        const out = [];
        for (const c of CASES)
          out.push(
            await runCase(OP, c, "float32", {
              kernel: KERNEL,
              backend: BACKEND,
              tolerances: { float32: TOLERANCE },
              seed: 91,
            }),
          );
        return out;
      });
      const bad = results.filter((r) => r.status !== "pass" || r.kernel !== KERNEL);
      expect(
        bad.map((r) => `${r.case}: ${r.status} ${r.message ?? `${r.error} at ${r.where}`}`),
      ).toEqual([]);
      // Headroom: well-conditioned cases stay at a quarter of the tolerance. The scale-10
      // case multiplies the scores' float32 rounding by 10 before the exp (5.4e-6 on a
      // Zen 4, whose OpenBLAS kernel rounds the products differently): it is held to
      // the stated tolerance by runCase above, like every case.
      const wellConditioned = results.filter((r) => !r.case.startsWith("scale 10"));
      expect(Math.max(...wellConditioned.map((r) => r.error ?? 0))).toBeLessThan(TOLERANCE / 4);
    },
    SLOW,
  );

  gate(
    "passes the testkit's scaledDotProductAttention cases it takes (runConformance)",
    async () => {
      await loaded();
      const report = await runConformance(BACKEND, { ops: [OP], kernels: [KERNEL] });
      report.assertPassed();
      expect(report.results.some((r) => r.status === "pass" && r.kernel === KERNEL)).toBe(true);
    },
    SLOW,
  );

  gate(
    "takes empty queries, values and batches, and no keys (zeros), with no product made",
    async () => {
      await loaded();
      // [L, S, Ev]: oneDNN 2.6 ends the process (SIGFPE) making a product with an empty side.
      for (const [L, S, Ev] of [
        [0, 5, 16],
        [3, 0, 16],
        [3, 5, 0],
        [0, 0, 16],
      ]) {
        const q = f32([1, 2, L, 16], 30);
        const k = f32([1, 2, S, 16], 31);
        const v = f32([1, 2, S, Ev], 32);
        using _ = kernelPriority(OP, [KERNEL]);
        expect(explain(OP, q, k, v).selected, `L=${L} S=${S} Ev=${Ev}`).toBe(KERNEL);
        // NaN-filled allocations: the zeros must be written.
        const y = await poisoned(async () => scaledDotProductAttention(q, k, v));
        expect(y.shape).toEqual([1, 2, L, Ev]);
        expect([...(y.hostData() as Float32Array)]).toEqual(new Array(2 * L * Ev).fill(0));
      }
      const none = f32([0, 2, 7, 16], 33);
      using _ = kernelPriority(OP, [KERNEL]);
      expect(scaledDotProductAttention(none, none, none).shape).toEqual([0, 2, 7, 16]);
    },
  );

  gate("supports() refuses masks, dropout, float64 and strided rows, and says why", async () => {
    await loaded();
    const q = f32([1, 2, 5, 16], 6);
    expect(reasonOf(q, q, q, { attnMask: boolMask([5, 5], () => 0.7) })).toBe(
      `bool attn_mask: ${KERNEL} takes causal masking only (flash-cpu takes masks)`,
    );
    expect(reasonOf(q, q, q, { dropoutP: 0.1 })).toBe(
      `dropout_p > 0: ${KERNEL} has no dropout (flash-cpu has)`,
    );
    const d = q.astype("float64");
    expect(reasonOf(d, d, d)).toBe("dtype float64 not supported (supports float32)");
    // scale 0 times a NaN query is NaN: a BLAS skips the product when alpha is 0, so the
    // tiles scale the query block first and multiply by 1.
    const nan = f32([1, 2, 5, 16], 8);
    (nan.hostData() as Float32Array)[3] = Number.NaN;
    expect(reasonOf(nan, q, q, { scale: 0 })).toBe("selected");
    {
      using _ = kernelPriority(OP, [KERNEL]);
      const y = scaledDotProductAttention(nan, q, q, { scale: 0 }).hostData() as Float32Array;
      expect(Number.isNaN(y[0]) && Number.isFinite(y[5 * 16])).toBe(true); // head 0's row 0 only
    }
    const t = f32([1, 2, 16, 5], 7).transpose(-2, -1);
    expect(reasonOf(t, q, q)).toMatch(/^query's last dimension is strided \(stride 5/);
    {
      using _ = sdpaKernel([SDPBackend.MATH]);
      expect(reasonOf(q, q, q)).toBe("disabled by flag cuda.flashSdp = false");
    }
    {
      using _ = backends.cpu.flags({ preferredBlasLibrary: "wasm" });
      expect(reasonOf(q, q, q)).toBe('cpu.preferredBlasLibrary is "wasm"');
      expect(explain(OP, q, q, q).selected).toBe("flash-cpu");
    }
  });

  gate("needs no L x S scores: fixed blocks, and at most a copy of one head's keys", async () => {
    await loaded();
    const extra = (n: number) => {
      using _ = kernelPriority(OP, [KERNEL]);
      const q = f32([1, 1, n, 64], 9);
      const before = memoryStats("cpu").allocatedBytes;
      resetPeakMemory("cpu");
      const o = scaledDotProductAttention(q, q, q);
      const peak = memoryStats("cpu").peakBytes - before - o.numel * 4;
      o.dispose();
      q.dispose();
      return peak;
    };
    const small = extra(300);
    const large = extra(3000);
    // Each part of the workspace is rounded up to 64 bytes.
    expect(large - small).toBeGreaterThanOrEqual((3000 - 300) * keyFloats * 4 - 128);
    expect(large - small).toBeLessThanOrEqual((3000 - 300) * keyFloats * 4 + 128);
    expect(large).toBeGreaterThan(0); // the workspace is a tensor, so it is counted
    // flash-cpu-dnnl's block of P is 1024 x 512 floats: under an eighth of the 3000 x 3000.
    expect(large).toBeLessThan((3000 * 3000 * 4) / 8);
  });

  // Not across thread counts: a GEMM library splits a product differently for 2 threads,
  // so the last bits move (as they do for blas-gemm); flash-cpu is the invariant one.
  gate("gives the same bits run after run", async () => {
    await loaded();
    const q = f32([1, 4, 300, 32], 10);
    const k = f32([1, 4, 700, 32], 11);
    const run = () => {
      using _ = kernelPriority(OP, [KERNEL]);
      return scaledDotProductAttention(q, k, k, { isCausal: true }).toFloat64();
    };
    expect(Array.from(run())).toEqual(Array.from(run()));
  });
}

describe("flash-cpu-blas (fused attention, native BLAS tiles)", () => {
  itNative("is registered as FLASH_ATTENTION on cpu and ranks above flash-cpu", async () => {
    await ready(WASM_BACKEND);
    await ready(NATIVE_BACKEND);
    const k = getKernel(OP, "flash-cpu-blas")!;
    expect(k.backend).toBe(NATIVE_BACKEND);
    expect(k.family).toBe("FLASH_ATTENTION");
    expect(k.priority).toBeGreaterThan(getKernel(OP, "flash-cpu")!.priority);
    const q = f32([1, 2, 8, 16], 1);
    // The authors' order (calibration may put the faster kernel first on a given machine),
    // with oneDNN's tiles (priority 61) set aside.
    using _ = backends.cpu.flags({ calibrate: false });
    using _d = backends.mkldnn.flags({ enabled: false });
    expect(explain(OP, q, q, q).selected).toBe("flash-cpu-blas");
    // With a mask it steps aside, and flash-cpu serves.
    const mask = boolMask([8, 8], () => 0.3);
    expect(explain(OP, q, q, q, { attnMask: mask }).selected).toBe("flash-cpu");
  });
  tileKernelTests("flash-cpu-blas", NATIVE_BACKEND, itNative);
});

const loadedDnnl = async () => {
  await ready(WASM_BACKEND);
  await ready(DNNL_BACKEND);
};

/** Runs `c` on flash-cpu-dnnl (poisoned outputs) and expects it to pass on that kernel. */
async function passesOnDnnl(c: OpCase, seed: number): Promise<void> {
  const result = await poisoned(() =>
    runCase(OP, c, "float32", {
      kernel: "flash-cpu-dnnl",
      backend: DNNL_BACKEND,
      tolerances: { float32: TOLERANCE },
      seed,
    }),
  );
  expect(result.status, result.message).toBe("pass");
  expect(result.kernel).toBe("flash-cpu-dnnl");
}

describe("flash-cpu-dnnl (fused attention: oneDNN's bounded-shift products, exact tiles where needed)", () => {
  itDnnl(
    "is FLASH_ATTENTION on cpu under backends.mkldnn, set aside by mkldnn.enabled",
    async () => {
      await ready(WASM_BACKEND);
      await ready(DNNL_BACKEND);
      const k = getKernel(OP, "flash-cpu-dnnl")!;
      expect(k.backend).toBe(DNNL_BACKEND);
      expect(k.family).toBe("FLASH_ATTENTION");
      const q = f32([1, 2, 8, 16], 2);
      const reason = () => {
        using _ = kernelPriority(OP, ["flash-cpu-dnnl"]);
        const e = explain(OP, q, q, q);
        return e.selected === "flash-cpu-dnnl"
          ? "selected"
          : e.candidates.find((c) => c.kernel === "flash-cpu-dnnl")!.reason;
      };
      expect(reason()).toBe("selected");
      using _ = backends.mkldnn.flags({ enabled: false });
      expect(reason()).toBe("disabled by flag mkldnn.enabled = false");
    },
  );
  itDnnl(
    "runs its softmax step on oneDNN's JIT code, WASM for small or strided blocks",
    async () => {
      await ready(DNNL_BACKEND);
      // Full blocks, ragged ones, one row and one key: each a dense block oneDNN's JIT takes.
      for (const [rows, cols] of [
        [256, 2048],
        [37, 452],
        [7, 13],
        [1, 2],
      ])
        expect(softmaxStepProblem(rows, cols, cols), `${rows} x ${cols}`).toBeUndefined();
      // One key: oneDNN has no reduction over a single column; the WASM step takes it.
      expect(softmaxStepProblem(1, 1, 1)).toMatch(
        /^oneDNN refused the softmax step: dnnl_reduction_desc_init/,
      );
      // Below 1024 keys the three primitive calls cost more than the WASM step: it runs.
      const step = { s: 0, ld: 512, rows: 256, cols: 512, m: 0, l: 0, o: 0, ev: 64 };
      expect(dnnlSoftmaxStep({ ...step, causal: false, diag: 0, scratch: 0 })).toBe(false);
      // Strided rows would fall to oneDNN's reference code: the WASM step takes them.
      expect(softmaxStepProblem(256, 512, 2048)).toBe(
        "rows of stride 2048 for 512 columns: oneDNN's JIT code takes dense blocks",
      );
    },
  );
  itDnnl(
    "hands the query blocks its bound does not hold to the exact tiles",
    async () => {
      await loadedDnnl();
      // The first block's rows: a large query orthogonal to every key. Their scores are all
      // 0, while the bound |scale| |q| max |k| is about 200: exp(-200) underflows, so
      // without the exact tiles these rows would come out NaN. The 88 rows after: ordinary.
      const L = BOUNDED_ROWS + 88;
      const S = 300;
      const E = 16;
      const orthogonal: OpCase = {
        name: "large queries orthogonal to the keys in the first block",
        make: (d, r) => {
          const q = new Float64Array(L * E);
          const k = new Float64Array(S * E);
          const v = new Float64Array(S * E);
          const sample = () => (r() < 0.5 ? -1 : 1) * (0.1 + r());
          for (let i = 0; i < L; i++)
            for (let e = 0; e < E; e++)
              q[i * E + e] =
                i < BOUNDED_ROWS ? (e === 0 ? 300 * Math.sign(sample()) : 0) : sample();
          for (let j = 0; j < S; j++)
            for (let e = 0; e < E; e++) {
              k[j * E + e] = e === 0 ? 0 : sample();
              v[j * E + e] = sample();
            }
          const t = (x: Float64Array, rows: number) => tensor(x, { shape: [1, rows, E], dtype: d });
          return [t(q, L), t(k, S), t(v, S)];
        },
      };
      await passesOnDnnl(orthogonal, 5);
    },
    SLOW,
  );
  itDnnl(
    "drops the earlier key blocks' terms when a later block's maximum is far above theirs",
    async () => {
      await loadedDnnl();
      // Row 0 sees one key (3000, in the third block of 1024 keys, where oneDNN runs the
      // softmax step) scoring 120 and every other key under 3: the earlier blocks' factor
      // 2^(log2 e (3 - 120)) underflows to 0, and their terms must vanish from O. Row 1 is
      // orthogonal to that key, so the bound fails and the exact tiles take the block.
      const S = 4096;
      const E = 4;
      const spike: OpCase = {
        name: "one key far above the earlier blocks' maximum",
        make: (d, r) => {
          const q = new Float64Array(2 * E);
          q[0] = 12;
          q[E + 1] = 12;
          const k = Float64Array.from({ length: S * E }, () => r() - 0.5);
          k.fill(0, 3000 * E, 3001 * E);
          k[3000 * E] = 20;
          const v = Float64Array.from({ length: S * E }, () => 2 * r() - 1);
          const t = (x: Float64Array, rows: number) => tensor(x, { shape: [1, rows, E], dtype: d });
          return [t(q, 2), t(k, S), t(v, S), { scale: 0.5 }];
        },
      };
      await passesOnDnnl(spike, 7);
    },
    SLOW,
  );
  // Each key of the head: E + 1 floats extended, one for its norm (E = 64 in the test).
  tileKernelTests("flash-cpu-dnnl", DNNL_BACKEND, itDnnl, 64 + 2);
});
