/**
 * Float64 reference implementations of the dense linear algebra kernels.
 *
 * These are the ground truth that faster backends are tested against, so they favour clarity and
 * accuracy over speed. Matrices are row-major Float64Arrays with explicit sizes, one matrix per
 * call. Wherever a convention is visible to the caller it follows LAPACK (and so numpy and torch):
 * getrf pivots, Householder signs in QR, ascending eigenvalues, descending singular values.
 */
import { ArgumentError, LinalgError, linalgFailure } from "../errors.ts";

const EPS = 2 ** -52;
/** The smallest normal float64; below it 1/x overflows. */
const SAFE_MIN = 2 ** -1022;
/** Lifts any subnormal into the normal range without overflowing a value below SAFE_MIN. */
const SUBNORMAL_SCALE = 2 ** 600;

function checkDim(op: string, name: string, value: number): void {
  if (!Number.isInteger(value) || value < 0) {
    throw new ArgumentError(`${op}: ${name} must be a non-negative integer, got ${value}`);
  }
}

function checkLength(op: string, name: string, array: ArrayLike<number>, expected: number): void {
  if (array.length !== expected) {
    throw new ArgumentError(`${op}: ${name} must have ${expected} elements, got ${array.length}`);
  }
}

const singular = linalgFailure.singular;

/** Largest |x| in the array, or NaN when some entry is not finite. */
function maxAbs(a: Float64Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (!Number.isFinite(x)) return Number.NaN;
    if (Math.abs(x) > m) m = Math.abs(x);
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// Cholesky

/**
 * Lower-triangular L with A = L L^T. Reads only the lower triangle of `a` (like potrf with
 * uplo="L"). The strictly upper part of the result is zero.
 *
 * The sums are rounded in LAPACK's unblocked potf2 order, as torch (MKL) does: on a singular
 * positive semidefinite A, whose last pivots are zero but for rounding, that order decides
 * whether it raises. `upper`: `a` is the transpose of an upper triangle (torch's upper=True);
 * potf2 with uplo="U" sums the off-diagonal dot products first (dgemv "T") where uplo="L"
 * subtracts term by term (dgemv "N"). With these orders we raised where torch 2.13 did for
 * 96% of random singular M M^T (integer M, sizes 2 to 12), against 92.5% before.
 */
export function cholesky(a: Float64Array, n: number, upper = false): Float64Array {
  checkDim("cholesky", "n", n);
  checkLength("cholesky", "a", a, n * n);
  const l = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    // What is left of a[j,j] once earlier columns are accounted for; it is the ratio of the
    // leading minors of order j+1 and j, so it is positive exactly when A is positive definite.
    const d = a[j * n + j] - rowDot(l, n, j, j, j);
    if (!(d > 0)) {
      // `!(d > 0)` also catches NaN.
      throw linalgFailure.notPositiveDefinite("cholesky", j + 1);
    }
    const ljj = Math.sqrt(d);
    l[j * n + j] = ljj;
    const r = 1 / ljj; // as potf2; it cannot overflow: ljj >= sqrt(2^-1074) > 2^-538
    for (let i = j + 1; i < n; i++) {
      const s = upper
        ? a[i * n + j] - rowDot(l, n, i, j, j)
        : subtractTerms(a[i * n + j], l, n, i, j);
      l[i * n + j] = s * r;
    }
  }
  return l;
}

/** sum over k < len of l[i,k] l[j,k], added up in order (ddot's order). */
function rowDot(l: Float64Array, n: number, i: number, j: number, len: number): number {
  let s = 0;
  for (let k = 0; k < len; k++) s += l[i * n + k] * l[j * n + k];
  return s;
}

/** x - l[i,0] l[j,0] - l[i,1] l[j,1] - ... over k < j, each term subtracted in turn. */
function subtractTerms(x: number, l: Float64Array, n: number, i: number, j: number): number {
  let s = x;
  for (let k = 0; k < j; k++) s -= l[i * n + k] * l[j * n + k];
  return s;
}

// ---------------------------------------------------------------------------------------------
// LU with partial pivoting

