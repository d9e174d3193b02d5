// Dense f64 linear algebra, one row-major matrix per call, ported from
// packages/core/src/reference/linalg-math.ts (same algorithms and LAPACK conventions), with
// contiguous SIMD inner loops. Never throws: results come with LAPACK-style info codes.
import { EPS, ldf, stf, ldi, sti, off, rowp, dot, axpy, scal, divs, rot, swapv, fillf } from "./util";

/** The smallest normal float64: below it a reciprocal overflows. */
const SAFE_MIN: f64 = 2.2250738585072014e-308;

@inline function al16(b: i64): i64 {
  return (b + 15) & ~15;
}

// ---------------------------------------------------------------------------------------------
// Workspace

function squareBytes(n: i64): i64 {
  // solve/inv: LU (n^2) + pivots (n i32); eigh: e (n).
  return al16(8 * n * n) + al16(8 * n);
}

function qrBytes(m: i64, n: i64): i64 {
  const k = m < n ? m : n;
  const mx = m > n ? m : n;
  return al16(8 * m * n) + al16(8 * k) + al16(8 * mx);
}

function svdBytes(m: i64, n: i64): i64 {
  const p = m > n ? m : n;
  const q = m < n ? m : n;
  // g (p q), v (q q), norms (q), order (q i32), left (p q: tall and reduced only).
  // Full tall matrices build `left` in u itself (p x p), so nothing here grows as p^2.
  return al16(8 * p * q) + al16(8 * q * q) + al16(8 * q) + al16(4 * q) + al16(8 * p * q);
}

/**
 * Workspace bytes for the routines below on an m x n matrix: qr and svd, and when m == n
 * also solve, inv and eigh; -1 if over i32. Sized to the shape asked for only: a tall
 * 20000 x 2 matrix needs kilobytes, not the 3.2 GB of a 20000 x 20000 one.
 */
export function linalgWorkspaceBytes(m: i32, n: i32): i32 {
  if (m < 0 || n < 0) return 0;
  let b = qrBytes(<i64>m, <i64>n);
  const b2 = svdBytes(<i64>m, <i64>n);
  if (b2 > b) b = b2;
  if (m == n) {
    const b3 = squareBytes(<i64>n);
    if (b3 > b) b = b3;
  }
  return b > 0x7fffffff ? -1 : <i32>b;
}

// ---------------------------------------------------------------------------------------------
// Cholesky

/**
 * Lower L with A = L L^T from the lower triangle of a. Returns 0 or k (1-based) where the
 * leading minor of order k is not positive definite. l may equal a. The sums are rounded in
 * LAPACK potf2's order (scalar, in order; no SIMD lanes), as the core's reference: on a
 * singular semidefinite A it decides whether we raise where torch does. upper != 0: a is the
 * transpose of an upper triangle, and the off-diagonal sums follow potf2 uplo="U" (dot first).
 */
export function cholesky(a: usize, l: usize, n: i32, upper: i32): i32 {
  if (n <= 0) return 0;
  for (let i = 0; i < n - 1; i++) memory.fill(rowp(l, i, n) + off(i + 1), 0, off(n - i - 1));
  for (let j = 0; j < n; j++) {
    const lj = rowp(l, j, n);
    const d = ldf(rowp(a, j, n), j) - orderedDot(lj, lj, j);
    if (!(d > 0)) return j + 1;
    const ljj = Math.sqrt(d);
    stf(lj, j, ljj);
    const r = 1.0 / ljj;
    for (let i = j + 1; i < n; i++) {
      const li = rowp(l, i, n);
      const x = ldf(rowp(a, i, n), j);
      stf(li, j, (upper != 0 ? x - orderedDot(li, lj, j) : subtractTerms(x, li, lj, j)) * r);
    }
  }
  return 0;
}

/** sum x[k] y[k], added up in order (ddot's order). */
function orderedDot(x: usize, y: usize, n: i32): f64 {
  let s = 0.0;
  for (let k = 0; k < n; k++) s += ldf(x, k) * ldf(y, k);
  return s;
}

/** v - x[0] y[0] - x[1] y[1] - ..., each term subtracted in turn (dgemv "N"'s order). */
function subtractTerms(v: f64, x: usize, y: usize, n: i32): f64 {
  let s = v;
  for (let k = 0; k < n; k++) s -= ldf(x, k) * ldf(y, k);
  return s;
}

