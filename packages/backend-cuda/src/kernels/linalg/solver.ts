/**
 * torch.linalg on cuSOLVER: cholesky (potrf), luFactor (getrf), solve (getrf + getrs),
 * inv (getrf + getrs against I), qr (geqrf + orgqr), eigh (syevd), svd (gesvd). cuSOLVER is
 * column-major: each matrix is gathered into a column-major scratch buffer by the copy2d
 * kernel (any input strides) and results are copied back row-major; batches loop over
 * matrices on the device's stream. devInfo is read back once per call and failures raise
 * the same LinalgErrors as every other backend. cuda.preferredLinalgLibrary = "magma" makes
 * these kernels refuse unless libmagma is found (Backplane has no MAGMA kernels: with MAGMA
 * found, cuSOLVER still runs, and backends.cuda.linalgLibraryStatus() says so).
 */
import { bytesPerElement, empty, LinalgError, linalgFailure, type Tensor } from "@backplane/core";
import {
  batchOffsets,
  type KernelDefinition,
  type LinalgParams,
  leadingBroadcastStrides,
  qrShapes,
  solveOutputShape,
  svdShapes,
} from "@backplane/core/backend";
import { launchCopy2d } from "../../copy2d.ts";
import { check } from "../../errors.ts";
import type { CusolverSymbols } from "../../layer.ts";
import { LIBRARY_ENUMS as X } from "../../native/library-api.ts";
import { type CudaRuntime, type DeviceScratch, grid1d } from "../../runtime.ts";
import { cudaStatus, currentRuntime } from "../../state.ts";
import { dataPtr, deviceOf, storagePtr } from "../../tensors.ts";

type Prec = "S" | "D";

interface Ctx {
  rt: CudaRuntime;
  s: DeviceScratch;
  device: number;
  lib: CusolverSymbols;
  handle: bigint;
  prec: Prec;
  bytes: number;
  batch: number;
}

/** Column-major copy of each matrix of a [..., rows, cols] tensor: ld = rows. */
function toColumnMajor(c: Ctx, t: Tensor, rows: number, cols: number, swap = false): bigint {
  const dst = c.s.alloc(Math.max(1, c.batch * rows * cols * c.bytes));
  const rs = t.strides[t.rank - 2] ?? 0;
  const cs = t.strides[t.rank - 1] ?? 0;
  const [off] = batchOffsets(t.shape.slice(0, -2), [t.strides.slice(0, -2)]) as [Float64Array];
  const offsets = off.length === c.batch ? off : new Float64Array(c.batch).fill(off[0] ?? 0);
  copy2d(
    c,
    dst,
    storagePtr(t),
    offsets.map((o) => o + t.offset),
    rows,
    cols,
    swap ? cs : rs,
    swap ? rs : cs,
    rows * cols,
    1,
    rows,
  );
  return dst;
}

/** Row-major [batch, rows, cols] into `dst` from column-major matrices (ld, batch stride). */
function fromColumnMajor(
  c: Ctx,
  dst: bigint,
  src: bigint,
  rows: number,
  cols: number,
  ld: number,
  srcBatch: number,
): void {
  copy2dUniform(c, dst, src, srcBatch, rows, cols, 1, ld, rows * cols, cols, 1);
}

function copy2d(
  c: Ctx,
  dst: bigint,
  src: bigint,
  offsets: Float64Array,
  rows: number,
  cols: number,
  sRs: number,
  sCs: number,
  dBatch: number,
  dRs: number,
  dCs: number,
): void {
  const table = c.s.upload(BigInt64Array.from(offsets, (o) => BigInt(o)));
  launchCopy(c, dst, src, table, 0, rows, cols, sRs, sCs, dBatch, dRs, dCs);
}

function copy2dUniform(
  c: Ctx,
  dst: bigint,
  src: bigint,
  srcBatch: number,
  rows: number,
  cols: number,
  sRs: number,
  sCs: number,
  dBatch: number,
  dRs: number,
  dCs: number,
): void {
  launchCopy(c, dst, src, 0n, srcBatch, rows, cols, sRs, sCs, dBatch, dRs, dCs);
}

