/**
 * wasm-svd, wasm-luFactor and wasm-cholesky on rank-deficient matrices, against torch 2.13
 * (MKL) and the float64 reference:
 * - svd raised "did not converge": one-sided Jacobi rotated a column of rounding noise
 *   against one ~1/eps larger, sweep after sweep; it now drops such columns as the reference.
 * - luFactor divided L's column by the pivot where getf2 multiplies by its reciprocal; the
 *   rounding decides whether a singular A meets an exactly zero pivot (raises) or not.
 * - cholesky summed in an order of its own; it now follows potf2 (lower and upper), whose
 *   rounding decides whether a singular semidefinite A raises.
 * Expected raise decisions were computed with torch.linalg.lu_factor_ex / cholesky_ex.
 */
import {
  cholesky,
  kernelPriority,
  LinalgError,
  luFactor,
  ready,
  svd,
  type Tensor,
  tensor,
} from "@backplane/core";
import { beforeAll, describe, expect, it } from "vitest";
import "../src/index.ts";

beforeAll(async () => {
  await ready();
});

function raises(fn: () => unknown): boolean {
  try {
    fn();
  } catch (e) {
    if (e instanceof LinalgError) return true;
    throw e;
  }
  return false;
}

/** A seeded stream of integers in [-lim, lim]. */
function intStream(seed: number): (lim: number) => number {
  let s = seed >>> 0;
  return (lim) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s % (2 * lim + 1)) - lim;
  };
}

/** m x r times r x n with small integer entries: rank at most r. */
function lowRank(next: (lim: number) => number, m: number, n: number, r: number): number[][] {
  const b = Array.from({ length: m }, () => Array.from({ length: r }, () => next(4)));
  const c = Array.from({ length: r }, () => Array.from({ length: n }, () => next(4)));
  return b.map((row) => c[0].map((_, j) => row.reduce((s, x, k) => s + x * c[k][j], 0)));
}

function svdFailures(a: number[][], full: boolean, expectedS?: number[]): string[] {
  const m = a.length;
  const n = a[0].length;
  const { U, S, Vh } = svd(tensor(a, { dtype: "float64" }), { fullMatrices: full });
  let ref: Tensor;
  {
    using _ = kernelPriority("svd", ["reference"]);
    ref = svd(tensor(a, { dtype: "float64" })).S;
  }
  const s = S.toFloat64();
  const want = expectedS ?? Array.from(ref.toFloat64());
  const u = U.toFloat64();
  const vh = Vh.toFloat64();
  const top = Math.max(want[0], 1e-300);
  const bad: string[] = [];
  s.forEach((x, i) => {
    if (Math.abs(x - want[i]) > 1e-13 * top) bad.push(`S[${i}] = ${x}, want ${want[i]}`);
  });
  const uc = U.shape[1];
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let x = 0;
      for (let t = 0; t < s.length; t++) x += u[i * uc + t] * s[t] * vh[t * n + j];
      if (Math.abs(x - a[i][j]) > 1e-13 * top)
        bad.push(`(U S Vh)[${i},${j}] = ${x}, want ${a[i][j]}`);
    }
  const orthonormal = (
    x: Float64Array,
    rows: number,
    cols: number,
    byColumns: boolean,
    name: string,
  ) => {
    const count = byColumns ? cols : rows;
    const len = byColumns ? rows : cols;
    const at = (v: number, i: number) => (byColumns ? x[i * cols + v] : x[v * cols + i]);
    for (let p = 0; p < count; p++)
      for (let q = 0; q < count; q++) {
        let d = 0;
        for (let i = 0; i < len; i++) d += at(p, i) * at(q, i);
        if (Math.abs(d - (p === q ? 1 : 0)) > 1e-13)
          bad.push(`${name} vectors ${p}, ${q}: dot ${d}`);
      }
  };
  orthonormal(u, m, uc, true, "U");
  orthonormal(vh, Vh.shape[0], n, false, "Vh");
  return bad;
}

