/**
 * Row-major linear algebra on top of column-major Fortran LAPACK. A row-major matrix is
 * the column-major view of its transpose, which some routines use as is (Cholesky, SVD)
 * and others get through one transposed copy (LU, inverse, QR, eigenvectors).
 * Each function returns LAPACK's info (0 = success) and never throws.
 */
import type { LapackSymbols } from "./library.ts";

const ch = (c: string) => new Uint8Array([c.charCodeAt(0)]);
const int = (v: number) => Int32Array.of(v);
const U = ch("U");
const N = ch("N");
const V = ch("V");

export function transpose(
  a: Float64Array,
  rows: number,
  cols: number,
  out = new Float64Array(rows * cols),
): Float64Array {
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = a[i * cols + j];
  return out;
}

/** Workspace query (lwork = -1) then the call. */
function withWork(call: (work: Float64Array, lwork: Int32Array) => void): void {
  const q = new Float64Array(1);
  call(q, int(-1));
  const n = Math.max(1, Math.ceil(q[0]));
  call(new Float64Array(n), int(n));
}

/** Lower L (row-major, zeroed above) with A = L L^T. Info k > 0: minor k not positive definite. */
export function cholesky(
  lp: LapackSymbols,
  a: Float64Array,
  n: number,
): { l: Float64Array; info: number } {
  // Row-major A is col-major A^T = A; dpotrf("U") leaves U with A = U^T U in the col-major upper
  // triangle, which read row-major is the lower triangle of U^T = L.
  const l = Float64Array.from(a);
  const info = int(0);
  if (n > 0) lp.dpotrf_(U, int(n), l, int(n), info, 1n);
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) l[i * n + j] = 0;
  // Reference LAPACK stops at a NaN pivot (DISNAN); OpenBLAS's own potrf does not and
  // returns info 0 with NaNs in L. Report the first NaN pivot as LAPACK would.
  if (info[0] === 0) {
    for (let j = 0; j < n; j++) if (Number.isNaN(l[j * n + j])) return { l, info: j + 1 };
  }
  return { l, info: info[0] };
}

/** Packed row-major LU of A with 1-based pivots (getrf's convention), as P A = L U. */
export function luFactor(
  lp: LapackSymbols,
  a: Float64Array,
  n: number,
): { lu: Float64Array; pivots: Int32Array; info: number } {
  const cm = transpose(a, n, n);
  const pivots = new Int32Array(n);
  const info = int(0);
  if (n > 0) lp.dgetrf_(int(n), int(n), cm, int(n), pivots, info);
  return { lu: transpose(cm, n, n), pivots, info: info[0] };
}

/** X with A X = B; B is n x nrhs row-major. */
export function solve(
  lp: LapackSymbols,
  a: Float64Array,
  n: number,
  b: Float64Array,
  nrhs: number,
): { x: Float64Array; info: number } {
  const cm = transpose(a, n, n);
  const pivots = new Int32Array(Math.max(n, 1));
  const info = int(0);
  if (n > 0) lp.dgetrf_(int(n), int(n), cm, int(n), pivots, info);
  if (info[0] !== 0 || n === 0) return { x: new Float64Array(n * nrhs), info: info[0] };
  const bc = transpose(b, n, nrhs);
  lp.dgetrs_(N, int(n), int(nrhs), cm, int(n), pivots, bc, int(n), info, 1n);
  return { x: transpose(bc, nrhs, n), info: info[0] };
}

/**
 * inv(A). A goes to LAPACK column-major (one transposed copy) so that getrf factors A
 * itself, as luFactor, solve and torch do: factoring A^T (the row-major array as is)
 * pivots differently, so a nearly singular A whose LU meets an exact zero pivot (torch
 * raises) came back "inverted", and the reverse, and info named another pivot.
 */
export function inv(
  lp: LapackSymbols,
  a: Float64Array,
  n: number,
): { out: Float64Array; info: number } {
  if (n === 0) return { out: new Float64Array(0), info: 0 };
  const cm = transpose(a, n, n);
  const pivots = new Int32Array(n);
  const info = int(0);
  lp.dgetrf_(int(n), int(n), cm, int(n), pivots, info);
  if (info[0] !== 0) return { out: cm, info: info[0] };
  withWork((w, lw) => lp.dgetri_(int(n), cm, int(n), pivots, w, lw, info));
  return { out: transpose(cm, n, n), info: info[0] };
}