function launchCopy(
  c: Ctx,
  dst: bigint,
  src: bigint,
  table: bigint,
  srcBatch: number,
  rows: number,
  cols: number,
  sRs: number,
  sCs: number,
  dBatch: number,
  dRs: number,
  dCs: number,
): void {
  launchCopy2d(c.rt, c.device, c.bytes, {
    dst,
    src,
    table,
    srcBatch,
    batch: c.batch,
    rows,
    cols,
    srcRowStride: sRs,
    srcColStride: sCs,
    dstBatch: dBatch,
    dstRowStride: dRs,
    dstColStride: dCs,
  });
}

function triZero(c: Ctx, ptr: bigint, rows: number, cols: number, upper: boolean): void {
  const count = c.batch * rows * cols;
  if (count === 0) return;
  c.rt.launch(
    c.device,
    c.bytes === 8 ? "tri_zero_f64" : "tri_zero_f32",
    grid1d(count),
    [256, 1, 1],
    0,
    [
      { type: "ptr", value: ptr },
      { type: "i64", value: rows },
      { type: "i64", value: cols },
      { type: "i64", value: c.batch },
      { type: "i32", value: upper ? 1 : 0 },
    ],
  );
}

function lwork(
  c: Ctx,
  call: string,
  query: (out: Int32Array) => number,
): { ptr: bigint; n: number } {
  const out = new Int32Array(1);
  check("cusolver", call, query(out));
  const n = Math.max(1, out[0]!);
  return { ptr: c.s.alloc(n * c.bytes), n };
}

/** devInfo of every matrix (one synchronous read). */
function readInfo(c: Ctx, info: bigint): Int32Array {
  const out = new Int32Array(c.batch);
  if (c.batch > 0) c.rt.driver.copyDtoH(c.device, out, info);
  return out;
}

function firstFailure(info: Int32Array, op: string): number {
  for (const v of info) {
    if (v < 0) throw new LinalgError(op, `cuSOLVER rejected argument ${-v} (an internal error)`);
    if (v > 0) return v;
  }
  return 0;
}

function context(p: LinalgParams): Ctx & { release(): void } {
  const rt = currentRuntime();
  const device = deviceOf(p.a);
  const { handle, lib } = rt.cusolver(device);
  const s = rt.scratchFor(device);
  return {
    rt,
    s,
    device,
    lib,
    handle,
    prec: p.dtype === "float64" ? "D" : "S",
    bytes: bytesPerElement(p.dtype),
    batch: p.batchShape.reduce((a, b) => a * b, 1),
    release: () => s.release(),
  };
}

function withContext<R>(p: LinalgParams, fn: (c: Ctx) => R): R {
  const c = context(p);
  try {
    return fn(c);
  } finally {
    c.release();
  }
}

/** `batch` n x n identity matrices at `ptr` (the eye kernels). */
function eye(
  rt: CudaRuntime,
  device: number,
  bytes: number,
  ptr: bigint,
  n: number,
  batch: number,
): void {
  const count = batch * n * n;
  if (count === 0) return;
  rt.launch(device, bytes === 8 ? "eye_f64" : "eye_f32", grid1d(count), [256, 1, 1], 0, [
    { type: "ptr", value: ptr },
    { type: "i64", value: n },
    { type: "i64", value: batch },
  ]);
}

const at = (base: bigint, index: number, elems: number, bytes: number) =>
  base + BigInt(index * elems * bytes);

