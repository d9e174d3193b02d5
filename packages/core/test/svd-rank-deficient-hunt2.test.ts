/**
 * svd's reference (one-sided Jacobi) on rank-deficient matrices with integer entries, the
 * common "svd of a singular matrix": once a column is rounding noise (~eps of the others),
 * rotating it against a column ~1/eps larger leaves new noise as far from orthogonal, so the
 * sweeps never settled and svd raised "did not converge" (4 of the 4 matrices below; torch
 * returns their SVD). Columns under eps ||A||_F now count as zero, the error any
 * backward-stable SVD makes. Checked against torch.linalg.svdvals (float64) and, on random
 * rank-deficient matrices, against their rank, A = U diag(S) Vh and orthonormal U, V.
 */
import { fromFloat64, seededRandom, svd, type Tensor, withKernelPriority } from "@backplane/core";
import { describe, expect, it } from "vitest";

/** Matrices on which the reference did not converge, with torch 2.13's singular values. */
const TORCH_CASES: { rows: number[][]; s: number[] }[] = [
  {
    rows: [
      [-2, -3, 1, -2],
      [0, 0, 0, 0],
      [-6, -9, 3, -6],
      [-2, -3, 1, -2],
    ],
    s: [14.07124727947029, 1.0157980654077232e-15, 2.0465002695190583e-16, 1.785058018510773e-33],
  },
  {
    rows: [
      [3, -3, 6],
      [1, 0, 7],
      [-3, 3, -6],
    ],
    s: [12.203920875670383, 3.0107001279397703, 6.772140724344129e-16],
  },
  {
    rows: [
      [9, -9, 9, -3, 0],
      [-4, 1, -5, 0, 2],
      [8, -2, 10, 0, -4],
      [-6, 15, -3, 6, -6],
      [0, -9, -3, -4, 6],
    ],
    s: [
      26.043353123161122, 16.96301146914467, 1.767641971771518e-15, 5.150184238223604e-16,
      9.320618057735339e-17,
    ],
  },
  {
    rows: [
      [0, 0, 0, 0],
      [-3, -3, -3, -6],
      [-2, -2, -2, -4],
      [0, 0, 0, 0],
    ],
    s: [9.539392014169456, 1.0278667914282467e-15, 1.3229599566496507e-31, 0],
  },
];

const referenceSvd = (a: Tensor, fullMatrices: boolean) =>
  withKernelPriority("svd", ["reference"], () => svd(a, { fullMatrices }));

/** Largest |(MᵀM - I)_ij| for M [rows, cols] (orthonormal columns give 0). */
function orthonormalityError(m: Float64Array, rows: number, cols: number): number {
  let worst = 0;
  for (let i = 0; i < cols; i++)
    for (let j = 0; j < cols; j++) {
      let d = 0;
      for (let r = 0; r < rows; r++) d += m[r * cols + i] * m[r * cols + j];
      worst = Math.max(worst, Math.abs(d - (i === j ? 1 : 0)));
    }
  return worst;
}

/** X Y with X [m, k], Y [k, n], integer entries in [-3, 3] from `rnd`: a rank <= k matrix. */
function lowRank(rnd: () => number, m: number, n: number, k: number): Float64Array {
  const int = () => Math.floor(rnd() * 7) - 3;
  const x = Array.from({ length: m * k }, int);
  const y = Array.from({ length: k * n }, int);
  const a = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++)
      for (let t = 0; t < k; t++) a[i * n + j] += x[i * k + t] * y[t * n + j];
  return a;
}

describe("svd reference on rank-deficient integer matrices", () => {
  it("converges and gives torch's singular values", () => {
    for (const { rows, s } of TORCH_CASES) {
      const n = rows.length;
      const a = fromFloat64(Float64Array.from(rows.flat()), [n, n], "float64");
      for (const full of [true, false]) {
        const got = referenceSvd(a, full);
        const values = got.S.toFloat64();
        // Absolute: the zero singular values are rounding noise in torch too (~eps ||A||).
        for (let i = 0; i < n; i++)
          expect(Math.abs(values[i] - s[i]), `${rows} S[${i}]`).toBeLessThan(1e-13 * s[0]);
        expect(orthonormalityError(got.U.toFloat64(), n, n)).toBeLessThan(1e-13);
      }
    }
  });

  it("random tall, wide and square ones: rank, A = U diag(S) Vh, orthonormal U and V", () => {
    const rnd = seededRandom(2024);
    for (let trial = 0; trial < 60; trial++) {
      const m = 2 + Math.floor(rnd() * 14);
      const n = 2 + Math.floor(rnd() * 14);
      const rank = 1 + Math.floor(rnd() * (Math.min(m, n) - 1));
      const flat = lowRank(rnd, m, n, rank);
      if (flat.every((x) => x === 0)) continue;
      const got = referenceSvd(fromFloat64(flat, [m, n], "float64"), true);
      const [u, s, vh] = [got.U.toFloat64(), got.S.toFloat64(), got.Vh.toFloat64()];
      const big = s[0];
      // The true rank is at most `rank`: the values past it are noise of order eps ||A||.
      for (let i = rank; i < s.length; i++) expect(s[i]).toBeLessThan(1e-12 * big);
      let recon = 0;
      for (let i = 0; i < m; i++)
        for (let j = 0; j < n; j++) {
          let x = 0;
          for (let t = 0; t < s.length; t++) x += u[i * m + t] * s[t] * vh[t * n + j];
          recon = Math.max(recon, Math.abs(x - flat[i * n + j]));
        }
      expect(recon, `${m}x${n} rank ${rank}`).toBeLessThan(1e-12 * big);
      expect(orthonormalityError(u, m, m)).toBeLessThan(1e-12);
      // Vh's rows orthonormal: Vhᵀ has orthonormal columns.
      const v = new Float64Array(n * n);
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) v[j * n + i] = vh[i * n + j];
      expect(orthonormalityError(v, n, n)).toBeLessThan(1e-12);
    }
  });
});
