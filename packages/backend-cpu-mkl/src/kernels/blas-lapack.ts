/**
 * Native kernels: matmul through cblas_?gemm (batched by looping over broadcast batch
 * offsets, transposed operands passed as transposes), linalg through LAPACK. Tensors live
 * in the CPU device's WASM memory; their typed views go to the library as pointers, so
 * nothing is copied for GEMM.
 */

import { type DType, empty, getFlag, linalgFailure, runtime, type Tensor } from "@backplane/core";
import {
  type AnyKernelDefinition,
  emitVerbose,
  type KernelDefinition,
  type LinalgParams,
  type MatmulParams,
  qrShapes,
  solveOutputShape,
  svdShapes,
} from "@backplane/core/backend";
import { matricesOf, pivotsTensor, rightHandSides, stackMatrices } from "@backplane/core/cpu";
import * as lapack from "../native/lapack.ts";
import type { LapackSymbols, LoadedBlas } from "../native/library.ts";
import { planGemm } from "./gemm-layout.ts";

const ROW_MAJOR = 101;
const NO_TRANS = 111;
const TRANS = 112;

/** The library the kernels call; set once the backend has initialised. */
export const state: { lib: LoadedBlas | undefined } = { lib: undefined };

function lib(): LoadedBlas {
  if (!state.lib) throw new Error("backend-cpu-mkl: native kernels ran before the library loaded");
  return state.lib;
}

/** mkl.verbose: one line per library call with routine, sizes and time. */
function traced<T>(routine: string, sizes: string, call: () => T): T {
  if (!((getFlag("mkl.verbose") as number) > 0)) return call();
  const t0 = performance.now();
  const r = call();
  emitVerbose(
    `MKL_VERBOSE ${routine}(${sizes}) ${(performance.now() - t0).toFixed(4)}ms ${lib().name}`,
  );
  return r;
}

/**
 * Runs `call` with the library on one thread when `oneThread` is true, restoring the count
 * after. OpenBLAS splits work and picks kernels by thread count, so its float64 results
 * differ in the last bits between 1 and 2 threads (4 of 20 shapes on a Zen 4 here):
 * deterministic mode pins one thread, so the bits do not depend on openmp.numThreads.
 */
export function onLibraryThreads<T>(oneThread: boolean, call: () => T): T {
  const l = lib();
  const threads = oneThread ? (l.getThreads() ?? 1) : 1;
  if (threads <= 1) return call();
  l.setThreads(1);
  try {
    return call();
  } finally {
    l.setThreads(threads);
  }
}

const deterministicMode = (): boolean => getFlag("core.deterministic") === true;

function gemm(p: MatmulParams): Tensor {
  return onLibraryThreads(deterministicMode(), () => gemmOn(p));
}

function gemmOn(p: MatmulParams): Tensor {
  const { m, n } = p;
  const plan = planGemm(p);
  try {
    const out = empty(p.outShape, { dtype: p.dtype });
    if (m === 0 || n === 0) return out;
    try {
      return gemmInto(p, plan, out);
    } catch (e) {
      // A failed call (an FFI error) would otherwise leave the output allocated.
      out.dispose();
      throw e;
    }
  } finally {
    plan.release();
  }
}

/** The products of `plan` into `out` (m, n > 0). */
function gemmInto(p: MatmulParams, plan: ReturnType<typeof planGemm>, out: Tensor): Tensor {
  const { m, n, k } = p;
  const C = out.hostData() as Float32Array | Float64Array;
  if (k === 0) {
    C.fill(0, 0, out.numel);
    return out;
  }
  const A = plan.a.tensor.hostData() as Float32Array | Float64Array;
  const B = plan.b.tensor.hostData() as Float32Array | Float64Array;
  const ta = plan.a.trans ? TRANS : NO_TRANS;
  const tb = plan.b.trans ? TRANS : NO_TRANS;
  const lda = plan.a.ld;
  const ldb = plan.b.ld;
  const s = lib().blas;
  const f32 = p.dtype === "float32";
  const sizes = `${plan.a.trans ? "T" : "N"},${plan.b.trans ? "T" : "N"},${m},${n},${k}`;
  for (let i = 0; i < plan.aOffsets.length; i++) {
    const Ai = A.subarray(plan.aOffsets[i]);
    const Bi = B.subarray(plan.bOffsets[i]);
    const Ci = C.subarray(i * m * n);
    if (f32)
      traced("cblas_sgemm", sizes, () =>
        s.cblas_sgemm(ROW_MAJOR, ta, tb, m, n, k, 1, Ai, lda, Bi, ldb, 0, Ci, n),
      );
    else
      traced("cblas_dgemm", sizes, () =>
        s.cblas_dgemm(ROW_MAJOR, ta, tb, m, n, k, 1, Ai, lda, Bi, ldb, 0, Ci, n),
      );
  }
  return out;
}

/**
 * A LAPACK call, traced. Deno runs FFI calls on a tokio worker thread with a small stack,
 * and OpenBLAS's threaded LAPACK drivers keep a ~540 KB job table on the stack: under
 * `deno test`, dgetrf at n = 256 crashed the process in 2 runs of 6 (segfault in
 * libopenblas, kernel log). Under Deno LAPACK therefore runs on one library thread (GEMM's
 * threaded driver does not crash: 0 in 6 at n up to 1024), and the count is restored after.
 * In deterministic mode LAPACK runs on one thread too (see onLibraryThreads).
 */
function lapackTraced<T>(routine: string, sizes: string, call: () => T): T {
  return onLibraryThreads(runtime().name === "deno" || deterministicMode(), () =>
    traced(routine, sizes, call),
  );
}

