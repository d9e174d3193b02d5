/**
 * Float64 reference FFTs. Complex data is interleaved (re, im) in a Float64Array of length 2n.
 * All transforms are unnormalised, like numpy's "backward" norm: the caller divides by n.
 *
 * Powers of two use an iterative radix-2 transform; every other length goes through Bluestein's
 * chirp-z algorithm on a power-of-two grid, so every length costs O(n log n).
 */
import { ArgumentError } from "../errors.ts";

function checkSize(op: string, n: number): void {
  if (!Number.isInteger(n) || n < 0) {
    throw new ArgumentError(`${op}: n must be a non-negative integer, got ${n}`);
  }
}

function checkLength(op: string, name: string, array: ArrayLike<number>, expected: number): void {
  if (array.length !== expected) {
    throw new ArgumentError(`${op}: ${name} must have ${expected} elements, got ${array.length}`);
  }
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.round(Math.log2(n)) === n;
}

/**
 * Unnormalised DFT of n complex points: X[k] = sum_j x[j] exp(-+2 pi i j k / n), with the minus
 * sign forward and the plus sign when `inverse`. Returns a new array; `data` is left alone.
 */
export function fftComplex(data: Float64Array, n: number, inverse: boolean): Float64Array {
  checkSize("fftComplex", n);
  checkLength("fftComplex", "data", data, 2 * n);
  if (n <= 1 || isPowerOfTwo(n)) {
    const out = Float64Array.from(data);
    radix2InPlace(out, n, inverse);
    return out;
  }
  return bluestein(data, n, inverse);
}

/** In-place iterative radix-2 DFT; n must be a power of two (or 0, 1: nothing to do). */
function radix2InPlace(x: Float64Array, n: number, inverse: boolean): void {
  if (n <= 1) return;
  // Bit-reversal permutation, so the butterflies below can work in place.
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      const re = x[2 * i];
      const im = x[2 * i + 1];
      x[2 * i] = x[2 * j];
      x[2 * i + 1] = x[2 * j + 1];
      x[2 * j] = re;
      x[2 * j + 1] = im;
    }
  }
  // Twiddles exp(-+2 pi i k / n) for k < n/2, each from its own cos/sin call: a recurrence
  // would be cheaper but its error grows with n.
  const sign = inverse ? 1 : -1;
  const half = n >> 1;
  const tw = new Float64Array(2 * half);
  for (let k = 0; k < half; k++) {
    const theta = (2 * Math.PI * k) / n;
    tw[2 * k] = Math.cos(theta);
    tw[2 * k + 1] = sign * Math.sin(theta);
  }
  for (let len = 2; len <= n; len <<= 1) {
    const h = len >> 1;
    const stride = n / len; // index step into the size-n twiddle table
    for (let start = 0; start < n; start += len) {
      for (let k = 0; k < h; k++) {
        const wr = tw[2 * k * stride];
        const wi = tw[2 * k * stride + 1];
        const a = 2 * (start + k);
        const b = a + 2 * h;
        const br = x[b] * wr - x[b + 1] * wi;
        const bi = x[b] * wi + x[b + 1] * wr;
        x[b] = x[a] - br;
        x[b + 1] = x[a + 1] - bi;
        x[a] += br;
        x[a + 1] += bi;
      }
    }
  }
}

/**
 * Bluestein's algorithm: with jk = (j^2 + k^2 - (k-j)^2) / 2, the DFT becomes
 * X[k] = c[k] * sum_j (x[j] c[j]) conj(c[k-j]) with the chirp c[j] = exp(-+i pi j^2 / n),
 * a convolution that a power-of-two FFT of size >= 2n-1 computes exactly (no wrap-around).
 */