function cholesky(p: LinalgParams): Tensor {
  const n = p.n;
  const out = empty([...p.a.shape], { dtype: p.dtype, device: p.a.device });
  if (out.numel === 0) return out;
  return withContext(p, (c) => {
    const a = toColumnMajor(c, p.a, n, n);
    const info = c.s.alloc(c.batch * 4);
    const L = X.CUBLAS_FILL_MODE_LOWER;
    const w =
      c.prec === "S"
        ? lwork(c, "cusolverDnSpotrf_bufferSize", (o) =>
            c.lib.cusolverDnSpotrf_bufferSize(c.handle, L, n, a, n, o),
          )
        : lwork(c, "cusolverDnDpotrf_bufferSize", (o) =>
            c.lib.cusolverDnDpotrf_bufferSize(c.handle, L, n, a, n, o),
          );
    for (let b = 0; b < c.batch; b++) {
      const ab = at(a, b, n * n, c.bytes);
      const ib = at(info, b, 1, 4);
      if (c.prec === "S")
        check(
          "cusolver",
          "cusolverDnSpotrf",
          c.lib.cusolverDnSpotrf(c.handle, L, n, ab, n, w.ptr, w.n, ib),
        );
      else
        check(
          "cusolver",
          "cusolverDnDpotrf",
          c.lib.cusolverDnDpotrf(c.handle, L, n, ab, n, w.ptr, w.n, ib),
        );
    }
    const bad = firstFailure(readInfo(c, info), "cholesky");
    if (bad > 0) throw linalgFailure.notPositiveDefinite("cholesky", bad);
    const o = dataPtr(out);
    // L is in the lower triangle, column-major. Read row-major that buffer is L^T = U.
    if (p.upper) c.rt.driver.copyDtoD(c.device, o, a, c.batch * n * n * c.bytes);
    else fromColumnMajor(c, o, a, n, n, n, n * n);
    triZero(c, o, n, n, p.upper);
    return out;
  });
}

/** getrf of every matrix in place (column-major `a`), pivots into `ipiv` ([batch, n] int32). */
function getrf(c: Ctx, a: bigint, n: number, ipiv: bigint, info: bigint): void {
  const w =
    c.prec === "S"
      ? lwork(c, "cusolverDnSgetrf_bufferSize", (o) =>
          c.lib.cusolverDnSgetrf_bufferSize(c.handle, n, n, a, n, o),
        )
      : lwork(c, "cusolverDnDgetrf_bufferSize", (o) =>
          c.lib.cusolverDnDgetrf_bufferSize(c.handle, n, n, a, n, o),
        );
  for (let b = 0; b < c.batch; b++) {
    const ab = at(a, b, n * n, c.bytes);
    const pb = at(ipiv, b, n, 4);
    const ib = at(info, b, 1, 4);
    if (c.prec === "S")
      check(
        "cusolver",
        "cusolverDnSgetrf",
        c.lib.cusolverDnSgetrf(c.handle, n, n, ab, n, w.ptr, pb, ib),
      );
    else
      check(
        "cusolver",
        "cusolverDnDgetrf",
        c.lib.cusolverDnDgetrf(c.handle, n, n, ab, n, w.ptr, pb, ib),
      );
  }
}

function getrs(
  c: Ctx,
  a: bigint,
  n: number,
  ipiv: bigint,
  b: bigint,
  nrhs: number,
  info: bigint,
): void {
  const N = X.CUBLAS_OP_N;
  for (let i = 0; i < c.batch; i++) {
    const ai = at(a, i, n * n, c.bytes);
    const pi = at(ipiv, i, n, 4);
    const bi = at(b, i, n * nrhs, c.bytes);
    const ii = at(info, i, 1, 4);
    if (c.prec === "S")
      check(
        "cusolver",
        "cusolverDnSgetrs",
        c.lib.cusolverDnSgetrs(c.handle, N, n, nrhs, ai, n, pi, bi, n, ii),
      );
    else
      check(
        "cusolver",
        "cusolverDnDgetrs",
        c.lib.cusolverDnDgetrs(c.handle, N, n, nrhs, ai, n, pi, bi, n, ii),
      );
  }
}

function luFactor(p: LinalgParams): { LU: Tensor; pivots: Tensor } {
  const n = p.n;
  const LU = empty([...p.a.shape], { dtype: p.dtype, device: p.a.device });
  const pivots = empty([...p.batchShape, n], { dtype: "int32", device: p.a.device });
  if (LU.numel === 0) return { LU, pivots };
  return withContext(p, (c) => {
    const a = toColumnMajor(c, p.a, n, n);
    const info = c.s.alloc(c.batch * 4);
    getrf(c, a, n, dataPtr(pivots), info);
    // torch.linalg.lu_factor raises on an exactly zero pivot (only lu_factor_ex does not).
    const bad = firstFailure(readInfo(c, info), "luFactor");
    if (bad > 0) throw linalgFailure.singular("luFactor", bad);
    fromColumnMajor(c, dataPtr(LU), a, n, n, n, n * n);
    return { LU, pivots };
  });
}