/** Householder QR (LAPACK signs). Reduced: Q m x k, R k x n; complete: Q m x m, R m x n. */
export function qr(
  lp: LapackSymbols,
  a: Float64Array,
  m: number,
  n: number,
  complete: boolean,
): { q: Float64Array; r: Float64Array; info: number } {
  const k = Math.min(m, n);
  const qCols = complete ? m : k;
  const rRows = complete ? m : k;
  const lda = Math.max(1, m);
  // Column-major m x max(n, qCols): the factored A, later overwritten by Q.
  const cols = Math.max(n, qCols);
  const cm = new Float64Array(lda * Math.max(cols, 1));
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) cm[j * lda + i] = a[i * n + j];
  const tau = new Float64Array(Math.max(k, 1));
  const info = int(0);
  if (m > 0 && n > 0)
    withWork((w, lw) => lp.dgeqrf_(int(m), int(n), cm, int(lda), tau, w, lw, info));
  const r = new Float64Array(rRows * n);
  for (let i = 0; i < rRows; i++)
    for (let j = i; j < n; j++) r[i * n + j] = i < m ? cm[j * lda + i] : 0;
  if (m > 0 && qCols > 0) {
    if (k === 0) {
      cm.fill(0);
      for (let i = 0; i < Math.min(m, qCols); i++) cm[i * lda + i] = 1;
    } else
      withWork((w, lw) => lp.dorgqr_(int(m), int(qCols), int(k), cm, int(lda), tau, w, lw, info));
  }
  const q = new Float64Array(m * qCols);
  for (let i = 0; i < m; i++) for (let j = 0; j < qCols; j++) q[i * qCols + j] = cm[j * lda + i];
  return { q, r, info: info[0] };
}

/** Symmetric eigendecomposition from the lower triangle: ascending values, vectors as columns. */
export function eigh(
  lp: LapackSymbols,
  a: Float64Array,
  n: number,
): { values: Float64Array; vectors: Float64Array; info: number } {
  // Row-major lower triangle = col-major upper triangle.
  const cm = Float64Array.from(a);
  const w = new Float64Array(n);
  const info = int(0);
  if (n > 0) {
    const qw = new Float64Array(1);
    const qi = new Int32Array(1);
    lp.dsyevd_(V, U, int(n), cm, int(n), w, qw, int(-1), qi, int(-1), info, 1n, 1n);
    const lwork = Math.max(1, Math.ceil(qw[0]));
    const liwork = Math.max(1, qi[0]);
    lp.dsyevd_(
      V,
      U,
      int(n),
      cm,
      int(n),
      w,
      new Float64Array(lwork),
      int(lwork),
      new Int32Array(liwork),
      int(liwork),
      info,
      1n,
      1n,
    );
  }
  // Eigenvectors come back as col-major columns: transpose to row-major with vectors as columns.
  return { values: w, vectors: transpose(cm, n, n), info: info[0] };
}

/**
 * SVD by divide and conquer. Row-major A (m x n) is col-major A^T (n x m) = V S U^T, so
 * LAPACK's "U" of A^T read row-major is Vh, and its "VT" read row-major is U.
 */
export function svd(
  lp: LapackSymbols,
  a: Float64Array,
  m: number,
  n: number,
  full: boolean,
): { u: Float64Array; s: Float64Array; vh: Float64Array; info: number } {
  const k = Math.min(m, n);
  const uCols = full ? m : k;
  const vhRows = full ? n : k;
  const s = new Float64Array(k);
  const u = new Float64Array(m * uCols);
  const vh = new Float64Array(vhRows * n);
  const info = int(0);
  if (k === 0) {
    // Empty: the full bases are identities.
    for (let i = 0; i < Math.min(m, uCols); i++) u[i * uCols + i] = 1;
    for (let i = 0; i < Math.min(vhRows, n); i++) vh[i * n + i] = 1;
    return { u, s, vh, info: 0 };
  }
  const at = Float64Array.from(a); // col-major n x m, lda = n
  const job = ch(full ? "A" : "S");
  // LAPACK's U (n x vhRows, ldu = n) is our Vh read row-major; its VT (uCols x m, ldvt = uCols) is our U.
  const iwork = new Int32Array(8 * k);
  withWork((w, lw) =>
    lp.dgesdd_(
      job,
      int(n),
      int(m),
      at,
      int(n),
      s,
      vh,
      int(n),
      u,
      int(uCols),
      w,
      lw,
      iwork,
      info,
      1n,
    ),
  );
  return { u, s, vh, info: info[0] };
}