describe("wasm-svd on rank-deficient matrices", () => {
  it("converges on [[3,-3,6],[1,0,7],[-3,3,-6]] with torch's S and orthonormal U, V", () => {
    using _ = kernelPriority("svd", ["wasm-svd"]);
    const a = [
      [3, -3, 6],
      [1, 0, 7],
      [-3, 3, -6],
    ];
    const torchS = [12.203920875670383, 3.0107001279397703, 6.772140724344129e-16];
    for (const full of [false, true]) expect(svdFailures(a, full, torchS)).toEqual([]);
  });

  it("converges on 300 random low-rank and rank-1 integer matrices, as the reference", () => {
    using _ = kernelPriority("svd", ["wasm-svd"]);
    const next = intStream(12345);
    const failed: string[] = [];
    for (let t = 0; t < 300; t++) {
      const m = 2 + ((next(100) + 100) % 7);
      const n = 2 + ((next(100) + 100) % 7);
      const r = 1 + ((next(100) + 100) % (Math.min(m, n) - 1 || 1));
      const a = lowRank(next, m, n, r);
      for (const full of [false, true]) {
        if (raises(() => svd(tensor(a, { dtype: "float64" }), { fullMatrices: full }))) {
          failed.push(`${JSON.stringify(a)} raised`);
          continue;
        }
        const bad = svdFailures(a, full);
        if (bad.length) failed.push(`${JSON.stringify(a)}: ${bad.slice(0, 3).join("; ")}`);
      }
    }
    expect(failed.slice(0, 5)).toEqual([]);
  });
});

/** Singular matrices (and near-singular ones) whose raise decision depends on how L's column is scaled; torch 2.13's lu_factor_ex info > 0. */
const LU_CASES: { a: number[][]; raises: boolean }[] = [
  {
    a: [
      [12, 12, -18, -1],
      [-8, 8, 4, -6],
      [-2, -4, 4, 1],
      [-14, -4, 16, -3],
    ],
    raises: false,
  },
  {
    a: [
      [2.5, -2.5, -0.5, -3.5],
      [-1.8333333333333333, 1.8333333333333333, 1.8333333333333333, 1.5],
      [-2.5, 2.5, 2.3333333333333335, 2.1666666666666665],
      [-1.5, 1.5, 2.5, 0.5],
    ],
    raises: false,
  },
  {
    a: [
      [1, 0, -1.5, 3.5, 1],
      [1, 0.25, -1.75, 4.75, 0.75],
      [1.5, -1.25, -1, -1, 2.75],
      [0.5, 0.25, -1, 3, 0.25],
      [2.5, -1, -2.75, 3.75, 3.5],
    ],
    raises: false,
  },
  {
    a: [
      [0.5, -1.5, -0.5, -0.5, 0.5, 0.5],
      [0.5, -0.5, -0.5, -0.5, 0.5, -0.5],
      [-1.5, 0.5, -0.5, 0.5, 0.5, 0.5],
      [0.5, 0.5, -0.5, -0.5, -1.5, -1.5],
      [-1.5, 0.5, -0.5, 0.5, -0.5, 0.5],
      [0.5, -0.5, 0.5, 0, 1.5, 0.5],
    ],
    raises: true,
  },
  {
    a: [
      [11, 24, 9, 5, -3, 5],
      [2, -6, 9, 2, -15, -4],
      [4, 29, -4, 11, -11, -3],
      [-8, 27, 19, 22, 3, -5],
      [-26, -14, 0, 6, 32, -4],
      [-14, 1, 7, 13, 0, -9],
    ],
    raises: false,
  },
  {
    a: [
      [4, -12, -5, 3, 8, -1],
      [-3, -4, 6, 7, 2, 10],
      [-10, 8, 13, 1, -4, 8],
      [-4, 6, 5, 1, -4, 4],
      [-17, 19, 13, -3, -8, 1],
      [7, -12, -6, 5, 6, 2],
    ],
    raises: false,
  },
];

describe("wasm-luFactor scales L's column as getf2 does", () => {
  for (const kernel of ["wasm-luFactor", "reference"]) {
    it(`${kernel} raises on these singular matrices exactly where torch does`, () => {
      using _ = kernelPriority("luFactor", [kernel]);
      const got = LU_CASES.map((c) => raises(() => luFactor(tensor(c.a, { dtype: "float64" }))));
      expect(got).toEqual(LU_CASES.map((c) => c.raises));
    });
  }
});

