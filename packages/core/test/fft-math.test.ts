import { ArgumentError, seededRandom } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { fftComplex, irfft, rfft } from "../src/reference/fft-math.ts";

const TOL = 1e-9;
const SIZES = [0, 1, 2, 3, 5, 8, 12, 17, 64, 97, 128, 1009];

/** Entries uniform in [-1, 1). */
function random(seed: number, length: number): Float64Array {
  const rng = seededRandom(seed);
  const a = new Float64Array(length);
  for (let i = 0; i < length; i++) a[i] = 2 * rng() - 1;
  return a;
}

/** The O(n^2) definition, with jk reduced mod n so the angles stay exact. */
function naiveDft(x: Float64Array, n: number, inverse: boolean): Float64Array {
  const sign = inverse ? 1 : -1;
  const out = new Float64Array(2 * n);
  for (let k = 0; k < n; k++) {
    let re = 0;
    let im = 0;
    for (let j = 0; j < n; j++) {
      const theta = (sign * 2 * Math.PI * ((j * k) % n)) / n;
      const c = Math.cos(theta);
      const s = Math.sin(theta);
      re += x[2 * j] * c - x[2 * j + 1] * s;
      im += x[2 * j] * s + x[2 * j + 1] * c;
    }
    out[2 * k] = re;
    out[2 * k + 1] = im;
  }
  return out;
}

function norm(a: Float64Array): number {
  let s = 0;
  for (const x of a) s += x * x;
  return Math.sqrt(s);
}

/** ||x - y|| / ||y|| (absolute when y is zero). */
function relErr(x: Float64Array, y: Float64Array): number {
  expect(x.length).toBe(y.length);
  const d = x.map((v, i) => v - y[i]);
  const ny = norm(y);
  return ny > 0 ? norm(d) / ny : norm(d);
}

describe("fftComplex", () => {
  for (const n of SIZES) {
    it(`matches the naive DFT, n=${n}`, () => {
      const x = random(10 + n, 2 * n);
      const before = Float64Array.from(x);
      for (const inverse of [false, true]) {
        const got = fftComplex(x, n, inverse);
        expect(got.length).toBe(2 * n);
        expect(got).not.toBe(x);
        expect(relErr(got, naiveDft(x, n, inverse))).toBeLessThan(TOL);
      }
      expect(x).toEqual(before);
    });
  }

  it("round-trips large composite and prime lengths", () => {
    for (const n of [1000, 4096, 10007]) {
      const x = random(20 + n, 2 * n);
      const back = fftComplex(fftComplex(x, n, false), n, true).map((v) => v / n);
      expect(relErr(back, x)).toBeLessThan(1e-12);
    }
  });

  it("transforms an impulse and a constant exactly enough", () => {
    const n = 6;
    const impulse = new Float64Array(2 * n);
    impulse[0] = 1;
    const f = fftComplex(impulse, n, false);
    for (let k = 0; k < n; k++) {
      expect(f[2 * k]).toBeCloseTo(1, 14);
      expect(f[2 * k + 1]).toBeCloseTo(0, 14);
    }
    const ones = new Float64Array(2 * n);
    for (let j = 0; j < n; j++) ones[2 * j] = 1;
    const g = fftComplex(ones, n, true);
    expect(g[0]).toBeCloseTo(n, 13);
    for (let k = 1; k < 2 * n; k++) expect(g[k]).toBeCloseTo(0, 13);
  });

  it("rejects bad arguments", () => {
    expect(() => fftComplex(new Float64Array(3), 2, false)).toThrow(ArgumentError);
    expect(() => fftComplex(new Float64Array(0), -1, false)).toThrow(ArgumentError);
    expect(() => fftComplex(new Float64Array(5), 2.5, false)).toThrow(ArgumentError);
  });
});

/** Real signal as interleaved complex with zero imaginary parts. */
function complexify(x: Float64Array): Float64Array {
  const z = new Float64Array(2 * x.length);
  for (let j = 0; j < x.length; j++) z[2 * j] = x[j];
  return z;
}

describe("rfft / irfft", () => {
  for (const n of SIZES) {
    const bins = n === 0 ? 0 : Math.floor(n / 2) + 1;

    it(`rfft matches the naive DFT, n=${n}`, () => {
      const x = random(30 + n, n);
      const got = rfft(x, n);
      expect(got.length).toBe(2 * bins);
      expect(relErr(got, naiveDft(complexify(x), n, false).slice(0, 2 * bins))).toBeLessThan(TOL);
    });

    it(`irfft inverts rfft (after dividing by n) and matches the naive DFT, n=${n}`, () => {
      const x = random(40 + n, n);
      const back = irfft(rfft(x, n), n).map((v) => v / n);
      expect(back.length).toBe(n);
      expect(relErr(back, x)).toBeLessThan(TOL);

      // Arbitrary bins: compare with the naive inverse of their Hermitian extension.
      const X = random(50 + n, 2 * bins);
      if (n > 0) X[1] = 0;
      if (n > 0 && n % 2 === 0) X[2 * (bins - 1) + 1] = 0;
      const full = new Float64Array(2 * n);
      full.set(X.subarray(0, 2 * Math.min(bins, n)));
      for (let k = 1; k <= n - bins; k++) {
        full[2 * (n - k)] = X[2 * k];
        full[2 * (n - k) + 1] = -X[2 * k + 1];
      }
      const want = naiveDft(full, n, true).filter((_, i) => i % 2 === 0);
      expect(relErr(irfft(X, n), want)).toBeLessThan(TOL);
    });
  }

  it("ignores the imaginary parts of the DC and Nyquist bins", () => {
    for (const n of [6, 7]) {
      const bins = Math.floor(n / 2) + 1;
      const X = random(60 + n, 2 * bins);
      X[1] = 0;
      if (n % 2 === 0) X[2 * bins - 1] = 0;
      const Y = Float64Array.from(X);
      Y[1] = 5;
      if (n % 2 === 0) Y[2 * bins - 1] = -3;
      expect(irfft(Y, n)).toEqual(irfft(X, n));
    }
  });

  it("rejects bad arguments", () => {
    expect(() => rfft(new Float64Array(3), 4)).toThrow(ArgumentError);
    expect(() => irfft(new Float64Array(4), 4)).toThrow(ArgumentError);
    expect(() => irfft(new Float64Array(2), 0)).toThrow(ArgumentError);
  });
});