/**
 * PA = LU with partial pivoting, LAPACK getrf convention: `lu` packs the unit lower L below the
 * diagonal and U on and above it; `pivots` is 1-based (row i was swapped with row pivots[i],
 * applied in order i = 0, 1, ...). Like getrf it does not throw on a singular matrix: `info` is 0,
 * or the 1-based index of the first exactly zero pivot, and the factorization is still complete.
 */
export function luFactor(
  a: Float64Array,
  n: number,
): { lu: Float64Array; pivots: Int32Array; info: number } {
  checkDim("luFactor", "n", n);
  checkLength("luFactor", "a", a, n * n);
  const lu = Float64Array.from(a);
  const pivots = new Int32Array(n);
  let info = 0;
  for (let j = 0; j < n; j++) {
    // The first entry of largest magnitude, as idamax picks it.
    let p = j;
    let best = Math.abs(lu[j * n + j]);
    for (let i = j + 1; i < n; i++) {
      const v = Math.abs(lu[i * n + j]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    pivots[j] = p + 1;
    if (lu[p * n + j] !== 0) {
      if (p !== j) {
        for (let c = 0; c < n; c++) {
          const t = lu[j * n + c];
          lu[j * n + c] = lu[p * n + c];
          lu[p * n + c] = t;
        }
      }
      scaleBelowPivot(lu, n, j);
    } else if (info === 0) {
      // The column below the diagonal is already zero, so L's column is zero and we go on.
      info = j + 1;
    }
    // Rank-1 update of the trailing submatrix.
    for (let i = j + 1; i < n; i++) {
      const lij = lu[i * n + j];
      if (lij === 0) continue;
      for (let c = j + 1; c < n; c++) lu[i * n + c] -= lij * lu[j * n + c];
    }
  }
  return { lu, pivots, info };
}

/**
 * L's column j: the entries below the pivot divided by it, as getf2 does it: times the
 * reciprocal (division only for a pivot under SAFE_MIN, whose reciprocal overflows). The
 * rounding decides whether a singular A meets an exactly zero pivot later: dividing, torch
 * raised for 1 in 20 rank-deficient integer matrices that we factored, or the reverse.
 */
function scaleBelowPivot(lu: Float64Array, n: number, j: number): void {
  const pivot = lu[j * n + j];
  if (Math.abs(pivot) >= SAFE_MIN) {
    const r = 1 / pivot;
    for (let i = j + 1; i < n; i++) lu[i * n + j] *= r;
  } else for (let i = j + 1; i < n; i++) lu[i * n + j] /= pivot;
}

/**
 * Solves A X = B given luFactor's output. `b` is n x nrhs row-major; returns a new array.
 * A zero pivot gives infinities or NaNs, as getrs would: check `info` (or use `solve`) first.
 */
export function luSolve(
  lu: Float64Array,
  pivots: Int32Array,
  n: number,
  b: Float64Array,
  nrhs: number,
): Float64Array {
  checkDim("luSolve", "n", n);
  checkDim("luSolve", "nrhs", nrhs);
  checkLength("luSolve", "lu", lu, n * n);
  checkLength("luSolve", "pivots", pivots, n);
  checkLength("luSolve", "b", b, n * nrhs);
  const x = Float64Array.from(b);
  // X := P B, applying the recorded swaps in the order getrf made them.
  for (let i = 0; i < n; i++) {
    const p = pivots[i] - 1;
    if (p < i || p >= n) {
      throw new ArgumentError(`luSolve: pivots[${i}] = ${pivots[i]} is out of range`);
    }
    if (p === i) continue;
    for (let c = 0; c < nrhs; c++) {
      const t = x[i * nrhs + c];
      x[i * nrhs + c] = x[p * nrhs + c];
      x[p * nrhs + c] = t;
    }
  }
  // Forward substitution with the unit lower L.
  for (let i = 1; i < n; i++) {
    for (let k = 0; k < i; k++) {
      const lik = lu[i * n + k];
      if (lik === 0) continue;
      for (let c = 0; c < nrhs; c++) x[i * nrhs + c] -= lik * x[k * nrhs + c];
    }
  }
  // Back substitution with U.
  for (let i = n - 1; i >= 0; i--) {
    for (let k = i + 1; k < n; k++) {
      const uik = lu[i * n + k];
      if (uik === 0) continue;
      for (let c = 0; c < nrhs; c++) x[i * nrhs + c] -= uik * x[k * nrhs + c];
    }
    const uii = lu[i * n + i];
    for (let c = 0; c < nrhs; c++) x[i * nrhs + c] /= uii;
  }
  return x;
}

/** X with A X = B (b is n x nrhs row-major). Throws LinalgError when A is exactly singular. */
export function solve(a: Float64Array, n: number, b: Float64Array, nrhs: number): Float64Array {
  checkDim("solve", "n", n);
  checkDim("solve", "nrhs", nrhs);
  checkLength("solve", "b", b, n * nrhs);
  const { lu, pivots, info } = luFactor(a, n);
  if (info > 0) throw singular("solve", info);
  return luSolve(lu, pivots, n, b, nrhs);
}

/** A^-1 by solving A X = I. Throws LinalgError when A is exactly singular. */
export function inv(a: Float64Array, n: number): Float64Array {
  checkDim("inv", "n", n);
  const { lu, pivots, info } = luFactor(a, n);
  if (info > 0) throw singular("inv", info);
  const eye = new Float64Array(n * n);
  for (let i = 0; i < n; i++) eye[i * n + i] = 1;
  return luSolve(lu, pivots, n, eye, n);
}

// ---------------------------------------------------------------------------------------------
// QR

/** The 2-norm of column j of the m x n row-major w below row j, each entry times `factor`. */
function belowNorm(w: Float64Array, m: number, n: number, j: number, factor: number): number {
  let norm = 0;
  for (let i = j + 1; i < m; i++) norm = Math.hypot(norm, w[i * n + j] * factor);
  return norm;
}

/**
 * Householder QR, A = Q R, with LAPACK's sign choice (R's diagonal may be negative, as in numpy
 * and torch). k = min(m, n). "reduced": Q is m x k, R is k x n. "complete": Q is m x m, R is m x n.
 */
export function qr(
  a: Float64Array,
  m: number,
  n: number,
  mode: "reduced" | "complete",
): { q: Float64Array; r: Float64Array } {
  checkDim("qr", "m", m);
  checkDim("qr", "n", n);
  checkLength("qr", "a", a, m * n);
  if (mode !== "reduced" && mode !== "complete") {
    throw new ArgumentError(`qr: mode must be "reduced" or "complete", got ${String(mode)}`);
  }
  const k = Math.min(m, n);
  // Like geqrf: R ends up on and above the diagonal of `w`, and the Householder vector of step j
  // (whose implicit first entry is 1) below the diagonal of column j.
  const w = Float64Array.from(a);
  const tau = new Float64Array(k);
  for (let j = 0; j < k; j++) {
    const unscaledNorm = belowNorm(w, m, n, j, 1);
    // Nothing to annihilate: H = I (larfg leaves the sign of alpha alone here).
    if (unscaledNorm === 0) continue;
    // As larfg, a column of subnormal norm is scaled up first (by a power of two, exactly):
    // else 1 / (alpha - beta) overflows and v is NaN. v and tau do not depend on the scale.
    const up = Math.hypot(w[j * n + j], unscaledNorm) < SAFE_MIN ? SUBNORMAL_SCALE : 1;
    const alpha = w[j * n + j] * up;
    const xnorm = up === 1 ? unscaledNorm : belowNorm(w, m, n, j, up);
    // beta takes the sign opposite to alpha so that alpha - beta does not cancel.
    const beta = alpha >= 0 ? -Math.hypot(alpha, xnorm) : Math.hypot(alpha, xnorm);
    tau[j] = (beta - alpha) / beta;
    const scale = 1 / (alpha - beta);
    for (let i = j + 1; i < m; i++) w[i * n + j] = w[i * n + j] * up * scale;
    w[j * n + j] = beta / up;
    // Apply H = I - tau v v^T to the remaining columns.
    for (let c = j + 1; c < n; c++) {
      let s = w[j * n + c];
      for (let i = j + 1; i < m; i++) s += w[i * n + j] * w[i * n + c];
      s *= tau[j];
      w[j * n + c] -= s;
      for (let i = j + 1; i < m; i++) w[i * n + c] -= s * w[i * n + j];
    }
  }

  const rRows = mode === "reduced" ? k : m;
  const r = new Float64Array(rRows * n);
  for (let i = 0; i < Math.min(rRows, k); i++) {
    for (let c = i; c < n; c++) r[i * n + c] = w[i * n + c];
  }

  // Q = H_0 H_1 ... H_{k-1} applied to the first qCols columns of I, accumulated backwards.
  // When H_j is applied, columns < j are still unit vectors that H_j leaves alone, so only
  // columns >= j need updating.
  const qCols = mode === "reduced" ? k : m;
  const q = new Float64Array(m * qCols);
  for (let i = 0; i < qCols; i++) q[i * qCols + i] = 1;
  for (let j = k - 1; j >= 0; j--) {
    if (tau[j] === 0) continue;
    for (let c = j; c < qCols; c++) {
      let s = q[j * qCols + c];
      for (let i = j + 1; i < m; i++) s += w[i * n + j] * q[i * qCols + c];
      s *= tau[j];
      q[j * qCols + c] -= s;
      for (let i = j + 1; i < m; i++) q[i * qCols + c] -= s * w[i * n + j];
    }
  }
  return { q, r };
}

// ---------------------------------------------------------------------------------------------
// Symmetric eigendecomposition

/**
 * Eigenvalues (ascending) and eigenvectors (as columns, A V = V diag(w)) of a symmetric matrix,
 * reading only its lower triangle. Householder tridiagonalisation followed by the implicit QL
 * method (EISPACK tred2 + tql2), O(n^3).
 */
export function eigh(a: Float64Array, n: number): { values: Float64Array; vectors: Float64Array } {
  checkDim("eigh", "n", n);
  checkLength("eigh", "a", a, n * n);
  const z = new Float64Array(n * n);
  const d = new Float64Array(n);
  const e = new Float64Array(n);
  // Symmetric working copy from the lower triangle, scaled so that its largest entry is 1: the
  // sums of squares below can then neither overflow nor underflow.
  let scale = 0;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      const x = a[i * n + j];
      if (!Number.isFinite(x)) {
        throw new LinalgError("eigh", "did not converge: the input contains NaN or infinity");
      }
      scale = Math.max(scale, Math.abs(x));
    }
  }
  if (scale === 0) {
    for (let i = 0; i < n; i++) z[i * n + i] = 1;
    return { values: d, vectors: z };
  }
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      z[i * n + j] = a[i * n + j] / scale;
      z[j * n + i] = z[i * n + j];
    }
  }
  tridiagonalize(z, d, e, n);
  tridiagonalQL(z, d, e, n);
  // Sort ascending, moving the eigenvector columns along (selection sort: n swaps at most).
  for (let i = 0; i < n - 1; i++) {
    let k = i;
    for (let j = i + 1; j < n; j++) if (d[j] < d[k]) k = j;
    if (k === i) continue;
    const t = d[i];
    d[i] = d[k];
    d[k] = t;
    for (let r = 0; r < n; r++) {
      const s = z[r * n + i];
      z[r * n + i] = z[r * n + k];
      z[r * n + k] = s;
    }
  }
  for (let i = 0; i < n; i++) d[i] *= scale;
  return { values: d, vectors: z };
}

