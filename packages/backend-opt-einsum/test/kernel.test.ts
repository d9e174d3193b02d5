import { backends, type DType, einsum, explain, randn, type Tensor, tensor } from "@backplane/core";
import { getKernel, ops } from "@backplane/core/backend";
import { runConformance } from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { EXPRESSIONS } from "../src/expressions.ts";
import { OPT_EINSUM_BACKEND, optEinsum, randomEquation } from "../src/index.ts";

const reference = getKernel("einsum", "reference")!;

/** Worst |ours - reference| / max |reference| of einsum(equation, ...operands). */
function compare(equation: string, operands: Tensor[]): { error: number; shape: string } {
  const ours = einsum(equation, ...operands);
  const ref = reference.run(ops.einsum.prepare(equation, ...operands)) as Tensor;
  try {
    expect(ours.shape).toEqual(ref.shape);
    const a = ours.toFloat64();
    const b = ref.toFloat64();
    let scale = 0;
    for (const x of b) scale = Math.max(scale, Math.abs(x));
    let error = 0;
    for (let i = 0; i < b.length; i++) error = Math.max(error, Math.abs(a[i] - b[i]));
    return { error: error / (scale || 1), shape: ours.shape.join("x") };
  } finally {
    ours.dispose();
    ref.dispose();
  }
}

function operandsFor(shapes: number[][], dtype: DType, seed: number): Tensor[] {
  return shapes.map((s, i) => randn(s, { dtype, seed: seed * 31 + i }));
}

