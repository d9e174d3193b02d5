/**
 * eigh's reference on rank-1 matrices v vᵀ with integer v (the all-ones matrix among them):
 * tridiagonalisation leaves subnormal off-diagonals below rows already reduced to 0, and the
 * QL iteration rotated by them (c = p / r of subnormal p, r carries a few bits), so the
 * eigenvectors stopped being orthogonal (VᵀV off I by 1.3 for the 60 x 60 all-ones matrix;
 * torch gives orthonormal ones). Checked against the closed form: eigenvalues 0 (n - 1 times)
 * and |v|², A V = V diag(w), VᵀV = I.
 */
import { eigh, fromFloat64, seededRandom, withKernelPriority } from "@backplane/core";
import { describe, expect, it } from "vitest";

/** v vᵀ for v with random integer entries in [-2, 2] (0 replaced by 1), or all ones. */
function rankOne(n: number, seed: number | undefined): { a: Float64Array; normSq: number } {
  const rnd = seededRandom(seed ?? 0);
  const v = Array.from({ length: n }, () =>
    seed === undefined ? 1 : Math.floor(rnd() * 5) - 2 || 1,
  );
  const a = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) a[i * n + j] = v[i] * v[j];
  return { a, normSq: v.reduce((s, x) => s + x * x, 0) };
}

/** Largest |(VᵀV - I)_ij| and |(A V - V diag(w))_ij| / |w|max over the pairs. */
function eigenpairErrors(a: Float64Array, w: Float64Array, v: Float64Array, n: number) {
  const scale = Math.max(...Array.from(w, Math.abs));
  let orthogonality = 0;
  let residual = 0;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      let vtv = 0;
      let av = 0;
      for (let k = 0; k < n; k++) {
        vtv += v[k * n + i] * v[k * n + j];
        av += a[i * n + k] * v[k * n + j];
      }
      orthogonality = Math.max(orthogonality, Math.abs(vtv - (i === j ? 1 : 0)));
      residual = Math.max(residual, Math.abs(av - v[i * n + j] * w[j]) / scale);
    }
  }
  return { orthogonality, residual };
}

describe("eigh reference on rank-1 matrices", () => {
  const cases: [number, number | undefined][] = [
    [58, undefined],
    [60, undefined],
    [64, undefined],
    [100, undefined],
    ...[57, 80, 107, 109, 115, 118].map((n): [number, number] => [n, n]),
  ];
  // A loop of it(), not it.each: Deno's vitest shim has no .each.
  for (const [n, seed] of cases)
    it(`n = ${n}, v seed ${seed}: orthonormal eigenvectors, closed-form eigenvalues`, () => {
      const { a, normSq } = rankOne(n, seed);
      const out = withKernelPriority("eigh", ["reference"], () =>
        eigh(fromFloat64(a, [n, n], "float64")),
      );
      const w = out.eigenvalues.toFloat64();
      const v = out.eigenvectors.toFloat64();
      const tol = 1e-13 * n;
      for (let i = 0; i < n - 1; i++) expect(Math.abs(w[i])).toBeLessThan(tol * normSq);
      expect(Math.abs(w[n - 1] - normSq)).toBeLessThan(tol * normSq);
      const { orthogonality, residual } = eigenpairErrors(a, w, v, n);
      expect(orthogonality).toBeLessThan(tol);
      expect(residual).toBeLessThan(tol);
    });
});