/**
 * Householder reduction of the symmetric matrix in `z` to tridiagonal form (EISPACK tred2).
 * On return d is the diagonal, e[1..n-1] the subdiagonal, and z the orthogonal transformation.
 */
function tridiagonalize(z: Float64Array, d: Float64Array, e: Float64Array, n: number): void {
  for (let j = 0; j < n; j++) d[j] = z[(n - 1) * n + j];
  // Reduce row i, from the last up, using the Householder vector kept in d[0..i-1].
  for (let i = n - 1; i > 0; i--) {
    let scale = 0;
    let h = 0;
    for (let k = 0; k < i; k++) scale += Math.abs(d[k]);
    if (scale === 0) {
      // Row already reduced: skip the transformation.
      e[i] = d[i - 1];
      for (let j = 0; j < i; j++) {
        d[j] = z[(i - 1) * n + j];
        z[i * n + j] = 0;
        z[j * n + i] = 0;
      }
    } else {
      for (let k = 0; k < i; k++) {
        d[k] /= scale;
        h += d[k] * d[k];
      }
      let f = d[i - 1];
      let g = f > 0 ? -Math.sqrt(h) : Math.sqrt(h);
      e[i] = scale * g;
      h -= f * g;
      d[i - 1] = f - g;
      for (let j = 0; j < i; j++) e[j] = 0;
      // e := A u (lower triangle only), stored for the rank-2 update below.
      for (let j = 0; j < i; j++) {
        f = d[j];
        z[j * n + i] = f;
        g = e[j] + z[j * n + j] * f;
        for (let k = j + 1; k <= i - 1; k++) {
          g += z[k * n + j] * d[k];
          e[k] += z[k * n + j] * f;
        }
        e[j] = g;
      }
      f = 0;
      for (let j = 0; j < i; j++) {
        e[j] /= h;
        f += e[j] * d[j];
      }
      const hh = f / (h + h);
      for (let j = 0; j < i; j++) e[j] -= hh * d[j];
      // A := A - u p^T - p u^T on the lower triangle.
      for (let j = 0; j < i; j++) {
        f = d[j];
        g = e[j];
        for (let k = j; k <= i - 1; k++) z[k * n + j] -= f * e[k] + g * d[k];
        d[j] = z[(i - 1) * n + j];
        z[i * n + j] = 0;
      }
    }
    d[i] = h;
  }
  // Accumulate the transformations into z.
  for (let i = 0; i < n - 1; i++) {
    z[(n - 1) * n + i] = z[i * n + i];
    z[i * n + i] = 1;
    const h = d[i + 1];
    if (h !== 0) {
      for (let k = 0; k <= i; k++) d[k] = z[k * n + i + 1] / h;
      for (let j = 0; j <= i; j++) {
        let g = 0;
        for (let k = 0; k <= i; k++) g += z[k * n + i + 1] * z[k * n + j];
        for (let k = 0; k <= i; k++) z[k * n + j] -= g * d[k];
      }
    }
    for (let k = 0; k <= i; k++) z[k * n + i + 1] = 0;
  }
  for (let j = 0; j < n; j++) {
    d[j] = z[(n - 1) * n + j];
    z[(n - 1) * n + j] = 0;
  }
  z[(n - 1) * n + (n - 1)] = 1;
  e[0] = 0;
}

