/**
 * The reference rfft's DC bin and (even n) Nyquist bin: their imaginary parts are exactly 0
 * for a real signal, as torch.fft.rfft gives. The complex transform left its rounding error
 * there (-3.9e-16 at n = 5, -5.8e-15 at n = 100). Every bin is also checked against a
 * direct float64 DFT.
 */
import { randn, rfft } from "@backplane/core";
import { describe, expect, it } from "vitest";

/** Bin k of the DFT of the real x, summed directly. */
function dftBin(x: Float64Array, k: number): [number, number] {
  const n = x.length;
  let re = 0;
  let im = 0;
  for (let j = 0; j < n; j++) {
    const angle = (-2 * Math.PI * ((j * k) % n)) / n;
    re += x[j] * Math.cos(angle);
    im += x[j] * Math.sin(angle);
  }
  return [re, im];
}

describe("reference rfft: the DC and Nyquist bins are real", () => {
  for (const n of [5, 6, 7, 12, 97, 100]) {
    it(`n = ${n}: imaginary parts exactly 0 there, every bin as the direct DFT`, () => {
      const rows = 3;
      const x = randn([rows, n], { dtype: "float64", seed: n });
      const spec = rfft(x);
      const bins = Math.floor(n / 2) + 1;
      expect(spec.shape).toEqual([rows, bins, 2]);
      const s = spec.toFloat64();
      const all = x.toFloat64();
      for (let r = 0; r < rows; r++) {
        const o = r * bins * 2;
        expect(s[o + 1] === 0).toBe(true);
        if (n % 2 === 0) expect(s[o + 2 * (bins - 1) + 1] === 0).toBe(true);
        const signal = all.subarray(r * n, (r + 1) * n);
        for (let k = 0; k < bins; k++) {
          const [re, im] = dftBin(signal, k);
          expect(Math.abs(s[o + 2 * k] - re)).toBeLessThan(1e-12 * n);
          expect(Math.abs(s[o + 2 * k + 1] - im)).toBeLessThan(1e-12 * n);
        }
      }
    });
  }
});
