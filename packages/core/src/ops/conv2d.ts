/** conv2d: NCHW input, OIHW weight; stride, padding, dilation, groups (torch.nn.functional.conv2d). */

import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import { bytesPerElement } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { checkFloat, checkOptions, checkRank, checkSame, checkTensor } from "./validate.ts";

export type Pair = number | readonly [number] | readonly [number, number];

export interface Conv2dOptions {
  bias?: Tensor | null;
  stride?: Pair;
  /** Zero padding per side, or "valid" (0) / "same" (stride 1 only). */
  padding?: Pair | "valid" | "same";
  dilation?: Pair;
  groups?: number;
}

export interface Conv2dParams extends OpParams {
  input: Tensor;
  weight: Tensor;
  bias: Tensor | null;
  n: number;
  c: number;
  h: number;
  w: number;
  outChannels: number;
  kh: number;
  kw: number;
  strideH: number;
  strideW: number;
  /** Padding on top/left; "same" may pad one more on bottom/right. */
  padTop: number;
  padLeft: number;
  dilationH: number;
  dilationW: number;
  groups: number;
  outH: number;
  outW: number;
}

/**
 * Kernels index with 32-bit integers (WASM, WGSL, CUDA): every element count and byte
 * offset a conv2d kernel may form must stay below this, or it would wrap and read or
 * write outside its buffers.
 */
export const CONV_INDEX_LIMIT = 2 ** 31 - 1;

/** A stride, padding or dilation as [h, w] (a number is both), checked for `op`. */
export function convPair(op: string, name: string, v: unknown, min: number): [number, number] {
  // A number or a one-element list is both sides, as torch's _pair.
  const p = typeof v === "number" ? [v, v] : Array.isArray(v) && v.length === 1 ? [v[0], v[0]] : v;
  if (
    !Array.isArray(p) ||
    p.length !== 2 ||
    !p.every((x) => Number.isInteger(x) && x >= min && x <= CONV_INDEX_LIMIT)
  ) {
    throw new ArgumentError(
      `${op}: ${name} must be an integer in [${min}, 2^31 - 1] or a pair of them, got ${show(v)}`,
    );
  }
  return [p[0], p[1]];
}

/** Refuses sizes whose index arithmetic would overflow a 32-bit kernel, naming the limit. */
export function checkIndexRange(what: string, value: number, op = "conv2d"): void {
  if (value > CONV_INDEX_LIMIT) {
    throw new ShapeError(
      `${op}: the ${what} would be ${value}, above the 2^31 - 1 that kernels can index; use smaller padding, dilation or input`,
    );
  }
}

/**
 * The params of a batch; an unbatched [C, H, W] input (as torch takes it) becomes a batch
 * of one, a view the caller disposes (conv2d() and explain() do).
 */
function prepare(input: Tensor, weight: Tensor, opts?: Conv2dOptions): Conv2dParams {
  checkTensor("conv2d", "input", input);
  if (input.rank !== 3) return prepareBatch(input, weight, opts);
  const batch = input.reshape([1, ...input.shape]);
  try {
    return prepareBatch(batch, weight, opts);
  } catch (e) {
    batch.dispose();
    throw e;
  }
}