describe("the opt-einsum kernel", () => {
  it("passes the testkit conformance suite", async () => {
    const report = await runConformance(OPT_EINSUM_BACKEND);
    report.assertPassed();
    expect(report.passed).toBeGreaterThanOrEqual(44);
  });

  it("is selected for einsum, and refused when optEinsum.enabled is false", () => {
    const a = randn([3, 4], { seed: 1 });
    const b = randn([4, 5], { seed: 2 });
    expect(explain("einsum", "ij,jk->ik", a, b).selected).toBe("opt-einsum");
    // With the plugin registered, enabled reads true (torch: true when opt_einsum is available).
    expect(backends.optEinsum.isAvailable()).toBe(true);
    expect(backends.optEinsum.enabled).toBe(true);
    expect(backends.describe("optEinsum.enabled").inert).toBe(false);
    using _ = backends.optEinsum.flags({ enabled: false });
    expect(backends.optEinsum.enabled).toBe(false);
    const e = explain("einsum", "ij,jk->ik", a, b);
    expect(e.selected).toBe("reference");
    expect(e.candidates.find((c) => c.kernel === "opt-einsum")!.reason).toBe(
      "disabled by flag optEinsum.enabled = false",
    );
  });

  it("matches the reference on tensor networks of 3 to 8 operands", () => {
    const cases = [
      "ab,bc,cd->ad",
      "ab,bc,cd,de->ae",
      "ea,fb,abcd,gc,hd->efgh",
      "abc,cd,de,ea,bf->f",
      "ij,jk,kl,lm,mn,ni->",
      "abc,bd,ce,def,fg,gh->ah",
      "ab,bc,cd,de,ef,fg,gh,ha->",
      "ai,bi,ci,di,ei,fi,gi,hi->abcdefgh",
    ];
    for (const [k, equation] of cases.entries()) {
      const labels = [...new Set(equation.replace(/[,\->]/g, ""))];
      const size: Record<string, number> = {};
      labels.forEach((l, i) => {
        size[l] = 2 + ((i * 7 + k) % 4);
      });
      const shapes = equation
        .split("->")[0]
        .split(",")
        .map((t) => [...t].map((l) => size[l]));
      for (const dtype of ["float64", "float32"] as const) {
        const { error } = compare(equation, operandsFor(shapes, dtype, k));
        expect(error, `${equation} ${dtype}`).toBeLessThan(dtype === "float64" ? 1e-12 : 2e-5);
      }
    }
    // Random networks, paths from several strategies.
    for (let seed = 0; seed < 4; seed++) {
      const e = randomEquation(4 + seed, 3, { seed, dMin: 2, dMax: 4, nOut: 2 });
      for (const strategy of ["greedy", "dp", "branch-2"] as const) {
        using _ = backends.optEinsum.flags({ strategy });
        const { error } = compare(e.equation, operandsFor(e.shapes, "float64", seed));
        expect(error, `${e.equation} ${strategy}`).toBeLessThan(1e-12);
      }
    }
  });

  it("handles ellipsis, traces, diagonals, broadcasting and size-1 dimensions", () => {
    const cases: [string, number[][]][] = [
      [
        "...ij,...jk,...kl->...il",
        [
          [2, 3, 4],
          [1, 4, 5],
          [2, 5, 2],
        ],
      ],
      ["...ij,...jk,k->...i", [[2, 1, 3, 3], [4, 3, 3], [3]]],
      [
        "a...b,b...c->...ac",
        [
          [2, 3, 4],
          [4, 3, 5],
        ],
      ],
      [
        "iij,jkk,kl->il",
        [
          [3, 3, 4],
          [4, 2, 2],
          [2, 5],
        ],
      ],
      [
        "ii,jj,ij->ij",
        [
          [4, 4],
          [3, 3],
          [4, 3],
        ],
      ],
      ["iii->i", [[3, 3, 3]]],
      [
        "ij,jk,ik->ik",
        [
          [5, 1],
          [1, 4],
          [5, 4],
        ],
      ],
      [
        "ab,bc,cd->abcd",
        [
          [1, 3],
          [3, 1],
          [1, 1],
        ],
      ],
      ["i,j,k->ijk", [[3], [1], [2]]],
      [",ij,j->i", [[], [3, 4], [4]]],
      ["ijk->", [[2, 3, 4]]],
      ["ijk->kji", [[2, 3, 4]]],
      [
        "ij,ij,ij->",
        [
          [3, 4],
          [3, 4],
          [3, 4],
        ],
      ],
      [
        "bij,bjk,bkl->bil",
        [
          [2, 3, 4],
          [2, 4, 5],
          [2, 5, 3],
        ],
      ],
      [
        "ab,cd,ef->",
        [
          [2, 3],
          [3, 2],
          [2, 2],
        ],
      ],
      [
        "ab,bc->a",
        [
          [3, 0],
          [0, 2],
        ],
      ],
    ];
    for (const [equation, shapes] of cases) {
      for (const dtype of ["float64", "float32"] as const) {
        const { error } = compare(equation, operandsFor(shapes, dtype, 5));
        expect(error, `${equation} ${dtype}`).toBeLessThan(dtype === "float64" ? 1e-12 : 2e-5);
      }
    }
    // Strided (transposed) inputs.
    const a = randn([5, 4], { seed: 9 }).transpose(0, 1);
    const b = randn([6, 5], { seed: 10 }).transpose(0, 1);
    expect(compare("ij,jk,k->i", [a, b, randn([6], { seed: 11 })]).error).toBeLessThan(2e-5);
  });

  it("matches the reference on the bench expressions small enough to loop over", () => {
    for (const e of EXPRESSIONS) {
      const info = optEinsum.contractPath(e.equation, ...e.shapes, { strategy: "greedy" });
      if (info.naiveCost > 3e5) continue;
      const { error } = compare(e.equation, operandsFor(e.shapes, "float64", 3));
      expect(error, e.name).toBeLessThan(1e-12);
    }
  });

  it("returns fresh memory and caches paths per equation, shapes and strategy", () => {
    const x = tensor([
      [1, 2],
      [3, 4],
    ]);
    const y = einsum("ij->ij", x);
    expect(y.storage).not.toBe(x.storage);
    expect(y.toArray()).toEqual([
      [1, 2],
      [3, 4],
    ]);
    optEinsum.clearPathCache();
    const a = randn([3, 4], { seed: 1 });
    const b = randn([4, 5], { seed: 2 });
    const c = randn([5, 6], { seed: 3 });
    einsum("ij,jk,kl->il", a, b, c).dispose();
    einsum("ij,jk,kl->il", a, b, c).dispose();
    const info = optEinsum.pathCacheInfo();
    expect(info.misses).toBe(1);
    expect(info.hits).toBe(1);
    using _ = backends.optEinsum.flags({ strategy: "greedy" });
    einsum("ij,jk,kl->il", a, b, c).dispose();
    expect(optEinsum.pathCacheInfo().misses).toBe(2);
  });
  it("keeps an ellipsis of 32 or more dimensions (torch's shapes), in contractPath too", () => {
    // "..." labels were control characters; from the 32nd on (" ", "!"...) they counted as
    // named indices: "..." on a 40-D tensor was a ShapeError here, a 49-D result in the reference.
    const shape = Array.from({ length: 40 }, (_, d) => (d === 0 ? 2 : d === 39 ? 3 : 1));
    const t = randn(shape, { seed: 40, dtype: "float64" });
    const w = randn([3], { seed: 41, dtype: "float64" });
    expect(explain("einsum", "...", t).selected).toBe("opt-einsum");
    for (const [eq, operands, want] of [
      ["...", [t], shape],
      ["...i,i", [t, w], shape.slice(0, -1)],
      ["i...,...->...", [t, t], shape], // 39 dims broadcast against 40
    ] as [string, Tensor[], number[]][]) {
      const { error, shape: got } = compare(eq, operands);
      expect(got, eq).toBe(want.join("x"));
      expect(error, eq).toBeLessThan(1e-12);
    }
    // Display names of the ellipsis dims are letters the equation does not use.
    const info = optEinsum.contractPath("...i,i", t, w);
    expect(info.equation).toMatch(/^[a-zA-Z]+,i->[a-zA-Z]+$/);
    t.dispose();
    w.dispose();
  });
});
