/**
 * linalg kernels on shapes and options past the common case: tall and wide matrices with a
 * long side over 16383 (the WASM workspace was sized for a max(m, n)-square matrix, so it
 * overflowed i32, a 64-byte block was handed out instead, and wasm-svd wrote past it: S of a
 * 17000 x 3 matrix came back off by 37), and eigh's UPLO with NaN in the triangle not read.
 * Every result is checked against the core's float64 reference.
 */
import {
  eigh,
  LinalgError,
  luFactor,
  qr,
  type Recorded,
  randn,
  ready,
  record,
  svd,
  type Tensor,
  tensor,
  withKernelPriority,
} from "@backplane/core";
import type { LinalgParams } from "@backplane/core/backend";
import { maxAbsDiff } from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { NATIVE_BACKEND, WASM_BACKEND } from "../src/index.ts";
import { modules, wasmKernels } from "../src/kernels/wasm.ts";
import { itNative, nativeRuns } from "./native-helpers.ts";

await ready(WASM_BACKEND);
await ready(NATIVE_BACKEND).catch(() => {});

/** Float64 results: the reference kernels compute in float64, the others are held to it. */
const TOL_F64 = 1e-10;
const TOL_F32 = 2e-5;

/** Runs fn with only `kernel` for op, and checks that kernel ran. */
function only<R>(op: string, kernel: string, fn: () => R): R {
  const { result, calls } = record(() => withKernelPriority(op, [kernel], fn)) as Recorded<R>;
  expect(calls.map((c) => c.kernel)).toEqual([kernel]);
  return result;
}

describe("wasm-svd and wasm-qr on matrices with a long side over 16383", () => {
  it("match the reference (the workspace no longer overflows)", () => {
    for (const shape of [
      [17000, 3],
      [3, 17000],
    ]) {
      const a = randn(shape, { seed: 7, dtype: "float64" });
      const ref = withKernelPriority("svd", ["reference"], () => svd(a, { fullMatrices: false }));
      const got = only("svd", "wasm-svd", () => svd(a, { fullMatrices: false }));
      // Singular vectors of distinct singular values agree up to sign; both kernels run the
      // same Jacobi sweeps, so the signs agree too.
      for (const k of ["U", "S", "Vh"] as const)
        expect(maxAbsDiff(got[k], ref[k]), `${shape} ${k}`).toBeLessThan(TOL_F64 * 100);
      const qRef = withKernelPriority("qr", ["reference"], () => qr(a));
      const qGot = only("qr", "wasm-qr", () => qr(a));
      expect(maxAbsDiff(qGot.Q, qRef.Q), `${shape} Q`).toBeLessThan(TOL_F64);
      expect(maxAbsDiff(qGot.R, qRef.R), `${shape} R`).toBeLessThan(TOL_F64 * 100);
    }
  });

  it("full tall svd builds U in place: matches the reference on square and tall shapes", () => {
    for (const shape of [
      [1, 1],
      [6, 6],
      [9, 4],
      [40, 7],
    ]) {
      for (const dtype of ["float64", "float32"] as const) {
        const a = randn(shape, { seed: 11, dtype });
        const ref = withKernelPriority("svd", ["reference"], () => svd(a));
        const got = only("svd", "wasm-svd", () => svd(a));
        const tol = dtype === "float64" ? TOL_F64 : TOL_F32;
        for (const k of ["U", "S", "Vh"] as const)
          expect(maxAbsDiff(got[k], ref[k]), `${shape} ${dtype} ${k}`).toBeLessThan(tol);
      }
    }
  });

  it("the workspace grows with m n, not max(m, n)^2; past i32 the kernels refuse", () => {
    const k = modules.kernels!;
    expect(k.linalgWorkspaceBytes(20000, 2)).toBeGreaterThan(0);
    expect(k.linalgWorkspaceBytes(20000, 2)).toBeLessThan(1 << 20);
    expect(k.linalgWorkspaceBytes(2, 20000)).toBeLessThan(1 << 20);
    expect(k.linalgWorkspaceBytes(40000, 40000)).toBe(-1);
    const huge = { m: 40000, n: 40000 } as LinalgParams;
    for (const op of ["svd", "qr", "eigh", "inv", "solve"]) {
      const def = wasmKernels().find((d) => d.name === `wasm-${op}`)!;
      expect(def.supports!(huge as never), op).toMatch(/workspace over 2 GiB/);
    }
  });
});

