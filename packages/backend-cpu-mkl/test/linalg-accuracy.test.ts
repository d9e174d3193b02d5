/**
 * Linalg on random float64 matrices up to 256, on both kernel families: relative
 * reconstruction errors of A = QR, U S Vh, L L^T, P^T L U, V diag(w) V^T at most 1e-10.
 */

import {
  cholesky,
  eigh,
  kernelPriority,
  luFactor,
  qr,
  randn,
  ready,
  svd,
  type Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import "../src/index.ts";

const SIZES = [1, 7, 64, 256];
const TOL = 1e-10;

function mm(a: Float64Array, b: Float64Array, m: number, k: number, n: number): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let p = 0; p < k; p++) {
      const x = a[i * k + p];
      for (let j = 0; j < n; j++) c[i * n + j] += x * b[p * n + j];
    }
  return c;
}
const T = (a: Float64Array, m: number, n: number) => {
  const t = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) t[j * m + i] = a[i * n + j];
  return t;
};
function relErr(x: Float64Array, ref: Float64Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < ref.length; i++) {
    num = Math.max(num, Math.abs(x[i] - ref[i]));
    den = Math.max(den, Math.abs(ref[i]));
  }
  return num / (den || 1);
}
const data = (t: Tensor) => t.toFloat64();

function spd(n: number, seed: number): Tensor {
  const b = data(randn([n, n], { dtype: "float64", seed }));
  const a = mm(b, T(b, n, n), n, n, n);
  for (let i = 0; i < n; i++) a[i * n + i] += n;
  return tensor(a, { shape: [n, n], dtype: "float64" });
}

const FAMILIES = [
  { name: "native (LAPACK)", prefix: "lapack-" },
  { name: "WASM", prefix: "wasm-" },
];

for (const fam of FAMILIES) {
  describe(`linalg accuracy, ${fam.name}`, () => {
    for (const n of SIZES) {
      it(`n = ${n}: A = L L^T, P A = L U, Q R, U S Vh, V W V^T within ${TOL}`, async () => {
        await ready();
        const kernel = (op: string) => kernelPriority(op, [`${fam.prefix}${op}`]);
        const a = randn([n, n], { dtype: "float64", seed: n });
        const A = data(a);
        const S = spd(n, n + 1);
        const SA = data(S);
        {
          using _ = kernel("cholesky");
          const L = data(cholesky(S));
          expect(relErr(mm(L, T(L, n, n), n, n, n), SA)).toBeLessThan(TOL);
        }
        {
          using _ = kernel("luFactor");
          const { LU, pivots } = luFactor(a);
          const lu = data(LU);
          const piv = pivots.toFloat64();
          const L = new Float64Array(n * n);
          const U = new Float64Array(n * n);
          for (let i = 0; i < n; i++)
            for (let j = 0; j < n; j++) {
              if (j < i) L[i * n + j] = lu[i * n + j];
              else U[i * n + j] = lu[i * n + j];
              if (i === j) L[i * n + j] = 1;
            }
          const PA = Float64Array.from(A);
          for (let i = 0; i < n; i++) {
            const r = piv[i] - 1;
            for (let j = 0; j < n; j++)
              [PA[i * n + j], PA[r * n + j]] = [PA[r * n + j], PA[i * n + j]];
          }
          expect(relErr(mm(L, U, n, n, n), PA)).toBeLessThan(TOL);
        }
        {
          using _ = kernel("qr");
          const { Q, R } = qr(a);
          expect(relErr(mm(data(Q), data(R), n, n, n), A)).toBeLessThan(TOL);
        }
        {
          using _ = kernel("svd");
          const { U, S: s, Vh } = svd(a);
          const u = data(U);
          const sv = data(s);
          for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) u[i * n + j] *= sv[j];
          expect(relErr(mm(u, data(Vh), n, n, n), A)).toBeLessThan(TOL);
        }
        {
          using _ = kernel("eigh");
          const { eigenvalues, eigenvectors } = eigh(S);
          const v = data(eigenvectors);
          const w = data(eigenvalues);
          const vw = Float64Array.from(v);
          for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) vw[i * n + j] *= w[j];
          expect(relErr(mm(vw, T(v, n, n), n, n, n), SA)).toBeLessThan(TOL);
        }
      });
    }
  });
}