/** Singular M M^T (integer M); torch 2.13's cholesky_ex info > 0, lower (upper: false). */
const CHOLESKY_LOWER: { a: number[][]; raises: boolean }[] = [
  {
    a: [
      [8, 4, 0, 8, 0],
      [4, 5, 3, 3, -4],
      [0, 3, 3, -1, -4],
      [8, 3, -1, 9, 0],
      [0, -4, -4, 0, 8],
    ],
    raises: true,
  },
  {
    a: [
      [12, 0, -2, 6, 0],
      [0, 12, -6, 2, -2],
      [-2, -6, 9, -2, 7],
      [6, 2, -2, 9, 4],
      [0, -2, 7, 4, 10],
    ],
    raises: true,
  },
  {
    a: [
      [30, 1, -17, -19, 0, 20],
      [1, 18, -12, 1, -19, -2],
      [-17, -12, 57, -3, 12, 10],
      [-19, 1, -3, 19, -4, -17],
      [0, -19, 12, -4, 22, 1],
      [20, -2, 10, -17, 1, 25],
    ],
    raises: false,
  },
  {
    a: [
      [20, 12, 16],
      [12, 17, 18],
      [16, 18, 20],
    ],
    raises: true,
  },
  {
    a: [
      [20, -10, 12, -2],
      [-10, 14, 4, -3],
      [12, 4, 21, -1],
      [-2, -3, -1, 10],
    ],
    raises: false,
  },
  {
    a: [
      [23, 12, 4, -8, -4],
      [12, 15, 7, -6, 1],
      [4, 7, 18, 8, 7],
      [-8, -6, 8, 11, 4],
      [-4, 1, 7, 4, 7],
    ],
    raises: false,
  },
];

/** As above with upper: true, where potf2's "U" order (dot products first) decides. */
const CHOLESKY_UPPER: { a: number[][]; raises: boolean }[] = [
  {
    a: [
      [27, -12, -3, -6],
      [-12, 22, 18, -4],
      [-3, 18, 19, -10],
      [-6, -4, -10, 12],
    ],
    raises: true,
  },
  {
    a: [
      [2, 2, 1, 1, 2],
      [2, 3, 2, 0, 3],
      [1, 2, 2, -1, 2],
      [1, 0, -1, 3, -1],
      [2, 3, 2, -1, 4],
    ],
    raises: false,
  },
  {
    a: [
      [2, -1, -1, 0, -1, -1],
      [-1, 3, 0, 1, 1, 1],
      [-1, 0, 3, -1, 0, 0],
      [0, 1, -1, 1, 1, 1],
      [-1, 1, 0, 1, 2, 2],
      [-1, 1, 0, 1, 2, 2],
    ],
    raises: true,
  },
  {
    a: [
      [30, 8, -11, -14, -9],
      [8, 44, 2, -2, 15],
      [-11, 2, 26, 11, 1],
      [-14, -2, 11, 34, -37],
      [-9, 15, 1, -37, 75],
    ],
    raises: false,
  },
  {
    a: [
      [5, 1, 4, -2, -2, -4],
      [1, 1, 1, 0, 0, -1],
      [4, 1, 4, -1, -1, -4],
      [-2, 0, -1, 2, 1, 1],
      [-2, 0, -1, 1, 2, 1],
      [-4, -1, -4, 1, 1, 4],
    ],
    raises: true,
  },
];

describe("wasm-cholesky rounds in potf2's order", () => {
  const decisions = (cases: typeof CHOLESKY_LOWER, upper: boolean) =>
    cases.map((c) => raises(() => cholesky(tensor(c.a, { dtype: "float64" }), { upper })));

  for (const kernel of ["wasm-cholesky", "reference"]) {
    it(`${kernel} (lower) raises on singular M M^T exactly where torch does`, () => {
      using _ = kernelPriority("cholesky", [kernel]);
      expect(decisions(CHOLESKY_LOWER, false)).toEqual(CHOLESKY_LOWER.map((c) => c.raises));
    });
  }

  it("wasm-cholesky (upper) raises on singular M M^T exactly where torch does", () => {
    using _ = kernelPriority("cholesky", ["wasm-cholesky"]);
    expect(decisions(CHOLESKY_UPPER, true)).toEqual(CHOLESKY_UPPER.map((c) => c.raises));
  });

  it("still factors positive definite matrices, lower and upper, as the reference", () => {
    const next = intStream(777);
    for (let t = 0; t < 50; t++) {
      const n = 1 + ((next(100) + 100) % 9);
      const b = Array.from({ length: n }, () => Array.from({ length: n }, () => next(5)));
      const a = b.map((r, i) =>
        b.map((s, j) => r.reduce((x, v, k) => x + v * s[k], 0) + (i === j ? 1 : 0)),
      );
      for (const upper of [false, true]) {
        const got = (() => {
          using _ = kernelPriority("cholesky", ["wasm-cholesky"]);
          return cholesky(tensor(a, { dtype: "float64" }), { upper }).toFloat64();
        })();
        const want = (() => {
          using _ = kernelPriority("cholesky", ["reference"]);
          return cholesky(tensor(a, { dtype: "float64" }), { upper }).toFloat64();
        })();
        const scale = Math.max(...want.map(Math.abs));
        const worst = Math.max(...got.map((x, i) => Math.abs(x - want[i])));
        expect(worst).toBeLessThanOrEqual(1e-12 * scale);
      }
    }
  });
});
