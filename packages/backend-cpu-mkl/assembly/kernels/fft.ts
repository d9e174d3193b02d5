// Complex and real FFTs, f64, interleaved (re, im). Unnormalised in both directions.
// Powers of two: iterative radix-2 (SIMD complex butterflies, exact per-entry twiddles with
// octant symmetry). Other lengths: Bluestein's chirp-z on a power-of-two grid. Real
// transforms of even length pack pairs of reals into a half-length complex transform.
import { ldf, stf } from "./util";

const TWO_PI: f64 = 6.283185307179586;

@inline function isPow2(n: i32): bool {
  return n > 0 && (n & (n - 1)) == 0;
}

/** Smallest power of two >= n. In i64: an i32 doubling past 2^30 wraps to 0 and never ends. */
function nextPow2(n: i64): i64 {
  let s: i64 = 1;
  while (s < n) s <<= 1;
  return s;
}

/** Bytes of workspace fftCore(n) needs. */
function coreBytes(n: i32): i64 {
  if (n <= 1) return 0;
  if (isPow2(n)) return 8 * <i64>n; // n/2 complex twiddles
  const M = nextPow2(2 * <i64>n - 1);
  return 16 * <i64>n + 40 * M; // chirp (n), a (M), b (M) complex; twiddles (M/2) complex
}

function fftBytes(n: i32): i64 {
  if (n <= 1) return 0;
  const b = coreBytes(n);
  const r: i64 = (n & 1) == 0 ? coreBytes(n >> 1) : 16 * <i64>n + coreBytes(n);
  return r > b ? r : b;
}

/** Workspace (bytes) for fft_c2c, rfft_r2c and irfft_c2r of length n; -1 if it does not fit in i32. */
export function fftWorkspaceBytes(n: i32): i32 {
  const b = fftBytes(n);
  return b > 0x7fffffff ? -1 : <i32>b;
}

/** tw[k] = exp(-2 pi i k / n) for k < n/2 (n a power of two >= 2). */
function twiddles(tw: usize, n: i32): void {
  stf(tw, 0, 1.0);
  stf(tw, 1, 0.0);
  if (n < 4) return;
  const q = n >> 2;
  const e = n >> 3;
  const half = n >> 1;
  const step = TWO_PI / <f64>n;
  for (let k = 1; k <= e; k++) {
    const th = step * <f64>k;
    stf(tw, 2 * k, Math.cos(th));
    stf(tw, 2 * k + 1, -Math.sin(th));
  }
  // theta_k = pi/2 - theta_{q-k}
  for (let k = e + 1; k <= q; k++) {
    const j = q - k;
    stf(tw, 2 * k, -ldf(tw, 2 * j + 1));
    stf(tw, 2 * k + 1, -ldf(tw, 2 * j));
  }
  // theta_k = pi/2 + theta_{k-q}
  for (let k = q + 1; k < half; k++) {
    const j = k - q;
    stf(tw, 2 * k, ldf(tw, 2 * j + 1));
    stf(tw, 2 * k + 1, -ldf(tw, 2 * j));
  }
}

/** In-place radix-2 transform of n (power of two) complex points; tw from twiddles(tw, n). */
function radix2(x: usize, n: i32, tw: usize, inverse: bool): void {
  if (n <= 1) return;
  // Bit reversal.
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; (j & bit) != 0; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      const pi = x + ((<usize>i) << 4);
      const pj = x + ((<usize>j) << 4);
      const t = v128.load(pi);
      v128.store(pi, v128.load(pj));
      v128.store(pj, t);
    }
  }
  // len = 2: twiddle 1.
  for (let s = 0; s < n; s += 2) {
    const pa = x + ((<usize>s) << 4);
    const A = v128.load(pa);
    const B = v128.load(pa, 16);
    v128.store(pa, f64x2.add(A, B));
    v128.store(pa, f64x2.sub(A, B), 16);
  }
  const conj = inverse ? f64x2(1.0, -1.0) : f64x2(1.0, 1.0);
  const perp = f64x2(-1.0, 1.0);
  for (let len = 4; len <= n; len <<= 1) {
    const h = len >> 1;
    const stride = n / len;
    const hb = (<usize>h) << 4;
    if (h < 32) {
      // Few twiddles per stage: twiddle-outer, each loaded once.
      for (let k = 0; k < h; k++) {
        const W = f64x2.mul(v128.load(tw + ((<usize>(k * stride)) << 4)), conj); // (wr, wi)
        const Wp = f64x2.mul(v128.shuffle<f64>(W, W, 1, 0), perp); // (-wi, wr)
        for (let s = k; s < n; s += len) {
          const pa = x + ((<usize>s) << 4);
          const pb = pa + hb;
          const A = v128.load(pa);
          const B = v128.load(pb);
          const T = f64x2.add(f64x2.mul(v128.shuffle<f64>(B, B, 0, 0), W), f64x2.mul(v128.shuffle<f64>(B, B, 1, 1), Wp));
          v128.store(pa, f64x2.add(A, T));
          v128.store(pb, f64x2.sub(A, T));
        }
      }
    } else {
      // Long blocks: walk each block sequentially (cache friendly), twiddles strided.
      const tstep = (<usize>stride) << 4;
      for (let s = 0; s < n; s += len) {
        let pa = x + ((<usize>s) << 4);
        let pt = tw;
        for (let k = 0; k < h; k++) {
          const W = f64x2.mul(v128.load(pt), conj);
          const Wp = f64x2.mul(v128.shuffle<f64>(W, W, 1, 0), perp);
          const pb = pa + hb;
          const A = v128.load(pa);
          const B = v128.load(pb);
          const T = f64x2.add(f64x2.mul(v128.shuffle<f64>(B, B, 0, 0), W), f64x2.mul(v128.shuffle<f64>(B, B, 1, 1), Wp));
          v128.store(pa, f64x2.add(A, T));
          v128.store(pb, f64x2.sub(A, T));
          pa += 16;
          pt += tstep;
        }
      }
    }
  }
}

