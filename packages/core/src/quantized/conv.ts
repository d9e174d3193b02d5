/**
 * Quantized 2-D convolution (torch.ops.quantized.conv2d_prepack / conv2d): quint8 NCHW
 * activations (per tensor), qint8 weights [out, in / groups, kh, kw] (per tensor, or per
 * output channel), float32 bias, stride, padding (with the activations' zero point, i.e.
 * real zeros), dilation and groups; the sums exact in integers, then requantized as
 * linear is (requant.ts). Which engine's kernel runs is `backends.quantized.engine`, as
 * for quantizedLinear. The sums are exact at any size: |acc| <= largestSum =
 * (c / groups) · kh · kw · max(x_zp, 255 - x_zp) · max |w - w_zp[o]| (over the layer's
 * weights), and an engine's kernel that sums in int32 refuses, with the reason, where
 * largestSum passes 2^31 - 1 (int32SumProblem in its supports()); the reference, which
 * sums in float64, serves those.
 */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DTypeError, ShapeError } from "../errors.ts";
import { type Pair as ConvPair, checkIndexRange, convPair } from "../ops/conv2d.ts";
import { checkOptions, checkTensor } from "../ops/validate.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { emptyQuantized, QTensor } from "./qtensor.ts";
import { channelParams, checkOutputQParams, largestSum, requantizeInto } from "./requant.ts";

type Pair = readonly [number, number];

/** A convolution's weights, bias and geometry, ready for quantizedConv2d (torch's Conv2dPackedParams). */
export class PackedConv2d implements Disposable {
  readonly weight: QTensor;
  readonly bias: Tensor | undefined;
  readonly stride: Pair;
  readonly padding: Pair;
  readonly dilation: Pair;
  readonly groups: number;
  /** Engines' own packed forms of the weights, by engine (freed with this object). */
  readonly engineCache: Map<string, { dispose(): void }> = new Map();

