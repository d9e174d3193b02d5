/**
 * The reference qr, wasm-qr and lapack-qr on matrices whose columns have subnormal norm
 * (below 2^-1022): a Householder step's 1 / (alpha - beta) overflowed there and Q and R came
 * back NaN (reference and WASM), where LAPACK's larfg scales such a column up first. QR commutes with scaling a column
 * by a power of two (Q stays, R's column scales), so each result is checked against the
 * float64 reference's QR of the matrix lifted exactly into the normal range.
 */
import { fromFloat64, kernelPriority, qr, randn, ready, type Tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";
import "../src/index.ts";
import { itNative } from "./native-helpers.ts";

/** x * 2^e in two steps, so that 2^e itself need not be a float64. */
const times2 = (x: number, e: number): number =>
  x * 2 ** Math.trunc(e / 2) * 2 ** (e - Math.trunc(e / 2));

function scaleColumns(a: Float64Array, m: number, n: number, exps: number[]): Float64Array {
  const out = Float64Array.from(a);
  for (let i = 0; i < m; i++)
    for (let c = 0; c < n; c++) out[i * n + c] = times2(out[i * n + c], exps[c]);
  return out;
}

/** max |got - want| / scale[column] (NaN counts as infinite). */
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

const m = 6;
const n = 4;
const CASES: [string, number[]][] = [
  ["every column", [-1040, -1040, -1040, -1040]],
  ["one column among normal ones", [0, -1045, 0, 0]],
  ["the first column", [-1045, 0, 0, 0]],
];

for (const kernel of ["reference", "wasm-qr", "lapack-qr"]) {
  const run = kernel === "lapack-qr" ? itNative : it;
  describe(`${kernel} with subnormal columns`, () => {
    for (const [name, down] of CASES)
      for (const mode of ["reduced", "complete"] as const)
        run(`${name} (${mode}): Q as for the lifted matrix, R's columns scaled`, async () => {
          await ready();
          const normal = randn([m, n], { dtype: "float64", seed: 23 }).toFloat64();
          const a = scaleColumns(normal, m, n, down);
          const lifted = scaleColumns(
            a,
            m,
            n,
            down.map((e) => -e),
          );
          const want = (() => {
            using _ = kernelPriority("qr", ["reference"]);
            return qr(fromFloat64(lifted, [m, n], "float64"), { mode });
          })();
          const got = (() => {
            using _ = kernelPriority("qr", [kernel]);
            return qr(fromFloat64(a, [m, n], "float64"), { mode });
          })();
          const qCols = got.Q.shape[1];
          const ones = Array(qCols).fill(1);
          expect(columnError(got.Q, want.Q.toFloat64(), qCols, ones)).toBeLessThan(1e-6);
          const wantR = scaleColumns(want.R.toFloat64(), want.R.shape[0], n, down);
          // A subnormal of 2^-1045 keeps 29 bits: errors up to 2^-29 of the column's scale.
          const scales = down.map((e) => 2 ** e);
          expect(columnError(got.R, wantR, n, scales)).toBeLessThan(1e-6);
          for (const t of [want.Q, want.R, got.Q, got.R]) t.dispose();
        });
  });
}
