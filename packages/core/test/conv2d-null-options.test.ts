/**
 * conv2d's stride, dilation and groups of null are ArgumentErrors, as torch 2.13 refuses
 * None for each (a TypeError there) and as padding null already was: null once took the
 * default silently, so `{ stride: null }` ran with stride 1. Absent (undefined) options
 * keep their defaults; bias null stays "no bias" (torch's bias=None).
 */
import {
  ArgumentError,
  conv2d,
  conv2dPrepack,
  quantizePerTensor,
  randn,
  type Tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

/** torch.nn.functional.conv2d's direct sum in float64, for the defaults' check. */
function directConv(x: Tensor, w: Tensor, bias: Tensor): Float64Array {
  const [n, c, h, wd] = x.shape;
  const [o, , kh, kw] = w.shape;
  const [X, W, B] = [x.toFloat64(), w.toFloat64(), bias.toFloat64()];
  const oh = h - kh + 1;
  const ow = wd - kw + 1;
  const y = new Float64Array(n * o * oh * ow);
  let at = 0;
  for (let b = 0; b < n; b++)
    for (let f = 0; f < o; f++)
      for (let i = 0; i < oh; i++)
        for (let j = 0; j < ow; j++) {
          let acc = B[f];
          for (let ch = 0; ch < c; ch++)
            for (let u = 0; u < kh; u++)
              for (let v = 0; v < kw; v++)
                acc +=
                  X[((b * c + ch) * h + i + u) * wd + j + v] * W[((f * c + ch) * kh + u) * kw + v];
          y[at++] = acc;
        }
  return y;
}

describe("conv2d options of null", () => {
  const x = randn([2, 3, 7, 6], { dtype: "float64", seed: 1 });
  const w = randn([4, 3, 3, 2], { dtype: "float64", seed: 2 });
  const bias = randn([4], { dtype: "float64", seed: 3 });

  it("stride, dilation, groups and padding of null are ArgumentErrors naming the option", () => {
    for (const name of ["stride", "dilation", "groups", "padding"]) {
      expect(() => conv2d(x, w, { [name]: null } as never), name).toThrow(ArgumentError);
      expect(() => conv2d(x, w, { [name]: null } as never), name).toThrow(
        new RegExp(`conv2d: ${name} must be an integer.*got null`),
      );
    }
  });

  it("absent options keep torch's defaults (stride 1, no padding, dilation 1, one group)", () => {
    const opts = { bias, stride: undefined, padding: undefined, dilation: undefined };
    const y = conv2d(x, w, { ...opts, groups: undefined }).toFloat64();
    const want = directConv(x, w, bias);
    expect(y.length).toBe(want.length);
    for (let i = 0; i < want.length; i++) expect(y[i]).toBeCloseTo(want[i], 12);
    expect(conv2d(x, w, { bias: null }).shape).toEqual([2, 4, 5, 5]);
  });
});

describe("conv2dPrepack's geometry options", () => {
  it("refuses null as torch refuses None; absent options keep their defaults", () => {
    const w = quantizePerTensor(randn([4, 3, 3, 3], { seed: 5 }), 0.02, 0, "qint8");
    for (const name of ["stride", "padding", "dilation", "groups"] as const) {
      expect(() => conv2dPrepack(w, undefined, { [name]: null } as never), name).toThrow(
        ArgumentError,
      );
    }
    const packed = conv2dPrepack(w);
    expect(packed.stride).toEqual([1, 1]);
    expect(packed.padding).toEqual([0, 0]);
    expect(packed.dilation).toEqual([1, 1]);
    expect(packed.groups).toBe(1);
  });
});