function solveLike(p: LinalgParams, op: "solve" | "inv"): Tensor {
  const n = p.n;
  const nrhs = op === "inv" ? n : p.bVector ? 1 : p.b!.shape[p.b!.rank - 1]!;
  const shape = op === "inv" ? [...p.a.shape] : solveOutputShape(p, nrhs);
  const out = empty(shape, { dtype: p.dtype, device: p.a.device });
  if (out.numel === 0) return out;
  return withContext(p, (c) => {
    const a = toColumnMajor(c, p.a, n, n);
    const info = c.s.alloc(c.batch * 4);
    const ipiv = c.s.alloc(c.batch * n * 4);
    getrf(c, a, n, ipiv, info);
    const bad = firstFailure(readInfo(c, info), op);
    if (bad > 0) throw linalgFailure.singular(op, bad);
    let rhs: bigint;
    if (op === "inv") {
      rhs = c.s.alloc(c.batch * n * n * c.bytes);
      eye(c.rt, c.device, c.bytes, rhs, n, c.batch);
    } else {
      const b = p.b!;
      // B as n x nrhs matrices (a vector is one column); a B without batch dims is shared.
      const bRows = b.strides[p.bVector ? b.rank - 1 : b.rank - 2] ?? 0;
      const bCols = p.bVector ? 0 : (b.strides[b.rank - 1] ?? 0);
      const lead = b.shape.slice(0, p.bVector ? -1 : -2);
      const leadStrides = b.strides.slice(0, p.bVector ? -1 : -2);
      const st = leadingBroadcastStrides(lead, leadStrides, p.batchShape);
      const [off] = batchOffsets(p.batchShape, [st]) as [Float64Array];
      rhs = c.s.alloc(c.batch * n * nrhs * c.bytes);
      copy2d(
        c,
        rhs,
        storagePtr(b),
        off.map((o) => o + b.offset),
        n,
        nrhs,
        bRows,
        bCols,
        n * nrhs,
        1,
        n,
      );
    }
    getrs(c, a, n, ipiv, rhs, nrhs, info);
    firstFailure(readInfo(c, info), op);
    fromColumnMajor(c, dataPtr(out), rhs, n, nrhs, n, n * nrhs);
    return out;
  });
}

