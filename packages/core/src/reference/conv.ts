/** Reference conv2d: direct loops, float64 accumulation. */
import type { Conv2dParams } from "../ops/conv2d.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { output, reader, writer } from "./access.ts";

export function conv2dReference(p: Conv2dParams): Tensor {
  const { n, c, h, w, outChannels: oc, kh, kw, groups, outH, outW } = p;
  const out = output([n, oc, outH, outW], p.dtype);
  const X = reader(p.input);
  const K = reader(p.weight);
  const Bias = p.bias ? reader(p.bias) : undefined;
  const W = writer(out);
  const [xs0, xs1, xs2, xs3] = p.input.strides;
  const [ks0, ks1, ks2, ks3] = p.weight.strides;
  const cg = c / groups;
  const og = oc / groups;
  let o = 0;
  for (let b = 0; b < n; b++) {
    for (let f = 0; f < oc; f++) {
      const g = Math.floor(f / og);
      const bias = Bias ? Bias(f * p.bias!.strides[0]) : 0;
      for (let y = 0; y < outH; y++) {
        for (let x = 0; x < outW; x++) {
          let acc = bias;
          for (let ci = 0; ci < cg; ci++) {
            const chan = g * cg + ci;
            for (let i = 0; i < kh; i++) {
              const iy = y * p.strideH - p.padTop + i * p.dilationH;
              const rowIn = iy >= 0 && iy < h;
              for (let j = 0; j < kw; j++) {
                const ix = x * p.strideW - p.padLeft + j * p.dilationW;
                const k = K(f * ks0 + ci * ks1 + i * ks2 + j * ks3);
                // Padding is zeros that are multiplied, as in torch: a NaN or infinite tap
                // over the padding makes NaN (0 * inf), the same in every kernel, and a +0
                // product turns a sum of -0 into +0 at the borders, as torch's does.
                if (!rowIn || ix < 0 || ix >= w) {
                  acc += k * 0;
                  continue;
                }
                acc += X(b * xs0 + chan * xs1 + iy * xs2 + ix * xs3) * k;
              }
            }
          }
          W(o++, acc);
        }
      }
    }
  }
  return out;
}