/** Most implicit QL sweeps spent on one eigenvalue; 2 or 3 is typical (LAPACK allows 30). */
const QL_MAX_ITER = 60;

/**
 * Off-diagonals below this are zero for the QL iteration, whatever tst1 says. eigh scales A
 * to a largest entry of 1, so dropping them moves no eigenvalue by more than 1e-292. Without
 * the floor a block of subnormal (or nearly) entries, met while tst1 is still 0 (leading rows
 * already reduced, as for a rank-1 A), was iterated on: c = p / r and s = e / r of subnormal
 * p, e, r carry a few bits, so the rotations stopped being orthogonal (eigenvectors of the
 * 60 x 60 all-ones matrix came back with V^T V off I by 1.3).
 */
const QL_TINY = SAFE_MIN / EPS;

/** Whether e is negligible next to the diagonal seen so far (tst1) or absolutely tiny. */
const qlNegligible = (e: number, tst1: number): boolean =>
  Math.abs(e) <= EPS * tst1 || Math.abs(e) < QL_TINY;

/**
 * Eigen-decomposition of the tridiagonal (d, e) by the implicit QL method with Wilkinson-style
 * shifts (EISPACK tql2), rotating the columns of z along. On return d holds the eigenvalues.
 */
function tridiagonalQL(z: Float64Array, d: Float64Array, e: Float64Array, n: number): void {
  for (let i = 1; i < n; i++) e[i - 1] = e[i];
  e[n - 1] = 0;
  let f = 0;
  let tst1 = 0;
  for (let l = 0; l < n; l++) {
    // Find a negligible subdiagonal element; e[n-1] = 0 stops the search.
    tst1 = Math.max(tst1, Math.abs(d[l]) + Math.abs(e[l]));
    let m = l;
    while (m < n - 1 && !qlNegligible(e[m], tst1)) m++;
    // If m === l, d[l] is already an eigenvalue; otherwise iterate until it splits off.
    let iter = 0;
    while (m > l && !qlNegligible(e[l], tst1)) {
      if (++iter > QL_MAX_ITER) {
        throw new LinalgError(
          "eigh",
          `did not converge (eigenvalue ${l + 1} still not isolated after ${QL_MAX_ITER} QL sweeps)`,
          l + 1,
        );
      }
      // Shift from the leading 2x2 block.
      let g = d[l];
      let p = (d[l + 1] - g) / (2 * e[l]);
      let r = Math.hypot(p, 1);
      if (p < 0) r = -r;
      d[l] = e[l] / (p + r);
      d[l + 1] = e[l] * (p + r);
      const dl1 = d[l + 1];
      let h = g - d[l];
      for (let i = l + 2; i < n; i++) d[i] -= h;
      f += h;
      // Chase the bulge from m back up to l with plane rotations.
      p = d[m];
      let c = 1;
      let c2 = c;
      let c3 = c;
      const el1 = e[l + 1];
      let s = 0;
      let s2 = 0;
      for (let i = m - 1; i >= l; i--) {
        c3 = c2;
        c2 = c;
        s2 = s;
        g = c * e[i];
        h = c * p;
        r = Math.hypot(p, e[i]);
        e[i + 1] = s * r;
        s = e[i] / r;
        c = p / r;
        p = c * d[i] - s * g;
        d[i + 1] = h + s * (c * g + s * d[i]);
        for (let k = 0; k < n; k++) {
          h = z[k * n + i + 1];
          z[k * n + i + 1] = s * z[k * n + i] + c * h;
          z[k * n + i] = c * z[k * n + i] - s * h;
        }
      }
      p = (-s * s2 * c3 * el1 * e[l]) / dl1;
      e[l] = s * p;
      d[l] = c * p;
    }
    d[l] += f;
    e[l] = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// SVD

/** One-sided Jacobi sweeps allowed before giving up; ~10 is typical. */
const JACOBI_MAX_SWEEPS = 60;

/**
 * Singular value decomposition A = U diag(s) Vh, s descending. k = min(m, n).
 * Reduced: u is m x k, s has k entries, vh is k x n. Full: u is m x m, vh is n x n, the extra
 * (and any null-space) singular vectors completed to orthonormal bases.
 * One-sided (Hestenes) Jacobi: accurate, simple, and fine for the sizes a reference needs.
 */
export function svd(
  a: Float64Array,
  m: number,
  n: number,
  fullMatrices: boolean,
): { u: Float64Array; s: Float64Array; vh: Float64Array } {
  checkDim("svd", "m", m);
  checkDim("svd", "n", n);
  checkLength("svd", "a", a, m * n);
  const k = Math.min(m, n);
  // Jacobi orthogonalises q columns of length p >= q. When A is tall those are A's columns; when
  // it is wide they are the columns of A^T (A's rows), and the roles of U and V swap at the end.
  const tall = m >= n;
  const p = tall ? m : n;
  const q = k;
  const scale = maxAbs(a);
  if (Number.isNaN(scale)) {
    throw new LinalgError("svd", "did not converge: the input contains NaN or infinity");
  }
  // g holds the q columns one after another; scaled so that the largest entry is 1, which keeps
  // the squared norms from overflowing or underflowing.
  const g = new Float64Array(p * q);
  // (Divide rather than multiply by 1/scale: 1/scale overflows when scale is subnormal.)
  const divisor = scale > 0 ? scale : 1;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      const x = a[i * n + j] / divisor;
      if (tall) g[j * m + i] = x;
      else g[i * n + j] = x;
    }
  }
  const v = jacobiOrthogonalize(g, p, q);

  // The columns are now mutually orthogonal: their norms are the singular values.
  const norms = new Float64Array(q);
  for (let j = 0; j < q; j++) {
    let ss = 0;
    for (let i = 0; i < p; i++) ss += g[j * p + i] * g[j * p + i];
    norms[j] = Math.sqrt(ss);
  }
  const order = Array.from({ length: q }, (_, j) => j).sort((x, y) => norms[y] - norms[x]);
  const s = new Float64Array(k);
  for (let t = 0; t < k; t++) s[t] = norms[order[t]] * scale;

  // Left vectors of the Jacobi problem: the normalised columns, then (for zero singular values
  // and full matrices) an orthonormal completion. Columns stored one after another.
  const uCols = fullMatrices ? p : q;
  const left = new Float64Array(p * uCols);
  let filled = 0;
  for (let t = 0; t < q; t++) {
    const j = order[t];
    if (!(norms[j] > 0)) break; // descending, so every later one is zero too
    for (let i = 0; i < p; i++) left[t * p + i] = g[j * p + i] / norms[j];
    filled++;
  }
  completeOrthonormal(left, p, filled, uCols);

  // Jacobi factored C = L diag(s) V^T with C = A (tall) or C = A^T (wide). V is v's columns.
  if (tall) {
    const u = new Float64Array(m * uCols);
    for (let i = 0; i < m; i++) for (let t = 0; t < uCols; t++) u[i * uCols + t] = left[t * m + i];
    const vh = new Float64Array(n * n);
    for (let t = 0; t < n; t++) for (let j = 0; j < n; j++) vh[t * n + j] = v[order[t] * n + j];
    return { u, s, vh };
  }
  // A = V diag(s) L^T.
  const u = new Float64Array(m * m);
  for (let i = 0; i < m; i++) for (let t = 0; t < m; t++) u[i * m + t] = v[order[t] * m + i];
  // Row t of vh is column t of L, which `left` already stores contiguously.
  return { u, s, vh: left };
}