/**
 * How far the p x p row-major q is from orthonormal: exactly for every column's norm and its
 * dot with each of the first k columns (O(p^2 k)), and for all of Q^T Q - I through Gaussian
 * probes x, |Q^T Q x - x|_inf / |x|_inf (O(p^2) each; forming Q^T Q would cost p^3).
 */
function orthonormalityErr(q: Float64Array, p: number, k: number): number {
  if (p === 0) return 0;
  let err = 0;
  for (let j = 0; j < p; j++)
    for (let l = 0; l <= Math.min(j, k - 1); l++) {
      let d = 0;
      for (let i = 0; i < p; i++) d += q[i * p + j] * q[i * p + l];
      err = Math.max(err, Math.abs(d - (j === l ? 1 : 0)));
    }
  for (let seed = 1; seed <= 2; seed++) {
    const x = randn([p], { seed, dtype: "float64" }).toFloat64();
    const y = new Float64Array(p);
    for (let i = 0; i < p; i++) for (let j = 0; j < p; j++) y[i] += q[i * p + j] * x[j];
    let worst = 0;
    let xmax = 0;
    for (let j = 0; j < p; j++) {
      let z = 0;
      for (let i = 0; i < p; i++) z += q[i * p + j] * y[i];
      worst = Math.max(worst, Math.abs(z - x[j]));
      xmax = Math.max(xmax, Math.abs(x[j]));
    }
    err = Math.max(err, worst / xmax);
  }
  return Number.isNaN(err) ? Number.POSITIVE_INFINITY : err;
}

/** The transpose of the p x p row-major a. */
function transposed(a: Float64Array, p: number): Float64Array {
  const t = new Float64Array(p * p);
  for (let i = 0; i < p; i++) for (let j = 0; j < p; j++) t[j * p + i] = a[i * p + j];
  return t;
}

/** Checks a full svd of the m x n matrix a: sorted S, U S Vh = A, U and Vh orthonormal. */
function checkFullSvd(a: Tensor, r: { U: Tensor; S: Tensor; Vh: Tensor }, tol: number): void {
  const [m, n] = a.shape;
  const k = Math.min(m, n);
  expect(r.U.shape).toEqual([m, m]);
  expect(r.S.shape).toEqual([k]);
  expect(r.Vh.shape).toEqual([n, n]);
  const [A, U, S, Vh] = [a, r.U, r.S, r.Vh].map((t) => t.toFloat64());
  for (let t = 1; t < k; t++) expect(S[t]).toBeLessThanOrEqual(S[t - 1]);
  let err = 0;
  let amax = 0;
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let x = 0;
      for (let t = 0; t < k; t++) x += U[i * m + t] * S[t] * Vh[t * n + j];
      err = Math.max(err, Math.abs(x - A[i * n + j]));
      amax = Math.max(amax, Math.abs(A[i * n + j]));
    }
  expect(err / (amax || 1), "U S Vh = A").toBeLessThan(tol);
  expect(orthonormalityErr(U, m, k), "U orthonormal").toBeLessThan(tol);
  expect(orthonormalityErr(transposed(Vh, n), n, k), "Vh orthonormal").toBeLessThan(tol);
}