function qr(p: LinalgParams): { Q: Tensor; R: Tensor } {
  const { m, n } = p;
  const k = Math.min(m, n);
  const shapes = qrShapes(p);
  const Q = empty(shapes.q, { dtype: p.dtype, device: p.a.device });
  const R = empty(shapes.r, { dtype: p.dtype, device: p.a.device });
  if (Q.numel === 0 && R.numel === 0) return { Q, R };
  const qCols = shapes.q[shapes.q.length - 1]!;
  const rRows = shapes.r[shapes.r.length - 2]!;
  return withContext(p, (c) => {
    const a = toColumnMajor(c, p.a, m, n);
    const tau = c.s.alloc(Math.max(1, c.batch * k) * c.bytes);
    const info = c.s.alloc(c.batch * 4);
    const w =
      c.prec === "S"
        ? lwork(c, "cusolverDnSgeqrf_bufferSize", (o) =>
            c.lib.cusolverDnSgeqrf_bufferSize(c.handle, m, n, a, m, o),
          )
        : lwork(c, "cusolverDnDgeqrf_bufferSize", (o) =>
            c.lib.cusolverDnDgeqrf_bufferSize(c.handle, m, n, a, m, o),
          );
    for (let b = 0; b < c.batch; b++) {
      const ab = at(a, b, m * n, c.bytes);
      const tb = at(tau, b, k, c.bytes);
      const ib = at(info, b, 1, 4);
      if (c.prec === "S")
        check(
          "cusolver",
          "cusolverDnSgeqrf",
          c.lib.cusolverDnSgeqrf(c.handle, m, n, ab, m, tb, w.ptr, w.n, ib),
        );
      else
        check(
          "cusolver",
          "cusolverDnDgeqrf",
          c.lib.cusolverDnDgeqrf(c.handle, m, n, ab, m, tb, w.ptr, w.n, ib),
        );
    }
    firstFailure(readInfo(c, info), "qr");
    // R: the upper triangle of the first rRows rows.
    fromColumnMajor(c, dataPtr(R), a, rRows, n, m, m * n);
    triZero(c, dataPtr(R), rRows, n, true);
    // Q: orgqr on an m x qCols buffer that starts with the reflectors.
    const q = c.s.alloc(Math.max(1, c.batch * m * qCols) * c.bytes);
    c.rt.driver.memset(c.device, q, 0, c.batch * m * qCols * c.bytes);
    const keep = Math.min(n, qCols);
    copy2dUniform(c, q, a, m * n, m, keep, 1, m, m * qCols, 1, m);
    const w2 =
      c.prec === "S"
        ? lwork(c, "cusolverDnSorgqr_bufferSize", (o) =>
            c.lib.cusolverDnSorgqr_bufferSize(c.handle, m, qCols, k, q, m, tau, o),
          )
        : lwork(c, "cusolverDnDorgqr_bufferSize", (o) =>
            c.lib.cusolverDnDorgqr_bufferSize(c.handle, m, qCols, k, q, m, tau, o),
          );
    for (let b = 0; b < c.batch; b++) {
      const qb = at(q, b, m * qCols, c.bytes);
      const tb = at(tau, b, k, c.bytes);
      const ib = at(info, b, 1, 4);
      if (c.prec === "S")
        check(
          "cusolver",
          "cusolverDnSorgqr",
          c.lib.cusolverDnSorgqr(c.handle, m, qCols, k, qb, m, tb, w2.ptr, w2.n, ib),
        );
      else
        check(
          "cusolver",
          "cusolverDnDorgqr",
          c.lib.cusolverDnDorgqr(c.handle, m, qCols, k, qb, m, tb, w2.ptr, w2.n, ib),
        );
    }
    firstFailure(readInfo(c, info), "qr");
    fromColumnMajor(c, dataPtr(Q), q, m, qCols, m, m * qCols);
    return { Q, R };
  });
}

function eigh(p: LinalgParams): { eigenvalues: Tensor; eigenvectors: Tensor } {
  const n = p.n;
  const eigenvalues = empty([...p.batchShape, n], { dtype: p.dtype, device: p.a.device });
  const eigenvectors = empty([...p.a.shape], { dtype: p.dtype, device: p.a.device });
  if (eigenvectors.numel === 0) return { eigenvalues, eigenvectors };
  return withContext(p, (c) => {
    const a = toColumnMajor(c, p.a, n, n);
    const info = c.s.alloc(c.batch * 4);
    const w = dataPtr(eigenvalues);
    const V = X.CUSOLVER_EIG_MODE_VECTOR;
    const L = X.CUBLAS_FILL_MODE_LOWER;
    const wk =
      c.prec === "S"
        ? lwork(c, "cusolverDnSsyevd_bufferSize", (o) =>
            c.lib.cusolverDnSsyevd_bufferSize(c.handle, V, L, n, a, n, w, o),
          )
        : lwork(c, "cusolverDnDsyevd_bufferSize", (o) =>
            c.lib.cusolverDnDsyevd_bufferSize(c.handle, V, L, n, a, n, w, o),
          );
    for (let b = 0; b < c.batch; b++) {
      const ab = at(a, b, n * n, c.bytes);
      const wb = at(w, b, n, c.bytes);
      const ib = at(info, b, 1, 4);
      if (c.prec === "S")
        check(
          "cusolver",
          "cusolverDnSsyevd",
          c.lib.cusolverDnSsyevd(c.handle, V, L, n, ab, n, wb, wk.ptr, wk.n, ib),
        );
      else
        check(
          "cusolver",
          "cusolverDnDsyevd",
          c.lib.cusolverDnDsyevd(c.handle, V, L, n, ab, n, wb, wk.ptr, wk.n, ib),
        );
    }
    const bad = firstFailure(readInfo(c, info), "eigh");
    if (bad > 0)
      throw linalgFailure.didNotConverge(
        "eigh",
        `${bad} off-diagonal elements did not converge to zero`,
        bad,
      );
    fromColumnMajor(c, dataPtr(eigenvectors), a, n, n, n, n * n);
    return { eigenvalues, eigenvectors };
  });
}