/**
 * Squared norm under which a column of g is zero to working precision: (eps ||g||_F)^2, the
 * rounding error of any backward-stable SVD (LAPACK gesdd's included). Rotations keep
 * ||g||_F, so it holds for every sweep; g's largest entry is 1, so nothing over- or underflows.
 */
function negligibleColumnNormSquared(g: Float64Array): number {
  let ss = 0;
  for (let i = 0; i < g.length; i++) ss += g[i] * g[i];
  return EPS * EPS * ss;
}

/**
 * Rotates pairs of the q columns in g (each of length p, stored one after another) until all are
 * mutually orthogonal, and returns the accumulated rotation V (q x q, columns stored one after
 * another), so that original g = final g V^T.
 */
function jacobiOrthogonalize(g: Float64Array, p: number, q: number): Float64Array {
  const v = new Float64Array(q * q);
  for (let i = 0; i < q; i++) v[i * q + i] = 1;
  // Columns count as orthogonal when |cos(angle)| <= tol. A computed dot product of length p
  // typically carries a rounding error of order sqrt(p)*eps (LAPACK gesvj's default), so asking
  // for less would make the sweeps chase noise.
  const tol = Math.sqrt(Math.max(p, 16)) * EPS;
  const negligible = negligibleColumnNormSquared(g);
  for (let sweep = 0; sweep < JACOBI_MAX_SWEEPS; sweep++) {
    let rotated = false;
    for (let i = 0; i < q - 1; i++) {
      for (let j = i + 1; j < q; j++) {
        const oi = i * p;
        const oj = j * p;
        let alpha = 0;
        let beta = 0;
        let gamma = 0;
        for (let r = 0; r < p; r++) {
          const x = g[oi + r];
          const y = g[oj + r];
          alpha += x * x;
          beta += y * y;
          gamma += x * y;
        }
        if (Math.abs(gamma) <= tol * Math.sqrt(alpha) * Math.sqrt(beta)) continue;
        if (Math.min(alpha, beta) <= negligible) {
          // Rounding noise of earlier rotations (A rank deficient): rotating it against a
          // column ~1/eps larger leaves new noise as far from orthogonal, sweep after sweep.
          g.fill(0, alpha <= beta ? oi : oj, (alpha <= beta ? oi : oj) + p);
          continue;
        }
        rotated = true;
        // The rotation that diagonalises the 2x2 Gram matrix [[alpha, gamma], [gamma, beta]],
        // taking the smaller angle (|t| <= 1) for stability.
        const zeta = (beta - alpha) / (2 * gamma);
        const t = (zeta >= 0 ? 1 : -1) / (Math.abs(zeta) + Math.hypot(1, zeta));
        const c = 1 / Math.sqrt(1 + t * t);
        const s = c * t;
        for (let r = 0; r < p; r++) {
          const x = g[oi + r];
          const y = g[oj + r];
          g[oi + r] = c * x - s * y;
          g[oj + r] = s * x + c * y;
        }
        for (let r = 0; r < q; r++) {
          const x = v[i * q + r];
          const y = v[j * q + r];
          v[i * q + r] = c * x - s * y;
          v[j * q + r] = s * x + c * y;
        }
      }
    }
    if (!rotated) return v;
  }
  throw new LinalgError(
    "svd",
    `did not converge (columns still not orthogonal after ${JACOBI_MAX_SWEEPS} Jacobi sweeps)`,
  );
}