describe("full svd of a long thin matrix completes U (or V) in O(p^2 k), not O(p^3)", () => {
  // The completion was Gram-Schmidt on e_0, e_1, ... against every column found so far: p^3.
  // A 3000 x 3 full svd took 30 s on wasm-svd and 85 s on the reference (lapack-svd: ms);
  // now under a second, checks included.
  const FAST_MS = 10_000;
  for (const kernel of ["reference", "wasm-svd"])
    for (const shape of [
      [3000, 3],
      [3, 3000],
    ])
      for (const dtype of ["float64", "float32"] as const)
        it(
          `${kernel}, ${shape.join(" x ")}, ${dtype}`,
          () => {
            const a = randn(shape, { seed: 5, dtype });
            const r = only("svd", kernel, () => svd(a, { fullMatrices: true }));
            checkFullSvd(a, r, dtype === "float64" ? TOL_F64 : TOL_F32);
          },
          FAST_MS,
        );

  it("an exactly zero column (a zero singular value, completed too): both kernels agree", () => {
    for (const dtype of ["float64", "float32"] as const)
      for (const full of [true, false]) {
        // 40 x 5 with column 2 zero, and its transpose.
        const data = randn([40, 5], { seed: 13, dtype: "float64" }).toFloat64();
        for (let i = 0; i < 40; i++) data[i * 5 + 2] = 0;
        const tall = tensor(data, { shape: [40, 5], dtype });
        for (const a of [tall, tall.transpose(0, 1)]) {
          const ref = withKernelPriority("svd", ["reference"], () =>
            svd(a, { fullMatrices: full }),
          );
          const got = only("svd", "wasm-svd", () => svd(a, { fullMatrices: full }));
          const tol = dtype === "float64" ? TOL_F64 : TOL_F32;
          for (const k of ["U", "S", "Vh"] as const)
            expect(maxAbsDiff(got[k], ref[k]), `${a.shape} ${dtype} ${full} ${k}`).toBeLessThan(
              tol,
            );
          if (full) checkFullSvd(a, got, tol);
        }
      }
  });

  it("size-1 and size-0 sides, both kernels; an empty side's U or Vh is the identity, as torch", () => {
    for (const kernel of ["reference", "wasm-svd"])
      for (const dtype of ["float64", "float32"] as const)
        for (const shape of [
          [1, 1],
          [1, 7],
          [7, 1],
          [5, 0],
          [0, 5],
          [0, 0],
        ]) {
          const a = randn(shape, { seed: 9, dtype });
          const r = only("svd", kernel, () => svd(a, { fullMatrices: true }));
          checkFullSvd(a, r, dtype === "float64" ? TOL_F64 : TOL_F32);
          // torch.linalg.svd(torch.randn(5, 0), full_matrices=True).U is eye(5); Vh likewise.
          const [m, n] = shape;
          const square = m === 0 ? r.Vh : n === 0 ? r.U : undefined;
          const p = Math.max(m, n);
          if (square)
            expect(Array.from(square.toFloat64())).toEqual(
              Array.from({ length: p * p }, (_, i) => (i % (p + 1) === 0 ? 1 : 0)),
            );
        }
  });
});

/** The symmetric matrix whose lower triangle is `a`'s upper one, as a tensor. */
function symmetricFromUpper(rows: number[][], dtype: "float32" | "float64"): Tensor {
  return tensor(
    rows.map((r, i) => r.map((_, j) => (j >= i ? rows[i][j] : rows[j][i]))),
    { dtype },
  );
}