function requireLapack(op: string): LapackSymbols {
  const l = lib().lapack;
  if (!l) throw new Error(`${op}: ${lib().name} has no LAPACK`);
  return l;
}

// Long: a table: one kernel definition per LAPACK routine, each a few lines.
function linalgKernels(): KernelDefinition<LinalgParams>[] {
  const k = (op: string, run: (p: LinalgParams) => unknown): KernelDefinition<LinalgParams> => ({
    op,
    name: `lapack-${op}`,
    device: "cpu",
    dtypes: ["float32", "float64"],
    deterministic: true,
    priority: 100,
    verboseFlags: ["mkl.verbose"],
    supports: () =>
      state.lib?.lapack ? true : `${state.lib?.name ?? "the library"} has no LAPACK`,
    run,
  });
  const each = <T>(
    p: LinalgParams,
    rows: number,
    cols: number,
    fn: (a: Float64Array, i: number) => T,
  ): T[] => matricesOf(p.a, rows, cols).map(fn);
  return [
    k("cholesky", (p) => {
      const lp = requireLapack("cholesky");
      const ls = each(p, p.n, p.n, (a) => {
        const r = lapackTraced("dpotrf", `${p.n}`, () => lapack.cholesky(lp, a, p.n));
        if (r.info > 0) throw linalgFailure.notPositiveDefinite("cholesky", r.info);
        return p.upper ? lapack.transpose(r.l, p.n, p.n) : r.l;
      });
      return stackMatrices(ls, [...p.a.shape], p.dtype);
    }),
    k("inv", (p) => {
      const lp = requireLapack("inv");
      const outs = each(p, p.n, p.n, (a) => {
        const r = lapackTraced("dgetrf+dgetri", `${p.n}`, () => lapack.inv(lp, a, p.n));
        if (r.info > 0) throw linalgFailure.singular("inv", r.info);
        return r.out;
      });
      return stackMatrices(outs, [...p.a.shape], p.dtype);
    }),
    k("solve", (p) => {
      const lp = requireLapack("solve");
      const { bs, nrhs } = rightHandSides(p);
      const xs = each(p, p.n, p.n, (a, i) => {
        const r = lapackTraced("dgetrf+dgetrs", `${p.n},${nrhs}`, () =>
          lapack.solve(lp, a, p.n, bs[i], nrhs),
        );
        if (r.info > 0) throw linalgFailure.singular("solve", r.info);
        return r.x;
      });
      return stackMatrices(xs, solveOutputShape(p, nrhs), p.dtype);
    }),
    k("luFactor", (p) => {
      const lp = requireLapack("luFactor");
      const res = each(p, p.n, p.n, (a) => {
        const r = lapackTraced("dgetrf", `${p.n}`, () => lapack.luFactor(lp, a, p.n));
        // torch.linalg.lu_factor raises on an exactly zero pivot, as inv does.
        if (r.info > 0) throw linalgFailure.singular("luFactor", r.info);
        return r;
      });
      return {
        LU: stackMatrices(
          res.map((r) => r.lu),
          [...p.a.shape],
          p.dtype,
        ),
        pivots: pivotsTensor(
          res.map((r) => r.pivots),
          p,
        ),
      };
    }),
    k("qr", (p) => {
      const lp = requireLapack("qr");
      const res = each(p, p.m, p.n, (a) =>
        lapackTraced("dgeqrf+dorgqr", `${p.m},${p.n}`, () =>
          lapack.qr(lp, a, p.m, p.n, p.mode === "complete"),
        ),
      );
      const s = qrShapes(p);
      return {
        Q: stackMatrices(
          res.map((r) => r.q),
          s.q,
          p.dtype,
        ),
        R: stackMatrices(
          res.map((r) => r.r),
          s.r,
          p.dtype,
        ),
      };
    }),
    k("eigh", (p) => {
      const lp = requireLapack("eigh");
      const res = each(p, p.n, p.n, (a) => {
        const r = lapackTraced("dsyevd", `${p.n}`, () => lapack.eigh(lp, a, p.n));
        if (r.info !== 0)
          throw linalgFailure.didNotConverge("eigh", `LAPACK dsyevd returned info ${r.info}`);
        return r;
      });
      return {
        eigenvalues: stackMatrices(
          res.map((r) => r.values),
          [...p.batchShape, p.n],
          p.dtype,
        ),
        eigenvectors: stackMatrices(
          res.map((r) => r.vectors),
          [...p.a.shape],
          p.dtype,
        ),
      };
    }),
    k("svd", (p) => {
      const lp = requireLapack("svd");
      const res = each(p, p.m, p.n, (a) => {
        const r = lapackTraced("dgesdd", `${p.m},${p.n}`, () =>
          lapack.svd(lp, a, p.m, p.n, p.fullMatrices),
        );
        if (r.info !== 0)
          throw linalgFailure.didNotConverge("svd", `LAPACK dgesdd returned info ${r.info}`);
        return r;
      });
      const s = svdShapes(p);
      return {
        U: stackMatrices(
          res.map((r) => r.u),
          s.u,
          p.dtype,
        ),
        S: stackMatrices(
          res.map((r) => r.s),
          s.s,
          p.dtype,
        ),
        Vh: stackMatrices(
          res.map((r) => r.vh),
          s.vh,
          p.dtype,
        ),
      };
    }),
  ];
}

const GEMM_DTYPES: readonly DType[] = ["float32", "float64"];

export function nativeKernels(): AnyKernelDefinition[] {
  return [
    {
      op: "matmul",
      name: "blas-gemm",
      device: "cpu",
      dtypes: GEMM_DTYPES,
      deterministic: true,
      priority: 100,
      verboseFlags: ["mkl.verbose"],
      run: gemm,
    },
    ...linalgKernels(),
  ];
}