/**
 * Columns [filled, cols) of `u` (each of length p, stored one after another) become unit vectors
 * orthogonal to each other and to the first `filled` columns, which must be orthonormal.
 * They are columns filled.. of Q in the Householder QR of those first columns (LAPACK's
 * dgeqrf + dorgqr): Q's first columns span the same space, so the rest complete it.
 * Cost O(p filled (cols - filled)); Gram-Schmidt on e_0, e_1, ... cost O(p^3) for a full U.
 * wasm-svd (backend-cpu-mkl) runs the same steps, so the two completions agree.
 */
function completeOrthonormal(u: Float64Array, p: number, filled: number, cols: number): void {
  if (filled >= cols) return;
  // A copy of the first columns, overwritten by the reflectors v_j (v_j[j] = 1, read from row j).
  const v = u.slice(0, p * filled);
  const tau = householderColumns(v, p, filled);
  for (let c = filled; c < cols; c++) {
    const x = u.subarray(c * p, (c + 1) * p);
    x.fill(0);
    x[c] = 1;
    // Q e_c = H_0 H_1 ... H_{filled-1} e_c, with H_j = I - tau_j v_j v_j^T.
    for (let j = filled - 1; j >= 0; j--) applyReflector(v, p, j, tau[j], x);
  }
}