// ---------------------------------------------------------------------------------------------
// LU

/** PA = LU with partial pivoting (getrf convention, 1-based i32 pivots). Returns info. lu may equal a. */
export function luFactor(a: usize, lu: usize, pivots: usize, n: i32): i32 {
  if (n <= 0) return 0;
  if (lu != a) memory.copy(lu, a, off(n) * <usize>n);
  let info = 0;
  for (let j = 0; j < n; j++) {
    let p = j;
    let best = abs<f64>(ldf(rowp(lu, j, n), j));
    for (let i = j + 1; i < n; i++) {
      const v = abs<f64>(ldf(rowp(lu, i, n), j));
      if (v > best) {
        best = v;
        p = i;
      }
    }
    sti(pivots, j, p + 1);
    const rj = rowp(lu, j, n);
    if (ldf(rowp(lu, p, n), j) != 0) {
      if (p != j) swapv(rj, rowp(lu, p, n), n);
      scaleBelowPivot(lu, n, j);
    } else if (info == 0) {
      info = j + 1;
    }
    const cnt = n - j - 1;
    if (cnt > 0) {
      const src = rj + off(j + 1);
      for (let i = j + 1; i < n; i++) {
        const ri = rowp(lu, i, n);
        const lij = ldf(ri, j);
        if (lij == 0) continue;
        axpy(-lij, src, ri + off(j + 1), cnt);
      }
    }
  }
  return info;
}

/**
 * L's column j: the entries below the pivot times its reciprocal, as getf2 (division only for
 * a pivot under SAFE_MIN, whose reciprocal overflows). The rounding decides whether a singular
 * A meets an exactly zero pivot later, so whether inv/solve raise where torch does. As
 * scaleBelowPivot in the core's reference.
 */
function scaleBelowPivot(lu: usize, n: i32, j: i32): void {
  const pivot = ldf(rowp(lu, j, n), j);
  const r = 1.0 / pivot;
  const useReciprocal = abs<f64>(pivot) >= SAFE_MIN;
  for (let i = j + 1; i < n; i++) {
    const ri = rowp(lu, i, n);
    const x = ldf(ri, j);
    stf(ri, j, useReciprocal ? x * r : x / pivot);
  }
}

/** Solves A X = B from luFactor's output; b (n x nrhs) is overwritten with X. Out-of-range pivots are ignored. */
export function luSolve(lu: usize, pivots: usize, n: i32, b: usize, nrhs: i32): void {
  if (n <= 0 || nrhs <= 0) return;
  for (let i = 0; i < n; i++) {
    const p = ldi(pivots, i) - 1;
    if (p <= i || p >= n) continue;
    swapv(rowp(b, i, nrhs), rowp(b, p, nrhs), nrhs);
  }
  if (nrhs == 1) {
    for (let i = 1; i < n; i++) {
      stf(b, i, ldf(b, i) - dot(rowp(lu, i, n), b, i));
    }
    for (let i = n - 1; i >= 0; i--) {
      const ri = rowp(lu, i, n);
      const s = ldf(b, i) - dot(ri + off(i + 1), b + off(i + 1), n - i - 1);
      stf(b, i, s / ldf(ri, i));
    }
    return;
  }
  for (let i = 1; i < n; i++) {
    const ri = rowp(lu, i, n);
    const bi = rowp(b, i, nrhs);
    for (let k = 0; k < i; k++) {
      const lik = ldf(ri, k);
      if (lik == 0) continue;
      axpy(-lik, rowp(b, k, nrhs), bi, nrhs);
    }
  }
  for (let i = n - 1; i >= 0; i--) {
    const ri = rowp(lu, i, n);
    const bi = rowp(b, i, nrhs);
    for (let k = i + 1; k < n; k++) {
      const uik = ldf(ri, k);
      if (uik == 0) continue;
      axpy(-uik, rowp(b, k, nrhs), bi, nrhs);
    }
    divs(ldf(ri, i), bi, nrhs);
  }
}

/** X with A X = B (b n x nrhs, x n x nrhs; x may equal b). Returns info > 0 when A is exactly singular (x is then NaN). work: linalgWorkspaceBytes(n, n). */
export function solve(a: usize, n: i32, b: usize, nrhs: i32, x: usize, work: usize): i32 {
  if (n <= 0) return 0;
  const lu = work;
  const piv = work + <usize>al16(8 * <i64>n * <i64>n);
  const info = luFactor(a, lu, piv, n);
  if (nrhs <= 0) return info;
  if (info > 0) {
    fillf(x, NaN, n * nrhs);
    return info;
  }
  if (x != b) memory.copy(x, b, off(n) * <usize>nrhs);
  luSolve(lu, piv, n, x, nrhs);
  return 0;
}