  constructor(
    weight: QTensor,
    bias: Tensor | undefined,
    geometry: { stride: Pair; padding: Pair; dilation: Pair; groups: number },
  ) {
    this.weight = weight;
    this.bias = bias;
    this.stride = geometry.stride;
    this.padding = geometry.padding;
    this.dilation = geometry.dilation;
    this.groups = geometry.groups;
  }
  get outChannels(): number {
    return this.weight.shape[0];
  }
  get inChannels(): number {
    return this.weight.shape[1] * this.groups;
  }
  dispose(): void {
    for (const c of this.engineCache.values()) c.dispose();
    this.engineCache.clear();
    this.weight.dispose();
    this.bias?.dispose();
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

export interface Conv2dPrepackOptions {
  stride?: ConvPair;
  padding?: ConvPair;
  dilation?: ConvPair;
  groups?: number;
}

/**
 * Packs a convolution (torch.ops.quantized.conv2d_prepack): `weight` qint8
 * [out, in / groups, kh, kw], per tensor or per channel along axis 0; `bias` float32 [out]
 * or undefined; stride, padding, dilation (a number or [h, w]) and groups. Weight and bias
 * are copied: the packed layer owns its data.
 */
export function conv2dPrepack(
  weight: QTensor,
  bias?: Tensor,
  opts: Conv2dPrepackOptions = {},
): PackedConv2d {
  const op = "conv2dPrepack";
  if (!(weight instanceof QTensor))
    throw new ArgumentError(
      `${op}: weight must be a QTensor (quantizePerTensor/PerChannel), got ${show(weight)}`,
    );
  weight.storage(op); // a disposed weight is an error naming this op
  if (weight.dtype !== "qint8")
    throw new DTypeError(`${op}: weight must be qint8, got ${weight.dtype}`);
  if (weight.rank !== 4)
    throw new ShapeError(
      `${op}: weight must be [outChannels, inChannels / groups, kh, kw], got [${weight.shape}]`,
    );
  const p = weight.qparams;
  if (p.scheme === "per_channel_affine" && p.axis !== 0)
    throw new ArgumentError(
      `${op}: per-channel weights must be quantized along axis 0 (output channels), got axis ${p.axis}`,
    );
  const o = checkOptions(op, opts, ["stride", "padding", "dilation", "groups"]);
  // Only an absent option takes its default: null is refused, as torch refuses None.
  const given = (v: unknown, dflt: number) => (v === undefined ? dflt : v);
  const groups = given(o.groups, 1) as number;
  if (!Number.isInteger(groups) || groups < 1 || weight.shape[0] % groups !== 0)
    throw new ArgumentError(
      `${op}: groups must be an integer >= 1 dividing the ${weight.shape[0]} output channels, got ${show(o.groups)}`,
    );
  const geometry = {
    stride: convPair(op, "stride", given(o.stride, 1), 1),
    padding: convPair(op, "padding", given(o.padding, 0), 0),
    dilation: convPair(op, "dilation", given(o.dilation, 1), 1),
    groups,
  };
  let b: Tensor | undefined;
  if (bias !== undefined && bias !== null) {
    checkTensor(op, "bias", bias);
    if (bias.dtype !== "float32")
      throw new DTypeError(`${op}: bias must be float32, got ${bias.dtype}`);
    if (bias.rank !== 1 || bias.shape[0] !== weight.shape[0])
      throw new ShapeError(`${op}: bias must be [${weight.shape[0]}], got [${bias.shape}]`);
    b = bias.clone(); // contiguous for any view; contiguous() first would keep a hold on it
  }
  return new PackedConv2d(weight.clone(), b, geometry);
}

export interface QConv2dParams extends OpParams {
  x: QTensor;
  packed: PackedConv2d;
  outScale: number;
  outZeroPoint: number;
  /** Batch, input channels, height, width; output channels, height, width; kernel size. */
  n: number;
  c: number;
  h: number;
  w: number;
  oc: number;
  oh: number;
  ow: number;
  kh: number;
  kw: number;
  outShape: number[];
  /**
   * A bound on every |acc| these inputs allow: (c / groups) · kh · kw · max(x_zp, 255 - x_zp)
   * · the largest |w - w_zp[o]| of the layer's weights. A kernel that sums in int32 asks
   * int32SumProblem(p) whether it may run.
   */
  largestSum: number;
}

/** The output size along one axis; a typed error when there is no output position. */
function outSize(op: string, size: number, k: number, s: number, p: number, d: number): number {
  // The extents a kernel forms, within its 32-bit indexing (as the float conv2d checks).
  checkIndexRange("dilated kernel extent", d * (k - 1) + 1, op);
  checkIndexRange("padded input extent", size + 2 * p, op);
  const o = Math.floor((size + 2 * p - d * (k - 1) - 1) / s) + 1;
  if (o < 1)
    throw new ShapeError(
      `${op}: the input (${size}) padded by ${p} on each side is smaller than the dilated kernel (${d * (k - 1) + 1}); no output position`,
    );
  return o;
}

function prepare(
  x: QTensor,
  packed: PackedConv2d,
  outScale: number,
  outZeroPoint: number,
): QConv2dParams {
  const op = "quantizedConv2d";
  if (!(x instanceof QTensor))
    throw new ArgumentError(`${op}: x must be a QTensor, got ${show(x)}`);
  if (!(packed instanceof PackedConv2d))
    throw new ArgumentError(`${op}: packed must come from conv2dPrepack(), got ${show(packed)}`);
  x.storage(op);
  packed.weight.storage(op);
  if (x.dtype !== "quint8") throw new DTypeError(`${op}: x must be quint8, got ${x.dtype}`);
  if (x.qscheme !== "per_tensor_affine")
    throw new ArgumentError(`${op}: x must be quantized per tensor, got ${x.qscheme}`);
  if (x.rank !== 4)
    throw new ShapeError(`${op}: x must be [batch, channels, height, width], got [${x.shape}]`);
  const [n, c, h, w] = x.shape;
  if (c !== packed.inChannels)
    throw new ShapeError(
      `${op}: x [${x.shape}] has ${c} channels; the layer takes ${packed.inChannels}`,
    );
  checkOutputQParams(op, outScale, outZeroPoint, "quint8");
  const [, , kh, kw] = packed.weight.shape;
  const oh = outSize(op, h, kh, packed.stride[0], packed.padding[0], packed.dilation[0]);
  const ow = outSize(op, w, kw, packed.stride[1], packed.padding[1], packed.dilation[1]);
  const oc = packed.outChannels;
  checkIndexRange("output size in bytes", n * oc * oh * ow, op);
  return {
    x,
    packed,
    outScale,
    outZeroPoint,
    n,
    c,
    h,
    w,
    oc,
    oh,
    ow,
    kh,
    kw,
    outShape: [n, oc, oh, ow],
    largestSum: largestSum(
      (c / packed.groups) * kh * kw,
      (x.qparams as { zeroPoint: number }).zeroPoint,
      packed,
    ),
    deviceType: "cpu",
    dtype: "uint8",
  };
}

export const quantizedConv2dOp: OpRecord<
  QConv2dParams,
  [x: QTensor, packed: PackedConv2d, outScale: number, outZeroPoint: number],
  QTensor
> = defineOp({
  name: "quantizedConv2d",
  prepare,
  shapeKey: (p: QConv2dParams) =>
    `${p.n}x${p.c}x${p.h}x${p.w}>${p.oc}k${p.kh}x${p.kw}s${p.packed.stride}p${p.packed.padding}d${p.packed.dilation}g${p.packed.groups}`,
  work: (p: QConv2dParams) => (2 * p.n * p.oc * p.oh * p.ow * p.kh * p.kw * p.c) / p.packed.groups,
});

/** The quantized convolution, requantized to (outScale, outZeroPoint), quint8 (torch.ops.quantized.conv2d). */
export function quantizedConv2d(
  x: QTensor,
  packed: PackedConv2d,
  outScale: number,
  outZeroPoint: number,
): QTensor {
  return dispatch(quantizedConv2dOp, prepare(x, packed, outScale, outZeroPoint));
}

/** Per output channel: the weights' zero point and fl(x_scale · w_scale). */
export function conv2dChannelParams(p: QConv2dParams): { wZp: Int32Array; mult: Float32Array } {
  return channelParams((p.x.qparams as { scale: number }).scale, p.packed.weight, p.oc);
}

/**
 * The output from exact int32 sums in the output's NCHW order: the requantization every
 * engine's kernel shares.
 */
export function requantizeConv2d(
  p: QConv2dParams,
  acc: Int32Array | Float64Array,
  mult: Float32Array = conv2dChannelParams(p).mult,
): QTensor {
  const out = emptyQuantized(p.outShape, "quint8", p.outScale, p.outZeroPoint);
  const bias = p.packed.bias?.hostData() as Float32Array | undefined;
  const plane = p.oh * p.ow;
  const r = { mult, bias, scale: p.outScale, zeroPoint: p.outZeroPoint, dtype: "quint8" as const };
  requantizeInto(
    out.storage().hostData() as Uint8Array,
    acc,
    r,
    (i) => Math.floor(i / plane) % p.oc,
  );
  return out;
}

/** The core's reference kernel: direct loops over exact sums, then requantizeConv2d. */
// Long: one direct convolution; the seven loops share the geometry.
export function quantizedConv2dReference(p: QConv2dParams): QTensor {
  const xs = p.x.storage().hostData() as Uint8Array;
  const ws = p.packed.weight.storage().hostData() as Int8Array;
  const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
  const { wZp, mult } = conv2dChannelParams(p);
  const { stride, padding, dilation, groups } = p.packed;
  const cg = p.c / groups;
  const ocg = p.oc / groups;
  const acc = new Float64Array(p.n * p.oc * p.oh * p.ow);
  let at = 0;
  for (let b = 0; b < p.n; b++)
    for (let o = 0; o < p.oc; o++) {
      const c0 = Math.floor(o / ocg) * cg;
      for (let y = 0; y < p.oh; y++)
        for (let z = 0; z < p.ow; z++) {
          let s = 0;
          for (let ci = 0; ci < cg; ci++)
            for (let ky = 0; ky < p.kh; ky++) {
              const iy = y * stride[0] - padding[0] + ky * dilation[0];
              if (iy < 0 || iy >= p.h) continue; // padding: x - x_zp = 0
              for (let kx = 0; kx < p.kw; kx++) {
                const ix = z * stride[1] - padding[1] + kx * dilation[1];
                if (ix < 0 || ix >= p.w) continue;
                const xv = xs[((b * p.c + c0 + ci) * p.h + iy) * p.w + ix] - xZp;
                const wv = ws[((o * cg + ci) * p.kh + ky) * p.kw + kx] - wZp[o];
                s += xv * wv;
              }
            }
          acc[at++] = s;
        }
    }
  return requantizeConv2d(p, acc, mult);
}
