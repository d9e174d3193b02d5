/**
 * linalg as torch 2.13 measured: cholesky and eigh read one triangle of A (eigh's UPLO picks
 * it, "L" default or "U": it was not an option and { UPLO: "U" } was ignored), and NaN or
 * infinity in the other triangle is not input (it raised LinalgError; torch factors). luFactor
 * of an exactly singular matrix raises as torch.linalg.lu_factor (it returned the factors).
 * Reference kernels; float64 results against torch's values or the lower-triangle call.
 */
import {
  ArgumentError,
  cholesky,
  eigh,
  LinalgError,
  luFactor,
  qr,
  type Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

const TOL = { float64: 1e-12, float32: 1e-5 };

function maxAbsDiff(a: Tensor, b: Tensor): number {
  expect(a.shape).toEqual(b.shape);
  const x = a.toFloat64();
  const y = b.toFloat64();
  let d = 0;
  for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i] - y[i]));
  return Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
}

const { NaN: nan, POSITIVE_INFINITY: inf } = Number;
// Lower triangle [[4], [1, 3], [0.5, 0.25, 5]]; the upper one is junk.
const LOWER = [
  [4, nan, inf],
  [1, 3, nan],
  [0.5, 0.25, 5],
];
const UPPER = LOWER.map((r, i) => r.map((_, j) => LOWER[j][i]));

describe("one triangle of A (cholesky, eigh)", () => {
  for (const dtype of ["float64", "float32"] as const) {
    it(`${dtype}: NaN and infinity in the triangle not read are ignored; UPLO "U" reads the upper`, () => {
      const tol = TOL[dtype];
      const a = tensor(LOWER, { dtype });
      // torch.linalg.cholesky of this A: L = [[2], [0.5, sqrt(2.75)], [0.25, 0.0754, 2.2208]].
      const l = cholesky(a).toFloat64();
      expect(l[0]).toBeCloseTo(2, 12);
      expect(Math.abs(l[4] - Math.sqrt(2.75))).toBeLessThan(tol);
      expect(Array.from(l).every(Number.isFinite)).toBe(true);
      const low = eigh(a);
      const up = eigh(tensor(UPPER, { dtype }), { UPLO: "U" });
      expect(maxAbsDiff(up.eigenvalues, low.eigenvalues)).toBeLessThan(tol);
      expect(maxAbsDiff(up.eigenvectors, low.eigenvectors)).toBeLessThan(tol);
      // torch: eigenvalues 2.38094994961561, 4.220875977997919, 5.39817407238647.
      const w = low.eigenvalues.toFloat64();
      const expected = [2.38094994961561, 4.220875977997919, 5.39817407238647];
      for (let i = 0; i < 3; i++) expect(Math.abs(w[i] - expected[i])).toBeLessThan(tol * 10);
      const u = cholesky(tensor(UPPER, { dtype }), { upper: true });
      expect(maxAbsDiff(u, cholesky(a).transpose(-2, -1))).toBe(0);
    });
  }

  it("the triangle read must be finite; UPLO is checked as torch checks it", () => {
    expect(() => eigh(tensor(UPPER))).toThrow(LinalgError);
    expect(() => cholesky(tensor(UPPER))).toThrow(/cholesky: A contains NaN or infinity/);
    expect(() => eigh(tensor(LOWER), { UPLO: "U" })).toThrow(/eigh: A contains NaN/);
    expect(() => eigh(tensor(LOWER), { UPLO: "UL" as "U" })).toThrow(ArgumentError);
    expect(() => eigh(tensor(LOWER), { foo: 1 } as never)).toThrow(/unknown option "foo"/);
    expect(eigh(tensor(UPPER), { UPLO: "u" as "U" }).eigenvalues.shape).toEqual([3]);
    expect(() => eigh(tensor([1, 2]), { UPLO: "U" })).toThrow(/rank at least 2/);
  });
});

describe("luFactor", () => {
  it("raises LinalgError on an exactly zero pivot (torch: U[3,3] is zero), batch included", () => {
    for (const dtype of ["float64", "float32"] as const) {
      const a = tensor(
        [
          [1, 2, 3],
          [2, 4, 6],
          [1, 1, 1],
        ],
        { dtype },
      );
      expect(() => luFactor(a)).toThrow(/luFactor: the matrix is singular \(U\[3,3\]/);
      const batch = tensor(
        [
          [
            [2, 1],
            [1, 3],
          ],
          [
            [0, 0],
            [0, 0],
          ],
        ],
        { dtype },
      );
      expect(() => luFactor(batch)).toThrow(LinalgError);
      // Not singular: torch's pivots [3, 3, 3] and U[2,2] = 1.1102e-16.
      const near = luFactor(
        tensor(
          [
            [1, 2, 3],
            [4, 5, 6],
            [7, 8, 9],
          ],
          { dtype: "float64" },
        ),
      );
      expect(Array.from(near.pivots.toFloat64())).toEqual([3, 3, 3]);
      expect(near.LU.toFloat64()[8]).toBeCloseTo(1.1102230246251565e-16, 30);
    }
  });
});

describe('qr mode "r"', () => {
  it("gives R of the reduced mode and Q as an empty [0] tensor, as torch", () => {
    const a = tensor(
      [
        [2, -1, 0.5],
        [1, 3, -2],
        [0.25, 4, 1],
        [-3, 0.5, 2],
      ],
      { dtype: "float64" },
    );
    const reduced = qr(a);
    const r = qr(a, { mode: "r" });
    expect(r.Q.shape).toEqual([0]);
    expect(r.Q.dtype).toBe("float64");
    expect(maxAbsDiff(r.R, reduced.R)).toBeLessThan(TOL.float64);
  });
  it("still refuses modes torch does not know", () => {
    const a = tensor([
      [1, 2],
      [3, 4],
    ]);
    expect(() => qr(a, { mode: "economic" as "r" })).toThrow(ArgumentError);
  });
  it("refuses a null mode (torch: TypeError) instead of taking it for the default", () => {
    const a = tensor([
      [1, 2],
      [3, 4],
    ]);
    expect(() => qr(a, { mode: null as unknown as "r" })).toThrow(
      /qr: mode must be "reduced", "complete" or "r", got null/,
    );
  });
});