/** A^-1 into out. Returns info > 0 when A is exactly singular (out is then NaN). work: linalgWorkspaceBytes(n, n). */
export function inv(a: usize, n: i32, out: usize, work: usize): i32 {
  if (n <= 0) return 0;
  const lu = work;
  const piv = work + <usize>al16(8 * <i64>n * <i64>n);
  const info = luFactor(a, lu, piv, n);
  if (info > 0) {
    fillf(out, NaN, n * n);
    return info;
  }
  memory.fill(out, 0, off(n) * <usize>n);
  for (let i = 0; i < n; i++) stf(rowp(out, i, n), i, 1.0);
  luSolve(lu, piv, n, out, n);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// QR

/** 2-norm of the strided vector x[0], x[s], ..., without overflow/underflow. */
function normStrided(x: usize, cnt: i32, strideBytes: usize): f64 {
  let ss = 0.0;
  for (let i = 0; i < cnt; i++) {
    const v = load<f64>(x + (<usize>i) * strideBytes);
    ss += v * v;
  }
  if (ss != ss) return ss;
  if (ss >= 1e-290 && ss < Infinity) return Math.sqrt(ss);
  let amax = 0.0;
  for (let i = 0; i < cnt; i++) {
    const v = abs<f64>(load<f64>(x + (<usize>i) * strideBytes));
    if (v > amax) amax = v;
  }
  if (amax == 0 || amax == Infinity) return amax;
  ss = 0.0;
  for (let i = 0; i < cnt; i++) {
    const v = load<f64>(x + (<usize>i) * strideBytes) / amax;
    ss += v * v;
  }
  return amax * Math.sqrt(ss);
}

/** 2^600, which lifts any subnormal into the normal range. */
const QR_SUBNORMAL_SCALE: f64 = 4.149515568880993e180;

/** Householder QR (LAPACK signs). reduced: q m x k, r k x n; complete: q m x m, r m x n (k = min(m, n)). work: linalgWorkspaceBytes(m, n). */
export function qr(a: usize, m: i32, n: i32, complete: i32, q: usize, r: usize, work: usize): void {
  if (m < 0 || n < 0) return;
  const k = m < n ? m : n;
  const w = work;
  const tau = w + <usize>al16(8 * <i64>m * <i64>n);
  const tmp = tau + <usize>al16(8 * <i64>k);
  if (m > 0 && n > 0) memory.copy(w, a, off(m) * <usize>n);
  const rowBytes = off(n);
  for (let j = 0; j < k; j++) {
    const wj = rowp(w, j, n);
    let alpha = ldf(wj, j);
    let xnorm = normStrided(wj + rowBytes + off(j), m - j - 1, rowBytes);
    if (xnorm == 0) {
      stf(tau, j, 0.0);
      continue;
    }
    // As LAPACK's larfg, a column of subnormal norm is scaled up first (by a power of two,
    // exactly): else 1 / (alpha - beta) overflows and Q and R are NaN. v and tau do not
    // depend on the scale; beta is scaled back down.
    let up = 1.0;
    if (Math.hypot(alpha, xnorm) < SAFE_MIN) {
      up = QR_SUBNORMAL_SCALE;
      for (let i = j + 1; i < m; i++) {
        const wi = rowp(w, i, n);
        stf(wi, j, ldf(wi, j) * up);
      }
      alpha *= up;
      xnorm = normStrided(wj + rowBytes + off(j), m - j - 1, rowBytes);
    }
    const hy = Math.hypot(alpha, xnorm);
    const beta = alpha >= 0 ? -hy : hy;
    const t = (beta - alpha) / beta;
    stf(tau, j, t);
    const scale = 1.0 / (alpha - beta);
    for (let i = j + 1; i < m; i++) {
      const wi = rowp(w, i, n);
      stf(wi, j, ldf(wi, j) * scale);
    }
    stf(wj, j, beta / up);
    const nc = n - j - 1;
    if (nc > 0) {
      memory.copy(tmp, wj + off(j + 1), off(nc));
      for (let i = j + 1; i < m; i++) {
        const wi = rowp(w, i, n);
        axpy(ldf(wi, j), wi + off(j + 1), tmp, nc);
      }
      scal(t, tmp, nc);
      axpy(-1.0, tmp, wj + off(j + 1), nc);
      for (let i = j + 1; i < m; i++) {
        const wi = rowp(w, i, n);
        axpy(-ldf(wi, j), tmp, wi + off(j + 1), nc);
      }
    }
  }
  const rRows = complete != 0 ? m : k;
  for (let i = 0; i < rRows; i++) {
    const ri = rowp(r, i, n);
    const wi = rowp(w, i, n);
    for (let c = 0; c < n; c++) stf(ri, c, i < k && c >= i ? ldf(wi, c) : 0.0);
  }
  const qCols = complete != 0 ? m : k;
  if (m == 0 || qCols == 0) return;
  memory.fill(q, 0, off(m) * <usize>qCols);
  for (let i = 0; i < qCols; i++) stf(rowp(q, i, qCols), i, 1.0);
  for (let j = k - 1; j >= 0; j--) {
    const t = ldf(tau, j);
    if (t == 0) continue;
    const nc = qCols - j;
    const qj = rowp(q, j, qCols) + off(j);
    memory.copy(tmp, qj, off(nc));
    for (let i = j + 1; i < m; i++) {
      axpy(ldf(rowp(w, i, n), j), rowp(q, i, qCols) + off(j), tmp, nc);
    }
    scal(t, tmp, nc);
    axpy(-1.0, tmp, qj, nc);
    for (let i = j + 1; i < m; i++) {
      axpy(-ldf(rowp(w, i, n), j), tmp, rowp(q, i, qCols) + off(j), nc);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Symmetric eigendecomposition (tred2 + tql2), on the transposed eigenvector matrix so that
// every inner loop is contiguous: zt row i is column i of EISPACK's z.

/** Householder tridiagonalisation (EISPACK tred2) with z stored transposed in zt. */
function tred2T(zt: usize, d: usize, e: usize, n: i32): void {
  for (let j = 0; j < n; j++) stf(d, j, ldf(rowp(zt, j, n), n - 1));
  for (let i = n - 1; i > 0; i--) {
    let scale = 0.0;
    let h = 0.0;
    for (let k = 0; k < i; k++) scale += abs<f64>(ldf(d, k));
    if (scale == 0) {
      stf(e, i, ldf(d, i - 1));
      for (let j = 0; j < i; j++) {
        const zj = rowp(zt, j, n);
        stf(d, j, ldf(zj, i - 1));
        stf(zj, i, 0.0);
        stf(rowp(zt, i, n), j, 0.0);
      }
    } else {
      for (let k = 0; k < i; k++) {
        const v = ldf(d, k) / scale;
        stf(d, k, v);
        h += v * v;
      }
      let f = ldf(d, i - 1);
      let g = f > 0 ? -Math.sqrt(h) : Math.sqrt(h);
      stf(e, i, scale * g);
      h -= f * g;
      stf(d, i - 1, f - g);
      memory.fill(e, 0, off(i));
      const zi = rowp(zt, i, n);
      for (let j = 0; j < i; j++) {
        const zj = rowp(zt, j, n);
        f = ldf(d, j);
        stf(zi, j, f);
        g = ldf(e, j) + ldf(zj, j) * f;
        const cnt = i - 1 - j;
        if (cnt > 0) {
          g += dot(zj + off(j + 1), d + off(j + 1), cnt);
          axpy(f, zj + off(j + 1), e + off(j + 1), cnt);
        }
        stf(e, j, g);
      }
      f = 0.0;
      for (let j = 0; j < i; j++) {
        const v = ldf(e, j) / h;
        stf(e, j, v);
        f += v * ldf(d, j);
      }
      const hh = f / (h + h);
      axpy(-hh, d, e, i);
      for (let j = 0; j < i; j++) {
        const zj = rowp(zt, j, n);
        f = ldf(d, j);
        g = ldf(e, j);
        // zj[k] -= f e[k] + g d[k], k in [j, i)
        const vf = f64x2.splat(f);
        const vg = f64x2.splat(g);
        let k = j;
        for (; k + 2 <= i; k += 2) {
          const o = off(k);
          v128.store(
            zj + o,
            f64x2.sub(v128.load(zj + o), f64x2.add(f64x2.mul(vf, v128.load(e + o)), f64x2.mul(vg, v128.load(d + o)))),
          );
        }
        if (k < i) stf(zj, k, ldf(zj, k) - (f * ldf(e, k) + g * ldf(d, k)));
        stf(d, j, ldf(zj, i - 1));
        stf(zj, i, 0.0);
      }
    }
    stf(d, i, h);
  }
  // Accumulate the transformations.
  for (let i = 0; i < n - 1; i++) {
    const zi = rowp(zt, i, n);
    stf(zi, n - 1, ldf(zi, i));
    stf(zi, i, 1.0);
    const h = ldf(d, i + 1);
    const zi1 = rowp(zt, i + 1, n);
    if (h != 0) {
      for (let k = 0; k <= i; k++) stf(d, k, ldf(zi1, k) / h);
      for (let j = 0; j <= i; j++) {
        const zj = rowp(zt, j, n);
        const g = dot(zi1, zj, i + 1);
        axpy(-g, d, zj, i + 1);
      }
    }
    memory.fill(zi1, 0, off(i + 1));
  }
  for (let j = 0; j < n; j++) {
    const zj = rowp(zt, j, n);
    stf(d, j, ldf(zj, n - 1));
    stf(zj, n - 1, 0.0);
  }
  stf(rowp(zt, n - 1, n), n - 1, 1.0);
  stf(e, 0, 0.0);
}

const QL_MAX_ITER = 60;

/** Off-diagonals below this are zero whatever tst1 says (eigh scales A to a largest entry of 1): rotations built from subnormal entries carry a few bits and stop being orthogonal. As QL_TINY in the core's reference. */
const QL_TINY: f64 = SAFE_MIN / EPS;

@inline function qlNegligible(e: f64, tst1: f64): bool {
  const a = abs<f64>(e);
  return a <= EPS * tst1 || a < QL_TINY;
}

/** Implicit QL (EISPACK tql2) on (d, e), rotating rows of zt. Returns 0 or l+1 on non-convergence. */
function tql2T(zt: usize, d: usize, e: usize, n: i32): i32 {
  for (let i = 1; i < n; i++) stf(e, i - 1, ldf(e, i));
  stf(e, n - 1, 0.0);
  let f = 0.0;
  let tst1 = 0.0;
  for (let l = 0; l < n; l++) {
    tst1 = max<f64>(tst1, abs<f64>(ldf(d, l)) + abs<f64>(ldf(e, l)));
    let m = l;
    while (m < n - 1 && !qlNegligible(ldf(e, m), tst1)) m++;
    let iter = 0;
    while (m > l && !qlNegligible(ldf(e, l), tst1)) {
      if (++iter > QL_MAX_ITER) return l + 1;
      let g = ldf(d, l);
      let p = (ldf(d, l + 1) - g) / (2.0 * ldf(e, l));
      let r = Math.hypot(p, 1.0);
      if (p < 0) r = -r;
      stf(d, l, ldf(e, l) / (p + r));
      stf(d, l + 1, ldf(e, l) * (p + r));
      const dl1 = ldf(d, l + 1);
      let h = g - ldf(d, l);
      for (let i = l + 2; i < n; i++) stf(d, i, ldf(d, i) - h);
      f += h;
      p = ldf(d, m);
      let c = 1.0;
      let c2 = c;
      let c3 = c;
      const el1 = ldf(e, l + 1);
      let s = 0.0;
      let s2 = 0.0;
      for (let i = m - 1; i >= l; i--) {
        c3 = c2;
        c2 = c;
        s2 = s;
        const ei = ldf(e, i);
        const di = ldf(d, i);
        g = c * ei;
        h = c * p;
        r = Math.hypot(p, ei);
        stf(e, i + 1, s * r);
        s = ei / r;
        c = p / r;
        p = c * di - s * g;
        stf(d, i + 1, h + s * (c * g + s * di));
        rot(rowp(zt, i, n), rowp(zt, i + 1, n), n, c, s);
      }
      p = (-s * s2 * c3 * el1 * ldf(e, l)) / dl1;
      stf(e, l, s * p);
      stf(d, l, c * p);
    }
    stf(d, l, ldf(d, l) + f);
    stf(e, l, 0.0);
  }
  return 0;
}

/**
 * Eigenvalues (ascending, into values) and eigenvectors (columns of the row-major n x n
 * `vectors`) of the symmetric matrix whose lower triangle is in a. Returns 0, -1 when a holds
 * NaN/inf, or l+1 when the QL iteration did not converge. work: linalgWorkspaceBytes(n, n).
 */
export function eigh(a: usize, n: i32, values: usize, vectors: usize, work: usize): i32 {
  if (n <= 0) return 0;
  const z = vectors;
  const d = values;
  const e = work;
  let scale = 0.0;
  for (let i = 0; i < n; i++) {
    const ai = rowp(a, i, n);
    for (let j = 0; j <= i; j++) {
      const x = ldf(ai, j);
      if (!(abs<f64>(x) < Infinity)) {
        fillf(values, NaN, n);
        fillf(vectors, NaN, n * n);
        return -1;
      }
      scale = max<f64>(scale, abs<f64>(x));
    }
  }
  if (scale == 0) {
    memory.fill(values, 0, off(n));
    memory.fill(vectors, 0, off(n) * <usize>n);
    for (let i = 0; i < n; i++) stf(rowp(vectors, i, n), i, 1.0);
    return 0;
  }
  for (let i = 0; i < n; i++) {
    const ai = rowp(a, i, n);
    for (let j = 0; j <= i; j++) {
      const v = ldf(ai, j) / scale;
      stf(rowp(z, i, n), j, v);
      stf(rowp(z, j, n), i, v);
    }
  }
  tred2T(z, d, e, n);
  const info = tql2T(z, d, e, n);
  if (info != 0) return info;
  // Sort ascending (selection sort), moving eigenvector rows of zt along.
  for (let i = 0; i < n - 1; i++) {
    let k = i;
    for (let j = i + 1; j < n; j++) if (ldf(d, j) < ldf(d, k)) k = j;
    if (k == i) continue;
    const t = ldf(d, i);
    stf(d, i, ldf(d, k));
    stf(d, k, t);
    swapv(rowp(z, i, n), rowp(z, k, n), n);
  }
  scal(scale, d, n);
  transposeSquare(z, n); // zt -> z
  return 0;
}

/** In-place transpose of the row-major n x n matrix at x. */
function transposeSquare(x: usize, n: i32): void {
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const pij = rowp(x, i, n) + off(j);
      const pji = rowp(x, j, n) + off(i);
      const t = load<f64>(pij);
      store<f64>(pij, load<f64>(pji));
      store<f64>(pji, t);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SVD (one-sided Jacobi)

const JACOBI_MAX_SWEEPS = 60;

let gAlpha: f64 = 0;
let gBeta: f64 = 0;
let gGamma: f64 = 0;

/** alpha = x.x, beta = y.y, gamma = x.y in one pass. */
function dot3(x: usize, y: usize, n: i32): void {
  let aa = f64x2.splat(0);
  let bb = f64x2.splat(0);
  let gg = f64x2.splat(0);
  let aa1 = f64x2.splat(0);
  let bb1 = f64x2.splat(0);
  let gg1 = f64x2.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = off(i);
    const vx = v128.load(x + o);
    const vy = v128.load(y + o);
    const wx = v128.load(x + o, 16);
    const wy = v128.load(y + o, 16);
    aa = f64x2.add(aa, f64x2.mul(vx, vx));
    bb = f64x2.add(bb, f64x2.mul(vy, vy));
    gg = f64x2.add(gg, f64x2.mul(vx, vy));
    aa1 = f64x2.add(aa1, f64x2.mul(wx, wx));
    bb1 = f64x2.add(bb1, f64x2.mul(wy, wy));
    gg1 = f64x2.add(gg1, f64x2.mul(wx, wy));
  }
  aa = f64x2.add(aa, aa1);
  bb = f64x2.add(bb, bb1);
  gg = f64x2.add(gg, gg1);
  for (; i + 2 <= n; i += 2) {
    const o = off(i);
    const vx = v128.load(x + o);
    const vy = v128.load(y + o);
    aa = f64x2.add(aa, f64x2.mul(vx, vx));
    bb = f64x2.add(bb, f64x2.mul(vy, vy));
    gg = f64x2.add(gg, f64x2.mul(vx, vy));
  }
  let a = f64x2.extract_lane(aa, 0) + f64x2.extract_lane(aa, 1);
  let b = f64x2.extract_lane(bb, 0) + f64x2.extract_lane(bb, 1);
  let g = f64x2.extract_lane(gg, 0) + f64x2.extract_lane(gg, 1);
  if (i < n) {
    const xv = ldf(x, i);
    const yv = ldf(y, i);
    a += xv * xv;
    b += yv * yv;
    g += xv * yv;
  }
  gAlpha = a;
  gBeta = b;
  gGamma = g;
}

/** Rotates the q columns of g (length p each, contiguous) until orthogonal, accumulating v (q x q, columns contiguous). Returns true when converged. */
function jacobi(g: usize, p: i32, q: i32, v: usize): bool {
  memory.fill(v, 0, off(q) * <usize>q);
  for (let i = 0; i < q; i++) stf(rowp(v, i, q), i, 1.0);
  const tol = Math.sqrt(<f64>max<i32>(p, 16)) * EPS;
  // (eps ||g||_F)^2: a column under it is rounding noise (rotations keep ||g||_F). As
  // negligibleColumnNormSquared in the core's reference.
  const negligible = EPS * EPS * dot(g, g, p * q);
  for (let sweep = 0; sweep < JACOBI_MAX_SWEEPS; sweep++) {
    let rotated = false;
    for (let i = 0; i < q - 1; i++) {
      const gi = rowp(g, i, p);
      const vi = rowp(v, i, q);
      for (let j = i + 1; j < q; j++) {
        const gj = rowp(g, j, p);
        dot3(gi, gj, p);
        const alpha = gAlpha;
        const beta = gBeta;
        const gamma = gGamma;
        if (abs<f64>(gamma) <= tol * Math.sqrt(alpha) * Math.sqrt(beta)) continue;
        if (min<f64>(alpha, beta) <= negligible) {
          // Noise of earlier rotations (A rank deficient): rotated against a column ~1/eps
          // larger it stays as far from orthogonal, sweep after sweep, and never converged.
          memory.fill(alpha <= beta ? gi : gj, 0, off(p));
          continue;
        }
        rotated = true;
        const zeta = (beta - alpha) / (2.0 * gamma);
        const t = (zeta >= 0 ? 1.0 : -1.0) / (abs<f64>(zeta) + Math.hypot(1.0, zeta));
        const c = 1.0 / Math.sqrt(1.0 + t * t);
        const s = c * t;
        rot(gi, gj, p, c, s);
        rot(vi, rowp(v, j, q), q, c, s);
      }
    }
    if (!rotated) return true;
  }
  return false;
}

/**
 * Columns [filled, cols) of u (length p each, contiguous) become an orthonormal completion of
 * the first `filled` (orthonormal) columns: columns filled.. of Q in their Householder QR, as the
 * core's reference does (same steps, same signs). O(p filled (cols - filled)), not O(p^3).
 * refl: p filled f64 for the reflectors; tau: filled f64.
 */
function completeOrthonormal(u: usize, p: i32, filled: i32, cols: i32, refl: usize, tau: usize): void {
  if (filled >= cols) return;
  memory.copy(refl, u, off(p) * <usize>filled);
  householderColumns(refl, p, filled, tau);
  for (let c = filled; c < cols; c++) {
    const x = rowp(u, c, p);
    memory.fill(x, 0, off(p));
    stf(x, c, 1.0);
    // Q e_c = H_0 H_1 ... H_{filled-1} e_c.
    for (let j = filled - 1; j >= 0; j--) applyReflector(refl, p, j, ldf(tau, j), x);
  }
}

/** Householder QR of the q columns of v (length p >= q each, contiguous), in place: column j from index j on becomes v_j (v_j[j] = 1; above it R, unused), tau[j] its scale. LAPACK signs; the columns are orthonormal, so no scaling is needed. */
function householderColumns(v: usize, p: i32, q: i32, tau: usize): void {
  for (let j = 0; j < q; j++) {
    const vj = rowp(v, j, p);
    const alpha = ldf(vj, j);
    const below = vj + off(j + 1);
    const xnorm = Math.sqrt(dot(below, below, p - j - 1));
    stf(vj, j, 1.0);
    stf(tau, j, 0.0);
    if (xnorm == 0) continue;
    const hy = Math.hypot(alpha, xnorm);
    const beta = alpha >= 0 ? -hy : hy;
    const t = (beta - alpha) / beta;
    stf(tau, j, t);
    scal(1.0 / (alpha - beta), below, p - j - 1);
    for (let l = j + 1; l < q; l++) applyReflector(v, p, j, t, rowp(v, l, p));
  }
}

/** x := (I - t v_j v_j^T) x, v_j being row j of v (length p, nonzero from index j). */
function applyReflector(v: usize, p: i32, j: i32, t: f64, x: usize): void {
  if (t == 0) return;
  const vj = rowp(v, j, p) + off(j);
  const xj = x + off(j);
  axpy(-t * dot(vj, xj, p - j), vj, xj, p - j);
}

/**
 * A = U diag(s) Vh, s descending, k = min(m, n). full = 0: u m x k, vh k x n; full != 0:
 * u m x m, vh n x n. Returns 0, -1 when a holds NaN/inf, 1 when Jacobi did not converge.
 * work: linalgWorkspaceBytes(m, n).
 */
export function svd(a: usize, m: i32, n: i32, full: i32, u: usize, s: usize, vh: usize, work: usize): i32 {
  if (m < 0 || n < 0) return 0;
  const k = m < n ? m : n;
  const tall = m >= n;
  const p = tall ? m : n;
  const q = k;
  const fullM = full != 0;
  const uRows = m;
  const uColsOut = fullM ? m : k;
  const vhRows = fullM ? n : k;
  let scale = 0.0;
  const total = m * n;
  for (let i = 0; i < total; i++) {
    const x = abs<f64>(ldf(a, i));
    if (!(x < Infinity)) {
      fillf(u, NaN, uRows * uColsOut);
      fillf(s, NaN, k);
      fillf(vh, NaN, vhRows * n);
      return -1;
    }
    if (x > scale) scale = x;
  }
  // Workspace layout.
  const g = work;
  const v = g + <usize>al16(8 * <i64>p * <i64>q);
  const norms = v + <usize>al16(8 * <i64>q * <i64>q);
  const order = norms + <usize>al16(8 * <i64>q);
  const leftW = order + <usize>al16(4 * <i64>q);
  const uCols = fullM ? p : q;
  // left: uCols vectors of length p, one after another. Wide: they are Vh's rows as they
  // are. Tall and full: u (p x p) holds them, transposed in place at the end.
  const left = tall ? (fullM ? u : leftW) : vh;

  const divisor = scale > 0 ? scale : 1.0;
  for (let i = 0; i < m; i++) {
    const ai = rowp(a, i, n);
    for (let j = 0; j < n; j++) {
      const x = ldf(ai, j) / divisor;
      if (tall) stf(g, j * m + i, x);
      else stf(g, i * n + j, x);
    }
  }
  const converged = jacobi(g, p, q, v);

  for (let j = 0; j < q; j++) {
    const gj = rowp(g, j, p);
    stf(norms, j, Math.sqrt(dot(gj, gj, p)));
  }
  // Stable insertion sort of indices by descending norm.
  for (let t = 0; t < q; t++) {
    const key = t;
    const nk = ldf(norms, key);
    let j = t;
    while (j > 0 && ldf(norms, ldi(order, j - 1)) < nk) {
      sti(order, j, ldi(order, j - 1));
      j--;
    }
    sti(order, j, key);
  }
  for (let t = 0; t < k; t++) stf(s, t, ldf(norms, ldi(order, t)) * scale);

  let filled = 0;
  for (let t = 0; t < q; t++) {
    const j = ldi(order, t);
    const nj = ldf(norms, j);
    if (!(nj > 0)) break;
    const lt = rowp(left, t, p);
    memory.copy(lt, rowp(g, j, p), off(p));
    divs(nj, lt, p);
    filled++;
  }
  // g and norms are free now: they hold the reflectors and their scales.
  completeOrthonormal(left, p, filled, uCols, g, norms);

  if (tall && fullM) {
    transposeSquare(u, m);
  } else if (tall) {
    for (let i = 0; i < m; i++) {
      const ui = rowp(u, i, uCols);
      for (let t = 0; t < uCols; t++) stf(ui, t, ldf(rowp(left, t, m), i));
    }
  }
  if (tall) {
    for (let t = 0; t < n; t++) memory.copy(rowp(vh, t, n), rowp(v, ldi(order, t), n), off(n));
  } else {
    for (let i = 0; i < m; i++) {
      const ui = rowp(u, i, m);
      for (let t = 0; t < m; t++) stf(ui, t, ldf(rowp(v, ldi(order, t), m), i));
    }
  }
  return converged ? 0 : 1;
}