function bluestein(data: Float64Array, n: number, inverse: boolean): Float64Array {
  const sign = inverse ? 1 : -1;
  // Chirp angles use j^2 mod 2n (exact integer arithmetic, kept incrementally) so that the
  // argument of cos/sin stays small and accurate even where j^2 is huge.
  const chirp = new Float64Array(2 * n);
  for (let j = 0, sq = 0; j < n; j++) {
    const theta = (Math.PI * sq) / n;
    chirp[2 * j] = Math.cos(theta);
    chirp[2 * j + 1] = sign * Math.sin(theta);
    sq = (sq + 2 * j + 1) % (2 * n); // (j+1)^2 = j^2 + 2j + 1
  }
  let size = 1;
  while (size < 2 * n - 1) size *= 2;

  // a = x * c, zero-padded.
  const a = new Float64Array(2 * size);
  for (let j = 0; j < n; j++) {
    const xr = data[2 * j];
    const xi = data[2 * j + 1];
    const cr = chirp[2 * j];
    const ci = chirp[2 * j + 1];
    a[2 * j] = xr * cr - xi * ci;
    a[2 * j + 1] = xr * ci + xi * cr;
  }
  // b = conj(c), laid out circularly: b[j] and b[size - j] both hold conj(c[j]) (c is even in j).
  const b = new Float64Array(2 * size);
  for (let j = 0; j < n; j++) {
    b[2 * j] = chirp[2 * j];
    b[2 * j + 1] = -chirp[2 * j + 1];
    if (j > 0) {
      b[2 * (size - j)] = chirp[2 * j];
      b[2 * (size - j) + 1] = -chirp[2 * j + 1];
    }
  }
  // Circular convolution by the convolution theorem.
  radix2InPlace(a, size, false);
  radix2InPlace(b, size, false);
  for (let i = 0; i < size; i++) {
    const ar = a[2 * i];
    const ai = a[2 * i + 1];
    a[2 * i] = ar * b[2 * i] - ai * b[2 * i + 1];
    a[2 * i + 1] = ar * b[2 * i + 1] + ai * b[2 * i];
  }
  radix2InPlace(a, size, true);

  // X[k] = c[k] * conv[k] / size (the inverse transform above is unnormalised).
  const out = new Float64Array(2 * n);
  for (let k = 0; k < n; k++) {
    const vr = a[2 * k] / size;
    const vi = a[2 * k + 1] / size;
    const cr = chirp[2 * k];
    const ci = chirp[2 * k + 1];
    out[2 * k] = vr * cr - vi * ci;
    out[2 * k + 1] = vr * ci + vi * cr;
  }
  return out;
}

/** Number of complex bins of a real transform of length n: floor(n/2)+1, and 0 when n = 0. */
function realBins(n: number): number {
  return n === 0 ? 0 : Math.floor(n / 2) + 1;
}

/**
 * Unnormalised forward DFT of n real points, returning the floor(n/2)+1 non-negative-frequency
 * bins (interleaved complex); the rest follow by Hermitian symmetry. n = 0 gives an empty array.
 */
export function rfft(x: Float64Array, n: number): Float64Array {
  checkSize("rfft", n);
  checkLength("rfft", "x", x, n);
  // Clarity first: a full complex transform of the real signal, keeping the first half.
  const z = new Float64Array(2 * n);
  for (let j = 0; j < n; j++) z[2 * j] = x[j];
  const bins = fftComplex(z, n, false).slice(0, 2 * realBins(n));
  // The DC bin and (n even) the Nyquist bin of a real signal are real: their imaginary
  // parts are exactly 0, as torch gives, not the rounding error (or NaN from an infinite
  // sample) the complex transform leaves there.
  if (n > 0) bins[1] = 0;
  if (n > 0 && n % 2 === 0) bins[n + 1] = 0;
  return bins;
}

/**
 * Unnormalised inverse of rfft: from floor(n/2)+1 complex bins to n real points (divide by n
 * to invert rfft). The bins are extended by Hermitian symmetry, X[n-k] = conj(X[k]); as in numpy,
 * the imaginary parts of the DC bin and (for even n) the Nyquist bin are ignored.
 */
export function irfft(X: Float64Array, n: number): Float64Array {
  checkSize("irfft", n);
  const bins = realBins(n);
  checkLength("irfft", "X", X, 2 * bins);
  const z = new Float64Array(2 * n);
  for (let k = 0; k < bins; k++) {
    z[2 * k] = X[2 * k];
    z[2 * k + 1] = X[2 * k + 1];
  }
  if (n > 0) z[1] = 0;
  if (n > 0 && n % 2 === 0) z[2 * (n / 2) + 1] = 0;
  for (let k = 1; k <= n - bins; k++) {
    z[2 * (n - k)] = X[2 * k];
    z[2 * (n - k) + 1] = -X[2 * k + 1];
  }
  const full = fftComplex(z, n, true);
  const out = new Float64Array(n);
  for (let j = 0; j < n; j++) out[j] = full[2 * j];
  return out;
}
