/**
 * The reference qr on columns of subnormal norm (below 2^-1022). Householder's
 * 1 / (alpha - beta) overflowed to infinity there, so Q and R came back all NaN, where
 * torch (LAPACK's larfg, which scales such a column up first) factors. QR commutes with
 * scaling a column by a power of two (Q stays, R's column scales), so each result is
 * checked against the reference's QR of the same matrix with that column scaled back
 * into the normal range, exactly.
 */
import { fromFloat64, qr, randn, type Tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";

/** x * 2^e in two steps, so that 2^e itself need not be a float64 (e = 1045). */
const times2 = (x: number, e: number): number =>
  x * 2 ** Math.trunc(e / 2) * 2 ** (e - Math.trunc(e / 2));

/** A copy of the row-major m x n `a` with column c multiplied by 2^exps[c] (exact unless it underflows). */
function scaleColumns(a: Float64Array, m: number, n: number, exps: number[]): Float64Array {
  const out = Float64Array.from(a);
  for (let i = 0; i < m; i++)
    for (let c = 0; c < n; c++) out[i * n + c] = times2(out[i * n + c], exps[c]);
  return out;
}

/** max |got - want| / scale over the entries, column c's scale being scale[c]. */
function columnError(got: Tensor, want: Float64Array, n: number, scale: number[]): number {
  const g = got.toFloat64();
  expect(g.length).toBe(want.length);
  let worst = 0;
  for (let i = 0; i < g.length; i++) {
    const e = Math.abs(g[i] - want[i]) / scale[i % n];
    worst = Math.max(worst, Number.isNaN(e) ? Number.POSITIVE_INFINITY : e);
  }
  return worst;
}

describe("reference qr with subnormal columns", () => {
  const m = 5;
  const n = 3;
  const normal = randn([m, n], { dtype: "float64", seed: 11 }).toFloat64();
  // Columns scaled by 2^e: the whole matrix subnormal, or one subnormal column among normal ones.
  const cases: [string, number[]][] = [
    ["every column", [-1040, -1040, -1040]],
    ["the middle column", [0, -1045, 0]],
    ["the first column", [-1045, 0, 0]],
  ];
  for (const [name, down] of cases) {
    for (const mode of ["reduced", "complete"] as const) {
      it(`${name} (${mode}): Q as for the normal matrix, R's columns scaled`, () => {
        const a = scaleColumns(normal, m, n, down);
        // Scaling the subnormal values back up by the inverse power of two is exact.
        const lifted = scaleColumns(
          a,
          m,
          n,
          down.map((e) => -e),
        );
        const want = qr(fromFloat64(lifted, [m, n], "float64"), { mode });
        const got = qr(fromFloat64(a, [m, n], "float64"), { mode });
        const qCols = got.Q.shape[1];
        expect(columnError(got.Q, want.Q.toFloat64(), qCols, Array(qCols).fill(1))).toBeLessThan(
          1e-6,
        );
        const wantR = scaleColumns(want.R.toFloat64(), want.R.shape[0], n, down);
        // A subnormal of size 2^-1045 keeps 29 bits: relative error up to 2^-29 of the column.
        expect(
          columnError(
            got.R,
            wantR,
            n,
            down.map((e) => 2 ** e),
          ),
        ).toBeLessThan(1e-6);
      });
    }
  }
});
