/**
 * Cholesky of a matrix that is not positive definite is a typed LinalgError naming the
 * failing leading minor, on every LAPACK this machine has that the backend can load (each
 * called directly), on the kernels the dispatcher can pick (lapack, wasm), and on the
 * reference, all agreeing on the position (issue 21: NaN was returned in a review).
 */
import { cholesky, LinalgError, type Tensor, tensor, withKernelPriority } from "@backplane/core";
import { describe, expect } from "vitest";
import { NATIVE_BACKEND } from "../src/index.ts";
import { cholesky as lapackCholesky } from "../src/native/lapack.ts";
import { BLAS_ORDER, loadBlas } from "../src/native/library.ts";
import { itNative } from "./native-helpers.ts";

/** Symmetric matrices that fail at the given leading minor (1-based). */
const CASES: { name: string; rows: number[][]; minor: number }[] = [
  {
    name: "indefinite 2x2",
    rows: [
      [1, 2],
      [2, 1],
    ],
    minor: 2,
  },
  {
    name: "negative first pivot",
    rows: [
      [-1, 0],
      [0, 1],
    ],
    minor: 1,
  },
  {
    name: "zero matrix",
    rows: [
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ],
    minor: 1,
  },
  {
    name: "positive definite until the third minor",
    rows: [
      [4, 2, 0],
      [2, 3, 1],
      [0, 1, -5],
    ],
    minor: 3,
  },
  {
    name: "semidefinite (rank 1)",
    rows: [
      [1, 1],
      [1, 1],
    ],
    minor: 2,
  },
  {
    name: "NaN on the diagonal",
    rows: [
      [2, 0],
      [0, Number.NaN],
    ],
    minor: 2,
  },
];

function failure(fn: () => unknown): LinalgError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof LinalgError) return e;
    throw e;
  }
  return undefined;
}

describe("cholesky of non-positive-definite matrices (issue 21)", () => {
  itNative("every loadable LAPACK reports the failing minor", async () => {
    const tested: string[] = [];
    for (const name of BLAS_ORDER) {
      const lib = await loadBlas(name);
      if (typeof lib === "string" || !lib.lapack) continue;
      tested.push(`${name} (${lib.lapackPath})`);
      for (const c of CASES) {
        const n = c.rows.length;
        const r = lapackCholesky(lib.lapack, Float64Array.from(c.rows.flat()), n);
        expect(r.info, `${name}: ${c.name}`).toBe(c.minor);
      }
    }
    console.log(`[backend-cpu-mkl] dpotrf checked on: ${tested.join(", ")}`);
    expect(tested.length).toBeGreaterThan(0);
  });

  itNative("lapack, wasm and reference kernels raise LinalgError at the same minor", () => {
    for (const kernel of ["lapack-cholesky", "wasm-cholesky", "reference"]) {
      for (const dtype of ["float64", "float32"] as const) {
        for (const c of CASES) {
          const a: Tensor = tensor(c.rows, { dtype });
          const err = withKernelPriority("cholesky", [kernel], () => failure(() => cholesky(a)));
          expect(err, `${kernel} ${dtype} ${c.name}`).toBeInstanceOf(LinalgError);
          // NaN never reaches a kernel: linear algebra takes finite input only (issue 33).
          if (c.rows.flat().some((v) => !Number.isFinite(v))) {
            expect(err!.message).toMatch(/cholesky: A contains NaN or infinity/);
            a.dispose();
            continue;
          }
          expect(err!.position, `${kernel} ${dtype} ${c.name}`).toBe(c.minor);
          expect(err!.message).toMatch(/not positive definite \(leading minor of order \d/);
          a.dispose();
        }
      }
    }
    void NATIVE_BACKEND;
  });
});