const JOB = { A: 65, S: 83 } as const;

/**
 * svd of m x n matrices with m or n zero, without cuSOLVER (gesvd takes no empty dimension):
 * S is empty, and U (m x m) and Vh (n x n) are identities with fullMatrices (the core's
 * reference completes an empty basis to the standard one, as torch does), empty otherwise.
 */
function emptySvd(
  p: LinalgParams,
  U: Tensor,
  S: Tensor,
  Vh: Tensor,
): { U: Tensor; S: Tensor; Vh: Tensor } {
  const rt = currentRuntime();
  const device = deviceOf(p.a);
  const bytes = bytesPerElement(p.dtype);
  const batch = p.batchShape.reduce((a, b) => a * b, 1);
  if (p.fullMatrices) {
    eye(rt, device, bytes, dataPtr(U), p.m, batch);
    eye(rt, device, bytes, dataPtr(Vh), p.n, batch);
  }
  return { U, S, Vh };
}

// Long: cuSOLVER's gesvd sequence (buffer query, call, info check) over the batch, released in one finally.
function svd(p: LinalgParams): { U: Tensor; S: Tensor; Vh: Tensor } {
  const { m, n } = p;
  const k = Math.min(m, n);
  const shapes = svdShapes(p);
  const U = empty(shapes.u, { dtype: p.dtype, device: p.a.device });
  const S = empty(shapes.s, { dtype: p.dtype, device: p.a.device });
  const Vh = empty(shapes.vh, { dtype: p.dtype, device: p.a.device });
  if (U.numel === 0 && S.numel === 0 && Vh.numel === 0) return { U, S, Vh };
  if (m * n === 0) return emptySvd(p, U, S, Vh);
  // gesvd needs rows >= cols: a wide A is factored as A^T = U' S V'^T, so U = V', Vh = U'^T.
  const wide = m < n;
  const rows = wide ? n : m;
  const cols = wide ? m : n;
  const job = p.fullMatrices ? JOB.A : JOB.S;
  const uCols = p.fullMatrices ? rows : cols;
  // Long: the body of the gesvd sequence above.
  return withContext(p, (c) => {
    const a = toColumnMajor(c, p.a, rows, cols, wide);
    const info = c.s.alloc(c.batch * 4);
    const u = c.s.alloc(Math.max(1, c.batch * rows * uCols) * c.bytes);
    const vt = c.s.alloc(Math.max(1, c.batch * cols * cols) * c.bytes);
    const rwork = c.s.alloc(Math.max(1, k) * c.bytes);
    const sPtr = dataPtr(S);
    const wk =
      c.prec === "S"
        ? lwork(c, "cusolverDnSgesvd_bufferSize", (o) =>
            c.lib.cusolverDnSgesvd_bufferSize(c.handle, rows, cols, o),
          )
        : lwork(c, "cusolverDnDgesvd_bufferSize", (o) =>
            c.lib.cusolverDnDgesvd_bufferSize(c.handle, rows, cols, o),
          );
    for (let b = 0; b < c.batch; b++) {
      const ab = at(a, b, rows * cols, c.bytes);
      const sb = at(sPtr, b, k, c.bytes);
      const ub = at(u, b, rows * uCols, c.bytes);
      const vb = at(vt, b, cols * cols, c.bytes);
      const ib = at(info, b, 1, 4);
      if (c.prec === "S")
        check(
          "cusolver",
          "cusolverDnSgesvd",
          c.lib.cusolverDnSgesvd(
            c.handle,
            job,
            job,
            rows,
            cols,
            ab,
            rows,
            sb,
            ub,
            rows,
            vb,
            cols,
            wk.ptr,
            wk.n,
            rwork,
            ib,
          ),
        );
      else
        check(
          "cusolver",
          "cusolverDnDgesvd",
          c.lib.cusolverDnDgesvd(
            c.handle,
            job,
            job,
            rows,
            cols,
            ab,
            rows,
            sb,
            ub,
            rows,
            vb,
            cols,
            wk.ptr,
            wk.n,
            rwork,
            ib,
          ),
        );
    }
    const bad = firstFailure(readInfo(c, info), "svd");
    if (bad > 0)
      throw linalgFailure.didNotConverge("svd", `${bad} superdiagonals did not converge`, bad);
    if (wide) {
      // U = V' (m x m): VT' column-major read row-major. Vh = U'^T (uCols x n): U' read row-major.
      c.rt.driver.copyDtoD(c.device, dataPtr(U), vt, c.batch * cols * cols * c.bytes);
      c.rt.driver.copyDtoD(c.device, dataPtr(Vh), u, c.batch * rows * uCols * c.bytes);
    } else {
      fromColumnMajor(c, dataPtr(U), u, rows, uCols, rows, rows * uCols);
      fromColumnMajor(c, dataPtr(Vh), vt, cols, cols, cols, cols * cols);
    }
    return { U, S, Vh };
  });
}

