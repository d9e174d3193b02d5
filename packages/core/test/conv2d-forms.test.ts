/**
 * conv2d's argument forms as torch 2.13 takes them: an unbatched [C, H, W] image (result
 * [O, oh, ow]), stride / padding / dilation as one-element lists, and a weight with no
 * output channels refused. The reference kernel, float64.
 */
import {
  conv2d,
  explain,
  fromFloat64,
  full,
  memoryStats,
  randn,
  ShapeError,
  type Tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

function maxAbsDiff(a: Tensor, b: Tensor): number {
  expect(a.shape).toEqual(b.shape);
  const x = a.toFloat64();
  const y = b.toFloat64();
  let d = 0;
  for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i] - y[i]));
  return Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
}

describe("conv2d argument forms", () => {
  const w = randn([4, 3, 3, 3], { dtype: "float64", seed: 1 });
  const bias = randn([4], { dtype: "float64", seed: 2 });

  it("an unbatched [C, H, W] image gives [O, oh, ow], the batched result's only image", () => {
    const image = randn([3, 7, 6], { dtype: "float64", seed: 3 });
    const opts = { padding: 1, stride: 2, bias };
    const one = conv2d(image, w, opts);
    const batched = conv2d(image.reshape([1, 3, 7, 6]), w, opts);
    expect(one.shape).toEqual([4, 4, 3]);
    expect(maxAbsDiff(one, batched.reshape([4, 4, 3]))).toBe(0);
    // A non-contiguous image (a transposed view) too.
    const t = randn([3, 6, 7], { dtype: "float64", seed: 4 }).transpose(1, 2);
    expect(maxAbsDiff(conv2d(t, w), conv2d(t.contiguous(), w))).toBe(0);
  });

  it("stride, padding and dilation as one-element lists mean both sides", () => {
    const x = randn([2, 3, 9, 8], { dtype: "float64", seed: 5 });
    const a = conv2d(x, w, { stride: [2], padding: [1], dilation: [2] });
    const b = conv2d(x, w, { stride: 2, padding: 1, dilation: 2 });
    expect(maxAbsDiff(a, b)).toBe(0);
  });

  it("refuses a weight with no output channels, and inputs of rank other than 3 or 4", () => {
    const x = randn([1, 3, 5, 5], { dtype: "float64" });
    expect(() => conv2d(x, randn([0, 3, 3, 3], { dtype: "float64" }))).toThrow(ShapeError);
    expect(() => conv2d(randn([5, 5], { dtype: "float64" }), w)).toThrow(ShapeError);
    expect(() => conv2d(x, w, { stride: [2, 2, 2] as never })).toThrow(/stride/);
  });

  // torch 2.13: "Only zero batch or zero channel inputs are supported" for [1, 3, 0, 5] even
  // with padding; we returned [1, 4, 2, 7] of bias alone.
  it("refuses an empty plane unless the batch or the channels are empty, as torch", () => {
    const opts = { padding: 2, bias };
    const noHeight = randn([1, 3, 0, 5], { dtype: "float64" });
    const noWidth = randn([3, 6, 0], { dtype: "float64" });
    const noBatch = randn([0, 3, 0, 5], { dtype: "float64" });
    expect(() => conv2d(noHeight, w, opts)).toThrow(
      /empty height; only the batch or the channels may be 0/,
    );
    expect(() => conv2d(noWidth, w, opts)).toThrow(/empty width/);
    // An empty batch is taken, as torch takes it ([0, 4, 2, 7]).
    const y = conv2d(noBatch, w, opts);
    expect(y.shape).toEqual([0, 4, 2, 7]);
    for (const t of [noHeight, noWidth, noBatch, y]) t.dispose();
  });

  it("names the padded size and the dilated kernel when the kernel does not fit", () => {
    const x = randn([1, 3, 4, 5], { dtype: "float64" });
    expect(() => conv2d(x, w, { dilation: 3, padding: [1, 0] })).toThrow(
      "the 3x3 kernel (7x7 with dilation) is larger than the 6x5 padded input",
    );
    x.dispose();
  });
});

describe("explain() of an unbatched conv2d", () => {
  it("explains it as the batch of one it runs, and leaves no view holding the input", () => {
    const before = memoryStats("cpu").allocatedBytes;
    const x = randn([3, 9, 9], { seed: 6 });
    const w = randn([4, 3, 3, 3], { seed: 7 });
    const e = explain("conv2d", x, w, { stride: [2] });
    expect(e.selected).toBeDefined();
    // eigh's UPLO "U" view too: prepare() makes it, explain() disposes it.
    const a = randn([3, 3], { seed: 8 });
    explain("eigh", a, { UPLO: "U" });
    for (const t of [x, w, a]) t.dispose();
    expect(memoryStats("cpu").allocatedBytes).toBe(before);
  });
});

describe("conv2d's padding is multiplied zeros, as torch's", () => {
  it("a -0 input and bias give -0 inside and +0 where a tap lies on the padding", () => {
    // torch: F.conv2d(-torch.zeros(1,1,3,3), torch.ones(1,1,3,3), -torch.zeros(1), padding=1)
    // has its sign bit set only at the centre.
    const x = full([1, 1, 3, 3], -0, { dtype: "float64" });
    const w = full([1, 1, 3, 3], 1, { dtype: "float64" });
    const b = full([1], -0, { dtype: "float64" });
    const y = conv2d(x, w, { padding: 1, bias: b });
    const negativeZero = Array.from(y.toFloat64(), (v) => Object.is(v, -0));
    expect(negativeZero).toEqual([false, false, false, false, true, false, false, false, false]);
    for (const t of [x, w, b, y]) t.dispose();
  });

  it("an infinite tap over the padding makes NaN there (0 * inf), inf inside", () => {
    const x = full([1, 1, 4, 4], 1, { dtype: "float64" });
    const wd = new Float64Array(9).fill(1);
    wd[0] = Number.POSITIVE_INFINITY;
    const w = fromFloat64(wd, [1, 1, 3, 3], "float64");
    const y = conv2d(x, w, { padding: 1 }).toFloat64();
    // torch: the first row and column NaN, the rest inf.
    for (let i = 0; i < 4; i++)
      for (let j = 0; j < 4; j++)
        expect(y[i * 4 + j], `${i},${j}`).toBe(
          i === 0 || j === 0 ? Number.NaN : Number.POSITIVE_INFINITY,
        );
    for (const t of [x, w]) t.dispose();
  });
});

describe("conv2d's per-shape ranking key", () => {
  it("tells 'same' padding with an even kernel (one more after than before) from padding 0", async () => {
    const { ops } = await import("@backplane/core/backend");
    const x = randn([1, 2, 8, 8], { seed: 7 });
    const w = randn([3, 2, 2, 2], { seed: 8 });
    const same = ops.conv2d.prepare(x, w, { padding: "same" });
    const zero = ops.conv2d.prepare(x, w, { padding: 0 });
    // Both pad 0 at the top and left; "same" gives 8x8 outputs, padding 0 gives 7x7.
    expect([same.padTop, same.padLeft, zero.padTop, zero.padLeft]).toEqual([0, 0, 0, 0]);
    expect(ops.conv2d.shapeKey(same)).not.toBe(ops.conv2d.shapeKey(zero));
    for (const t of [x, w]) t.dispose();
  });
});