/**
 * Householder QR of the q columns in v (each of length p >= q, stored one after another), in
 * place: column j from row j down becomes the reflector v_j (v_j[j] = 1; the rows above hold R,
 * unused) and tau[j] its scale, so that H_{q-1} ... H_0 A is upper triangular. LAPACK signs
 * (dlarfg: beta = -sign(alpha) |x|). The columns are orthonormal: no norm over- or underflows.
 */
function householderColumns(v: Float64Array, p: number, q: number): Float64Array {
  const tau = new Float64Array(q);
  for (let j = 0; j < q; j++) {
    const o = j * p;
    const alpha = v[o + j];
    let ss = 0;
    for (let i = j + 1; i < p; i++) ss += v[o + i] * v[o + i];
    const xnorm = Math.sqrt(ss);
    v[o + j] = 1;
    if (xnorm === 0) continue; // H_j = I: tau 0, and the rows below are already zero
    const hy = Math.hypot(alpha, xnorm);
    const beta = alpha >= 0 ? -hy : hy;
    tau[j] = (beta - alpha) / beta;
    const scale = 1 / (alpha - beta);
    for (let i = j + 1; i < p; i++) v[o + i] *= scale;
    for (let l = j + 1; l < q; l++) applyReflector(v, p, j, tau[j], v.subarray(l * p, (l + 1) * p));
  }
  return tau;
}

/** x := (I - t v_j v_j^T) x, where v_j is column j of v (length p, nonzero from row j). */
function applyReflector(v: Float64Array, p: number, j: number, t: number, x: Float64Array): void {
  if (t === 0) return;
  const o = j * p;
  let d = 0;
  for (let i = j; i < p; i++) d += v[o + i] * x[i];
  d *= t;
  for (let i = j; i < p; i++) x[i] -= d * v[o + i];
}