/** Whether the linalg kernels may run under cuda.preferredLinalgLibrary. */
export function linalgEnabled(flag: (key: string) => unknown): true | string {
  if (flag("cuda.preferredLinalgLibrary") !== "magma") return true;
  const magma = cudaStatus().magma;
  if (magma.path) return true;
  return `cuda.preferredLinalgLibrary is "magma", which is unavailable: ${magma.reason ?? "libmagma not found"}`;
}

const INT_MAX = 2 ** 31 - 1;

/**
 * Why cuSOLVER's 32-bit API cannot take these sizes: m, n, lda, the right-hand sides and
 * the workspace lengths are C ints, and a matrix of 2^31 elements or more makes them wrap.
 */
export function solverSizeProblem(p: LinalgParams): string | undefined {
  const nrhs = p.b && !p.bVector ? (p.b.shape[p.b.rank - 1] ?? 1) : 1;
  const worst = Math.max(p.m * p.n, p.n * nrhs);
  if (worst > INT_MAX)
    return `cuSOLVER's 32-bit API takes int sizes: a ${p.m}x${p.n} matrix${nrhs > 1 ? ` with ${nrhs} right-hand sides` : ""} has ${worst} elements, more than 2^31 - 1`;
  return undefined;
}

function supports(p: LinalgParams): true | string {
  const rt = currentRuntime();
  if (!rt.layer.libs.cusolver)
    return `cuSOLVER is not loaded: ${rt.layer.info.cusolver?.reason ?? "await backends.ready()"}`;
  return solverSizeProblem(p) ?? true;
}

export function linalgKernels(): KernelDefinition<LinalgParams>[] {
  const common = {
    device: "cuda",
    dtypes: ["float32", "float64"] as const,
    deterministic: true,
    priority: 100,
    enabled: linalgEnabled,
    supports,
  };
  return [
    { ...common, op: "cholesky", name: "cusolver-potrf", run: cholesky },
    { ...common, op: "luFactor", name: "cusolver-getrf", run: luFactor },
    { ...common, op: "solve", name: "cusolver-getrs", run: (p) => solveLike(p, "solve") },
    { ...common, op: "inv", name: "cusolver-getri", run: (p) => solveLike(p, "inv") },
    { ...common, op: "qr", name: "cusolver-geqrf", run: qr },
    { ...common, op: "eigh", name: "cusolver-syevd", run: eigh },
    { ...common, op: "svd", name: "cusolver-gesvd", run: svd },
  ];
}