describe("eigh UPLO", () => {
  const rows = [
    [4, 1, 0.5, -2],
    [Number.NaN, 3, 0.25, 1],
    [Number.POSITIVE_INFINITY, Number.NaN, 5, 0.75],
    [Number.NEGATIVE_INFINITY, 2, Number.NaN, 6],
  ];
  const kernels = ["reference", "wasm-eigh", ...(nativeRuns ? ["lapack-eigh"] : [])];

  it('"U" reads only the upper triangle, NaN and infinity below it ignored, as torch', () => {
    for (const dtype of ["float64", "float32"] as const) {
      const tol = dtype === "float64" ? TOL_F64 : TOL_F32;
      const a = tensor(rows, { dtype });
      const expected = withKernelPriority("eigh", ["reference"], () =>
        eigh(symmetricFromUpper(rows, "float64")),
      );
      for (const kernel of kernels) {
        const got = only("eigh", kernel, () => eigh(a, { UPLO: "U" }));
        const lower = only("eigh", kernel, () => eigh(a.transpose(-2, -1), { UPLO: "L" }));
        expect(
          maxAbsDiff(got.eigenvalues, expected.eigenvalues),
          `${kernel} ${dtype}`,
        ).toBeLessThan(tol * 10);
        // A V = V diag(w) on the matrix read.
        const v = got.eigenvectors.toFloat64();
        const w = got.eigenvalues.toFloat64();
        const s = symmetricFromUpper(rows, "float64").toFloat64();
        for (let i = 0; i < 4; i++)
          for (let j = 0; j < 4; j++) {
            let av = 0;
            for (let k = 0; k < 4; k++) av += s[i * 4 + k] * v[k * 4 + j];
            expect(Math.abs(av - v[i * 4 + j] * w[j]), `${kernel} ${dtype}`).toBeLessThan(
              tol * 100,
            );
          }
        expect(maxAbsDiff(got.eigenvalues, lower.eigenvalues)).toBe(0);
        // The input is not modified (the view eigh made is its own).
        expect(Object.is(a.toFloat64()[4], Number.NaN)).toBe(true);
      }
    }
  });

  it("an invalid UPLO or a non-finite value in the triangle read is an error", () => {
    const a = tensor(rows, { dtype: "float64" });
    expect(() => eigh(a)).toThrow(/eigh: A contains NaN or infinity in the triangle it reads/);
    expect(() => eigh(a, { UPLO: "X" as "U" })).toThrow(/UPLO must be "L" or "U"/);
    expect(() => eigh(a, { uplo: "U" } as never)).toThrow(/unknown option "uplo"/);
    // torch takes either case.
    expect(eigh(a, { UPLO: "u" as "U" }).eigenvalues.shape).toEqual([4]);
  });

  itNative("lapack-eigh runs UPLO U on a batch of transposed views", () => {
    const a = randn([3, 5, 5], { seed: 4, dtype: "float64" });
    // The lower triangle of Aᵀ is A's upper one.
    const ref = withKernelPriority("eigh", ["reference"], () => eigh(a.transpose(-2, -1)));
    const got = only("eigh", "lapack-eigh", () => eigh(a, { UPLO: "U" }));
    expect(maxAbsDiff(got.eigenvalues, ref.eigenvalues)).toBeLessThan(TOL_F64);
  });
});

describe("luFactor of an exactly singular matrix raises, as torch.linalg.lu_factor", () => {
  const kernels = ["reference", "wasm-luFactor", ...(nativeRuns ? ["lapack-luFactor"] : [])];
  const singular: [number[][] | number[][][], number][] = [
    [
      [
        [1, 2, 3],
        [2, 4, 6],
        [1, 1, 1],
      ],
      3,
    ],
    [
      [
        [0, 0],
        [0, 0],
      ],
      1,
    ],
    [
      [
        [0, 1, 2],
        [0, 3, 4],
        [0, 5, 7],
      ],
      1,
    ],
    // A batch with one singular matrix.
    [
      [
        [
          [2, 1],
          [1, 3],
        ],
        [
          [1, 2],
          [2, 4],
        ],
      ],
      2,
    ],
  ];

  it("every kernel: LinalgError at the first zero pivot, float64 and float32", () => {
    for (const kernel of kernels)
      for (const dtype of ["float64", "float32"] as const)
        for (const [rows, k] of singular) {
          const a = tensor(rows, { dtype });
          let err: unknown;
          try {
            withKernelPriority("luFactor", [kernel], () => luFactor(a));
          } catch (e) {
            err = e;
          }
          expect(err, `${kernel} ${dtype} ${JSON.stringify(rows)}`).toBeInstanceOf(LinalgError);
          expect((err as LinalgError).position).toBe(k);
          expect((err as Error).message).toMatch(/^luFactor: the matrix is singular/);
        }
  });

  it("every kernel: an invertible matrix gives torch's LU and pivots", () => {
    // torch.linalg.lu_factor([[1, 2, 3], [4, 5, 6], [7, 8, 10]]), float64.
    const lu = [7, 8, 10, 1 / 7, 6 / 7, 11 / 7, 4 / 7, 0.5, -0.5];
    for (const kernel of kernels)
      for (const dtype of ["float64", "float32"] as const) {
        const a = tensor(
          [
            [1, 2, 3],
            [4, 5, 6],
            [7, 8, 10],
          ],
          { dtype },
        );
        const r = only("luFactor", kernel, () => luFactor(a));
        expect(Array.from(r.pivots.toFloat64()), kernel).toEqual([3, 3, 3]);
        const got = r.LU.toFloat64();
        const tol = dtype === "float64" ? TOL_F64 : TOL_F32;
        for (let i = 0; i < 9; i++)
          expect(Math.abs(got[i] - lu[i]), `${kernel} ${dtype}`).toBeLessThan(tol);
      }
  });
});
