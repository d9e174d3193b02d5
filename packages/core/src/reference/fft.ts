/** Reference FFT kernels: gather each 1-D signal along dim, transform in float64, scatter back. */
import type { FftParams } from "../ops/fft.ts";
import { contiguousStrides, forEachIndex, type Tensor } from "../tensor/tensor.ts";
import { output, reader, writer } from "./access.ts";
import { fftComplex, irfft, rfft } from "./fft-math.ts";

export function fftReference(p: FftParams): Tensor {
  const { x, dim, n, kind, norm } = p;
  const out = output(p.outShape, p.dtype);
  const X = reader(x);
  const W = writer(out);
  const inverse = kind === "ifft" || kind === "irfft";
  // Scale: "backward" scales the inverse by 1/n, "forward" the forward, "ortho" both by 1/sqrt(n).
  const scale = norm === "ortho" ? 1 / Math.sqrt(n) : (norm === "forward") !== inverse ? 1 / n : 1;
  const inLen = x.shape[dim];
  const sx = x.strides[dim];
  const cx = p.complexInput ? x.strides[x.rank - 1] : 0;
  const outStrides = contiguousStrides(p.outShape);
  const so = outStrides[dim];
  const outComplex = kind !== "irfft";
  const co = outComplex ? 1 : 0;
  // Loop over every dimension but dim (and the trailing re/im).
  const signalRank = p.complexInput ? x.rank - 1 : x.rank;
  const loopShape = x.shape.slice(0, signalRank).map((s, i) => (i === dim ? 1 : s));
  const outBase: number[] = [];
  forEachIndex(loopShape, outStrides.slice(0, signalRank), (pos) => outBase.push(pos));
  forEachIndex(loopShape, x.strides.slice(0, signalRank), (base, r) => {
    const ob = outBase[r];
    if (kind === "rfft") {
      const sig = new Float64Array(n);
      for (let i = 0; i < Math.min(n, inLen); i++) sig[i] = X(base + i * sx);
      const spec = rfft(sig, n);
      for (let i = 0; i < spec.length / 2; i++) {
        W(ob + i * so, spec[2 * i] * scale);
        W(ob + i * so + co, spec[2 * i + 1] * scale);
      }
      return;
    }
    const bins = kind === "irfft" ? Math.floor(n / 2) + 1 : n;
    const sig = new Float64Array(2 * bins);
    for (let i = 0; i < Math.min(bins, inLen); i++) {
      sig[2 * i] = X(base + i * sx);
      sig[2 * i + 1] = X(base + i * sx + cx);
    }
    if (kind === "irfft") {
      const res = irfft(sig, n);
      for (let i = 0; i < n; i++) W(ob + i * so, res[i] * scale);
      return;
    }
    const res = fftComplex(sig, n, inverse);
    for (let i = 0; i < n; i++) {
      W(ob + i * so, res[2 * i] * scale);
      W(ob + i * so + co, res[2 * i + 1] * scale);
    }
  });
  return out;
}
