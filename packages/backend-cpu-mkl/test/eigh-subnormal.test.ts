/**
 * eigh of symmetric matrices whose off-diagonals are subnormal next to their largest entry
 * (a random tridiagonal block of size ~1e-315 beside a normal diagonal entry), and of the
 * all-ones matrix: wasm-eigh (and the core's reference) ran implicit QL rotations built
 * from subnormal numbers, whose few bits made them non-orthogonal: VᵀV was off I by up to
 * 0.2 (LAPACK and torch: 1e-15). Every kernel is held to VᵀV = I, A V = V diag(w), and the
 * float64 reference's eigenvalues.
 */
import {
  eigh,
  fromFloat64,
  type Recorded,
  ready,
  record,
  seededRandom,
  withKernelPriority,
} from "@backplane/core";
import { orthogonalityError } from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { NATIVE_BACKEND, WASM_BACKEND } from "../src/index.ts";
import { nativeRuns } from "./native-helpers.ts";

await ready(WASM_BACKEND);
await ready(NATIVE_BACKEND).catch(() => {});

const KERNELS = ["reference", "wasm-eigh", ...(nativeRuns ? ["lapack-eigh"] : [])];

/** Symmetric n x n: a random tridiagonal block of magnitude `tiny`, and A[n-1][n-1] of order 1. */
function tinyCoupling(n: number, tiny: number, seed: number): Float64Array {
  const rnd = seededRandom(seed);
  const a = new Float64Array(n * n);
  for (let i = 0; i < n - 1; i++) {
    a[i * n + i] = (rnd() - 0.5) * tiny;
    if (i + 1 < n - 1) {
      const e = (rnd() + 0.5) * tiny;
      a[(i + 1) * n + i] = e;
      a[i * n + i + 1] = e;
    }
  }
  a[(n - 1) * n + n - 1] = 1 + rnd();
  return a;
}

/** VᵀV's largest distance from I (the testkit's), and |(A V - V diag(w))_ij| (A's largest entry is ~1). */
function eigenpairErrors(a: Float64Array, w: Float64Array, v: Float64Array, n: number) {
  let residual = 0;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      let av = 0;
      for (let k = 0; k < n; k++) av += a[i * n + k] * v[k * n + j];
      residual = Math.max(residual, Math.abs(av - v[i * n + j] * w[j]));
    }
  return { orthogonality: orthogonalityError(v, n, n), residual };
}

function runOn(kernel: string, a: Float64Array, n: number) {
  const { result, calls } = record(() =>
    withKernelPriority("eigh", [kernel], () => eigh(fromFloat64(a, [n, n], "float64"))),
  ) as Recorded<ReturnType<typeof eigh>>;
  expect(calls.map((c) => c.kernel)).toEqual([kernel]);
  return { w: result.eigenvalues.toFloat64(), v: result.eigenvectors.toFloat64() };
}

describe("eigh with subnormal off-diagonals: orthonormal eigenvectors on every kernel", () => {
  const cases: [number, number, number][] = [
    [4, 1e-323, 1],
    [6, 5e-322, 2],
    [9, 1e-315, 3],
    [9, 1e-310, 4],
    [13, 1e-312, 5],
  ];
  // A loop of it(), not it.each: Deno's vitest shim has no .each.
  for (const [n, tiny, seed] of cases)
    it(`n = ${n}, off-diagonals ~${tiny} (seed ${seed})`, () => {
      const a = tinyCoupling(n, tiny, seed);
      const ref = runOn("reference", a, n);
      for (const kernel of KERNELS) {
        const { w, v } = runOn(kernel, a, n);
        const { orthogonality, residual } = eigenpairErrors(a, w, v, n);
        expect(orthogonality, kernel).toBeLessThan(1e-13);
        expect(residual, kernel).toBeLessThan(1e-13);
        for (let i = 0; i < n; i++) expect(Math.abs(w[i] - ref.w[i]), kernel).toBeLessThan(1e-15);
      }
    });

  it("the all-ones matrix: eigenvalues 0 and n, orthonormal eigenvectors", () => {
    for (const n of [58, 60, 64]) {
      const a = new Float64Array(n * n).fill(1);
      for (const kernel of KERNELS) {
        const { w, v } = runOn(kernel, a, n);
        const { orthogonality, residual } = eigenpairErrors(a, w, v, n);
        expect(orthogonality, `${kernel} n=${n}`).toBeLessThan(1e-12);
        expect(residual, `${kernel} n=${n}`).toBeLessThan(1e-12 * n);
        for (let i = 0; i < n - 1; i++) expect(Math.abs(w[i])).toBeLessThan(1e-12 * n);
        expect(Math.abs(w[n - 1] - n)).toBeLessThan(1e-12 * n);
      }
    }
  });
});