// Long: conv2d's argument checks in the order torch reports them; each is a line or two.
function prepareBatch(input: Tensor, weight: Tensor, opts?: Conv2dOptions): Conv2dParams {
  checkTensor("conv2d", "weight", weight);
  const o = checkOptions("conv2d", opts, [
    "bias",
    "stride",
    "padding",
    "dilation",
    "groups",
  ]) as Conv2dOptions;
  // Checked by type, not truthiness: bias 0, false or "" is an ArgumentError, not "no bias".
  const bias = o.bias == null ? null : checkTensor("conv2d", "bias", o.bias);
  const ts = bias ? [input, weight, bias] : [input, weight];
  checkSame("conv2d", ["input", "weight", "bias"], ts);
  checkFloat("conv2d", "input", input);
  checkRank("conv2d", "input", input, 4); // conv2d() takes an unbatched [C, H, W] first
  checkRank("conv2d", "weight", weight, 4);
  if (weight.shape[0] === 0)
    throw new ShapeError(
      `conv2d: weight [${weight.shape}] has no output channels; torch refuses it too (at least groups are expected at dimension 0)`,
    );
  const [n, c, h, w] = input.shape;
  const [outChannels, cPerGroup, kh, kw] = weight.shape;
  // Only an absent option takes its default: null is refused, as torch refuses None (and
  // as padding null always was).
  const groups = o.groups === undefined ? 1 : o.groups;
  if (!Number.isInteger(groups) || groups < 1)
    throw new ArgumentError(`conv2d: groups must be an integer >= 1, got ${show(groups)}`);
  if (c % groups !== 0 || outChannels % groups !== 0) {
    throw new ShapeError(
      `conv2d: groups=${groups} must divide input channels (${c}) and output channels (${outChannels})`,
    );
  }
  if (cPerGroup !== c / groups) {
    throw new ShapeError(
      `conv2d: weight [${weight.shape}] expects ${cPerGroup} input channels per group, input has ${c} channels in ${groups} group(s) (${c / groups} each)`,
    );
  }
  if (kh === 0 || kw === 0)
    throw new ShapeError(
      `conv2d: weight [${weight.shape}] has a kernel of size ${kh}x${kw}; kernels are at least 1x1 (as in torch)`,
    );
  if (bias && (bias.rank !== 1 || bias.shape[0] !== outChannels)) {
    throw new ShapeError(`conv2d: bias must have shape [${outChannels}], got [${bias.shape}]`);
  }
  const [strideH, strideW] = convPair("conv2d", "stride", o.stride === undefined ? 1 : o.stride, 1);
  const [dilationH, dilationW] = convPair(
    "conv2d",
    "dilation",
    o.dilation === undefined ? 1 : o.dilation,
    1,
  );
  let padTop: number;
  let padLeft: number;
  let padH: number;
  let padW: number;
  if (o.padding === "same") {
    if (strideH !== 1 || strideW !== 1)
      throw new ArgumentError('conv2d: padding "same" needs stride 1 (as in torch)');
    padH = dilationH * (kh - 1);
    padW = dilationW * (kw - 1);
    padTop = Math.floor(padH / 2);
    padLeft = Math.floor(padW / 2);
  } else {
    [padTop, padLeft] = convPair(
      "conv2d",
      "padding",
      o.padding === "valid" || o.padding === undefined ? 0 : o.padding,
      0,
    );
    padH = 2 * padTop;
    padW = 2 * padLeft;
  }
  // Bounds before any kernel: extents, padded sizes and byte counts a kernel may form.
  const bytes = bytesPerElement(input.dtype);
  checkIndexRange("dilated kernel height", dilationH * (kh - 1) + 1);
  checkIndexRange("dilated kernel width", dilationW * (kw - 1) + 1);
  checkIndexRange("padded input height", h + padH);
  checkIndexRange("padded input width", w + padW);
  checkIndexRange("padded input size in bytes", n * c * (h + padH) * (w + padW) * bytes);
  // An empty plane is only taken in an empty batch or with no channels, as in torch: padding
  // around nothing would make an output of padding alone.
  if ((h === 0 || w === 0) && n > 0 && c > 0)
    throw new ShapeError(
      `conv2d: input [${input.shape}] has an empty ${h === 0 ? "height" : "width"}; only the batch or the channels may be 0 (as in torch)`,
    );
  const outH = Math.floor((h + padH - dilationH * (kh - 1) - 1) / strideH) + 1;
  const outW = Math.floor((w + padW - dilationW * (kw - 1) - 1) / strideW) + 1;
  if (outH < 1 || outW < 1) {
    const dilated = `${dilationH * (kh - 1) + 1}x${dilationW * (kw - 1) + 1}`;
    throw new ShapeError(
      `conv2d: the ${kh}x${kw} kernel (${dilated} with dilation) is larger than the ${h + padH}x${w + padW} padded input; the output would be empty: pad more, or use a smaller kernel or dilation`,
    );
  }
  checkIndexRange("output size in bytes", n * outChannels * outH * outW * bytes);
  checkIndexRange(
    "unfolded input (im2col) size in bytes",
    (c / groups) * kh * kw * outH * outW * bytes,
  );
  return {
    input,
    weight,
    bias,
    n,
    c,
    h,
    w,
    outChannels,
    kh,
    kw,
    strideH,
    strideW,
    padTop,
    padLeft,
    dilationH,
    dilationW,
    groups,
    outH,
    outW,
    deviceType: input.deviceType,
    dtype: input.dtype,
  };
}

export const conv2dOp: OpRecord<
  Conv2dParams,
  [input: Tensor, weight: Tensor, opts?: Conv2dOptions],
  Tensor
> = defineOp({
  name: "conv2d",
  prepare,
  // The output size too: with the top/left padding it fixes the bottom/right padding
  // ("same" with an even kernel pads one more after than before).
  shapeKey: (p: Conv2dParams) =>
    `${p.n}x${p.c}x${p.h}x${p.w},${p.outChannels}x${p.kh}x${p.kw},s${p.strideH}x${p.strideW},p${p.padTop}x${p.padLeft},d${p.dilationH}x${p.dilationW},g${p.groups},o${p.outH}x${p.outW}`,
  work: (p: Conv2dParams) =>
    (2 * p.n * p.outChannels * p.outH * p.outW * p.c * p.kh * p.kw) / p.groups,
  rankPerShape: true,
  result: (p: Conv2dParams) => ({ shape: [p.n, p.outChannels, p.outH, p.outW], dtype: p.dtype }),
});

/**
 * 2-D convolution (cross-correlation, as in torch) of input [N, C, H, W] with weight
 * [O, C/groups, kH, kW], or of one unbatched image [C, H, W] (the result is then [O, oh, ow]).
 */
export function conv2d(input: Tensor, weight: Tensor, opts?: Conv2dOptions): Tensor {
  const p = prepare(input, weight, opts);
  if (p.input === input) return dispatch(conv2dOp, p);
  try {
    const y = dispatch(conv2dOp, p);
    const image = y.reshape(y.shape.slice(1));
    y.dispose();
    return image;
  } finally {
    p.input.dispose();
  }
}