/** Complex product of two interleaved complex numbers held in v128. */
@inline function cmul(A: v128, B: v128): v128 {
  // (ar br - ai bi, ar bi + ai br)
  const Br = v128.shuffle<f64>(B, B, 0, 0);
  const Bi = v128.shuffle<f64>(B, B, 1, 1);
  const Ap = f64x2.mul(v128.shuffle<f64>(A, A, 1, 0), f64x2(-1.0, 1.0)); // (-ai, ar)
  return f64x2.add(f64x2.mul(A, Br), f64x2.mul(Ap, Bi));
}

function bluestein(x: usize, n: i32, inverse: bool, work: usize): void {
  const M = <i32>nextPow2(2 * <i64>n - 1); // fits: fftWorkspaceBytes(n) passed
  const chirp = work;
  const a = chirp + ((<usize>n) << 4);
  const b = a + ((<usize>M) << 4);
  const tw = b + ((<usize>M) << 4);
  const sgn: f64 = inverse ? 1.0 : -1.0;
  // chirp[j] = exp(sgn i pi j^2 / n), with j^2 reduced mod 2n (then to (-n, n]).
  const n2 = 2 * <i64>n;
  let sq: i64 = 0;
  for (let j = 0; j < n; j++) {
    let t = sq;
    if (t > <i64>n) t -= n2;
    const th = (Math.PI * <f64>t) / <f64>n;
    stf(chirp, 2 * j, Math.cos(th));
    stf(chirp, 2 * j + 1, sgn * Math.sin(th));
    sq = (sq + 2 * <i64>j + 1) % n2;
  }
  // a = x * chirp, zero-padded; b = conj(chirp) laid out circularly.
  for (let j = 0; j < n; j++) {
    const o = (<usize>j) << 4;
    v128.store(a + o, cmul(v128.load(x + o), v128.load(chirp + o)));
  }
  memory.fill(a + ((<usize>n) << 4), 0, (<usize>(M - n)) << 4);
  memory.fill(b, 0, (<usize>M) << 4);
  const cj = f64x2(1.0, -1.0);
  for (let j = 0; j < n; j++) {
    const c = f64x2.mul(v128.load(chirp + ((<usize>j) << 4)), cj);
    v128.store(b + ((<usize>j) << 4), c);
    if (j > 0) v128.store(b + ((<usize>(M - j)) << 4), c);
  }
  twiddles(tw, M);
  radix2(a, M, tw, false);
  radix2(b, M, tw, false);
  for (let i = 0; i < M; i++) {
    const o = (<usize>i) << 4;
    v128.store(a + o, cmul(v128.load(a + o), v128.load(b + o)));
  }
  radix2(a, M, tw, true);
  const inv = f64x2.splat(1.0 / <f64>M);
  for (let k = 0; k < n; k++) {
    const o = (<usize>k) << 4;
    v128.store(x + o, cmul(f64x2.mul(v128.load(a + o), inv), v128.load(chirp + o)));
  }
}

/** In-place unnormalised DFT of n complex points at x. */
function fftCore(x: usize, n: i32, inverse: bool, work: usize): void {
  if (n <= 1) return;
  if (isPow2(n)) {
    twiddles(work, n);
    radix2(x, n, work, inverse);
  } else {
    bluestein(x, n, inverse, work);
  }
}

/** Unnormalised complex DFT (sign -1 forward, +1 inverse). input and output may be the same buffer. */
export function fft_c2c(input: usize, output: usize, n: i32, inverse: i32, work: usize): void {
  if (n <= 0) return;
  if (output != input) memory.copy(output, input, (<usize>n) << 4);
  fftCore(output, n, inverse != 0, work);
}

