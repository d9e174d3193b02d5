/**
 * Rank-deficient integer matrices meet an exactly zero pivot, or not, by rounding alone:
 * torch (MKL's getrf) raises for some and factors the others. The reference divided L's
 * column by the pivot where LAPACK's getf2 multiplies by its reciprocal, and so decided
 * differently for about 1 matrix in 20 (inv, solve and luFactor raised where torch returned,
 * or the reverse). Each matrix below is one of those, with torch 2.13's lu_factor_ex info
 * (0: factored; k: U[k,k] is zero and torch.linalg.lu_factor raises).
 */
import {
  fromFloat64,
  inv,
  LinalgError,
  luFactor,
  solve,
  type Tensor,
  withKernelPriority,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

const TORCH_CASES: { rows: number[][]; info: number }[] = [
  {
    rows: [
      [-5, -18, -20, 0, -21],
      [24, 17, 33, -2, -8],
      [23, 14, 20, -8, 7],
      [-2, -2, 6, 6, -18],
      [0, 1, -15, -10, 32],
    ],
    info: 0,
  },
  {
    rows: [
      [3, -12, -12, 6],
      [3, -4, -8, 3],
      [5, 4, -8, 1],
      [0, -8, -4, 3],
    ],
    info: 0,
  },
  {
    rows: [
      [10, -12, -4],
      [14, -4, 4],
      [-6, -4, -6],
    ],
    info: 3,
  },
  {
    rows: [
      [-11, 8, 1, -8],
      [11, -9, 7, 7],
      [-6, 5, -2, -5],
      [10, -6, -14, 10],
    ],
    info: 0,
  },
  {
    rows: [
      [2, -6, -6, -4],
      [0, -6, -3, -1],
      [10, 12, -9, -13],
      [-4, -12, 0, 4],
    ],
    info: 0,
  },
  {
    rows: [
      [40, 40, 0, -8, 4],
      [17, 16, -3, -2, 2],
      [-14, -10, 10, 0, 4],
      [-21, -17, 11, 0, 0],
      [-13, -15, -5, 4, -4],
    ],
    info: 0,
  },
];

/** The zero pivot's 1-based position `fn` raised, or 0 when it returned. */
function zeroPivot(op: string, fn: () => unknown): number {
  try {
    withKernelPriority(op, ["reference"], fn);
    return 0;
  } catch (e) {
    expect(e).toBeInstanceOf(LinalgError);
    return (e as LinalgError).position ?? -1;
  }
}

describe("reference LU on rank-deficient integer matrices decides as torch", () => {
  it.each(TORCH_CASES.map((c, i) => [i, c] as const))("matrix %i", (_, { rows, info }) => {
    const n = rows.length;
    const a: Tensor = fromFloat64(Float64Array.from(rows.flat()), [n, n], "float64");
    const b = fromFloat64(
      Float64Array.from({ length: n }, (_, i) => i + 1),
      [n],
      "float64",
    );
    expect(zeroPivot("luFactor", () => luFactor(a))).toBe(info);
    expect(zeroPivot("inv", () => inv(a))).toBe(info);
    expect(zeroPivot("solve", () => solve(a, b))).toBe(info);
  });
});