/** Forward DFT of n reals into n/2+1 complex bins. In place (input == output) works. */
export function rfft_r2c(input: usize, output: usize, n: i32, work: usize): void {
  if (n <= 0) return;
  if ((n & 1) != 0) {
    // Odd: full complex transform of the real signal.
    const z = work;
    for (let j = 0; j < n; j++) {
      stf(z, 2 * j, ldf(input, j));
      stf(z, 2 * j + 1, 0.0);
    }
    fftCore(z, n, false, z + ((<usize>n) << 4));
    memory.copy(output, z, (<usize>((n >> 1) + 1)) << 4);
    stf(output, 1, 0.0); // DC of a real signal is real
    return;
  }
  // Even: z[j] = x[2j] + i x[2j+1], half-length transform, then untangle.
  const h = n >> 1;
  if (output != input) memory.copy(output, input, (<usize>n) << 3);
  fftCore(output, h, false, work);
  const z0r = ldf(output, 0);
  const z0i = ldf(output, 1);
  stf(output, 0, z0r + z0i);
  stf(output, 1, 0.0);
  stf(output, 2 * h, z0r - z0i);
  stf(output, 2 * h + 1, 0.0);
  const step = TWO_PI / <f64>n;
  const hk = h >> 1;
  for (let k = 1; k <= hk; k++) {
    const j = h - k;
    const ar = ldf(output, 2 * k);
    const ai = ldf(output, 2 * k + 1);
    const br = ldf(output, 2 * j);
    const bi = ldf(output, 2 * j + 1);
    // Fe = (Z[k] + conj Z[j]) / 2, Fo = (Z[k] - conj Z[j]) / (2i)
    const fer = 0.5 * (ar + br);
    const fei = 0.5 * (ai - bi);
    const for_ = 0.5 * (ai + bi);
    const foi = -0.5 * (ar - br);
    const th = step * <f64>k;
    const wr = Math.cos(th);
    const wi = -Math.sin(th);
    // t = w Fo
    const tr = wr * for_ - wi * foi;
    const ti = wr * foi + wi * for_;
    stf(output, 2 * k, fer + tr);
    stf(output, 2 * k + 1, fei + ti);
    // X[h-k] = conj(Fe - t)
    stf(output, 2 * j, fer - tr);
    stf(output, 2 * j + 1, -(fei - ti));
  }
}

/** Unnormalised inverse of rfft: n/2+1 complex bins to n reals (imag of DC/Nyquist ignored). In place works. */
export function irfft_c2r(input: usize, output: usize, n: i32, work: usize): void {
  if (n <= 0) return;
  if ((n & 1) != 0) {
    const z = work;
    const bins = (n >> 1) + 1;
    stf(z, 0, ldf(input, 0));
    stf(z, 1, 0.0);
    for (let k = 1; k < bins; k++) {
      const re = ldf(input, 2 * k);
      const im = ldf(input, 2 * k + 1);
      stf(z, 2 * k, re);
      stf(z, 2 * k + 1, im);
      stf(z, 2 * (n - k), re);
      stf(z, 2 * (n - k) + 1, -im);
    }
    fftCore(z, n, true, z + ((<usize>n) << 4));
    for (let j = 0; j < n; j++) stf(output, j, ldf(z, 2 * j));
    return;
  }
  const h = n >> 1;
  // Z'[k] = A + i B w', Z'[h-k] = conj(A - i B w'), A = X[k] + conj X[h-k], B = X[k] - conj X[h-k],
  // w' = exp(+2 pi i k / n); then z = inverse DFT_h(Z'), x[2m] = Re z[m], x[2m+1] = Im z[m].
  const x0 = ldf(input, 0);
  const xh = ldf(input, 2 * h);
  const step = TWO_PI / <f64>n;
  const hk = h >> 1;
  // Pairs first (they only read bins k and h-k), then bin 0 (reads bins 0 and h).
  for (let k = hk; k >= 1; k--) {
    const j = h - k;
    const ar = ldf(input, 2 * k);
    const ai = ldf(input, 2 * k + 1);
    const br = ldf(input, 2 * j);
    const bi = ldf(input, 2 * j + 1);
    const Ar = ar + br;
    const Ai = ai - bi;
    const Br = ar - br;
    const Bi = ai + bi;
    const th = step * <f64>k;
    const wr = Math.cos(th);
    const wi = Math.sin(th);
    // t = B w'
    const tr = Br * wr - Bi * wi;
    const ti = Br * wi + Bi * wr;
    // i t = (-ti, tr)
    stf(output, 2 * k, Ar - ti);
    stf(output, 2 * k + 1, Ai + tr);
    // conj(A - i t) = conj(Ar + ti, Ai - tr) = (Ar + ti, tr - Ai)
    stf(output, 2 * j, Ar + ti);
    stf(output, 2 * j + 1, tr - Ai);
  }
  stf(output, 0, x0 + xh);
  stf(output, 1, x0 - xh);
  fftCore(output, h, true, work);
}
