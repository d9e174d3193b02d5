/**
 * Quantized linear (torch.ops.quantized.linear_prepack / linear): y = x Wᵀ + b on quint8
 * activations (per tensor) and qint8 weights (per tensor, or per output channel), the
 * product summed exactly in integers, then requantized to the output's scale and zero
 * point:
 *
 *   acc[m][n] = Σ_k (x[m][k] - x_zp) (w[n][k] - w_zp[n])                (exact)
 *   y[m][n]   = clamp(out_zp + rint(fl(fl(acc · fl(x_scale · w_scale[n])) + b[n]) · fl(1 / out_scale)))
 *
 * with fl() rounding to float32, as the x86 engines compute it.
 *
 * The sums are exact at any size: |acc| <= largestSum = k · max(x_zp, 255 - x_zp) ·
 * max |w - w_zp[n]| (the largest over the layer's actual weights), and an engine's kernel
 * that sums in int32 refuses, with the reason, where largestSum passes 2^31 - 1
 * (int32SumProblem, first in its supports()); the reference, which sums in float64,
 * serves those. int32 addition wraps consistently, so within the bound such a kernel is
 * exact even where its partial sums wrap.
 *
 * Which engine's kernels run is `backends.quantized.engine`: a named engine runs its own
 * kernels only (the reference stays as the fallback, with the reason in explain());
 * "none", the default, lets every engine's kernels run in their ranked order.
 */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DTypeError, ShapeError } from "../errors.ts";
import { checkTensor } from "../ops/validate.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { emptyQuantized, QTensor } from "./qtensor.ts";
import { channelParams, checkOutputQParams, largestSum, requantizeInto } from "./requant.ts";

/** A linear layer's weights and bias, ready for quantizedLinear (torch's LinearPackedParams). */
export class PackedLinear implements Disposable {
  readonly weight: QTensor;
  readonly bias: Tensor | undefined;
  /** Engines' own packed forms of the weights, by engine (freed with this object). */
  readonly engineCache: Map<string, { dispose(): void }> = new Map();

  constructor(weight: QTensor, bias: Tensor | undefined) {
    this.weight = weight;
    this.bias = bias;
  }
  get outFeatures(): number {
    return this.weight.shape[0];
  }
  get inFeatures(): number {
    return this.weight.shape[1];
  }
  /** torch's linear_unpack: copies of the weights and bias. */
  unpack(): [QTensor, Tensor | undefined] {
    return [this.weight.clone(), this.bias?.clone()];
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

/**
 * Packs a linear layer (torch.ops.quantized.linear_prepack): `weight` qint8 [out, in],
 * per tensor or per channel along axis 0; `bias` float32 [out] or undefined. Both are
 * copied: the packed layer owns its data.
 */
export function linearPrepack(weight: QTensor, bias?: Tensor): PackedLinear {
  const op = "linearPrepack";
  if (!(weight instanceof QTensor))
    throw new ArgumentError(
      `${op}: weight must be a QTensor (quantizePerTensor/PerChannel), got ${show(weight)}`,
    );
  weight.storage(op); // a disposed weight is an error naming this op
  if (weight.dtype !== "qint8")
    throw new DTypeError(`${op}: weight must be qint8, got ${weight.dtype}`);
  if (weight.rank !== 2)
    throw new ShapeError(`${op}: weight must be [outFeatures, inFeatures], got [${weight.shape}]`);
  const p = weight.qparams;
  if (p.scheme === "per_channel_affine" && p.axis !== 0)
    throw new ArgumentError(
      `${op}: per-channel weights must be quantized along axis 0 (output channels), got axis ${p.axis}`,
    );
  let b: Tensor | undefined;
  if (bias !== undefined && bias !== null) {
    checkTensor(op, "bias", bias);
    if (bias.dtype !== "float32")
      throw new DTypeError(`${op}: bias must be float32, got ${bias.dtype}`);
    if (bias.rank !== 1 || bias.shape[0] !== weight.shape[0])
      throw new ShapeError(`${op}: bias must be [${weight.shape[0]}], got [${bias.shape}]`);
    b = bias.clone(); // contiguous for any view; contiguous() first would keep a hold on it
  }
  return new PackedLinear(weight.clone(), b);
}

export interface QLinearParams extends OpParams {
  x: QTensor;
  packed: PackedLinear;
  outScale: number;
  outZeroPoint: number;
  /** Rows (every leading dimension of x), inner size, outputs. */
  m: number;
  k: number;
  n: number;
  outShape: number[];
  /**
   * A bound on every |acc| these inputs allow: k · max(x_zp, 255 - x_zp) · the largest
   * |w - w_zp[n]| of the layer's weights. A kernel that sums in int32 asks
   * int32SumProblem(p) whether it may run.
   */
  largestSum: number;
}

function prepare(
  x: QTensor,
  packed: PackedLinear,
  outScale: number,
  outZeroPoint: number,
): QLinearParams {
  const op = "quantizedLinear";
  if (!(x instanceof QTensor))
    throw new ArgumentError(`${op}: x must be a QTensor, got ${show(x)}`);
  if (!(packed instanceof PackedLinear))
    throw new ArgumentError(`${op}: packed must come from linearPrepack(), got ${show(packed)}`);
  x.storage(op);
  packed.weight.storage(op);
  if (x.dtype !== "quint8") throw new DTypeError(`${op}: x must be quint8, got ${x.dtype}`);
  if (x.qscheme !== "per_tensor_affine")
    throw new ArgumentError(`${op}: x must be quantized per tensor, got ${x.qscheme}`);
  if (x.rank < 1) throw new ShapeError(`${op}: x needs at least 1 dimension, got a scalar`);
  const k = x.shape[x.rank - 1];
  if (k !== packed.inFeatures)
    throw new ShapeError(
      `${op}: x [${x.shape}] has ${k} features; the layer takes ${packed.inFeatures}`,
    );
  checkOutputQParams(op, outScale, outZeroPoint, "quint8");
  const n = packed.outFeatures;
  const outShape = [...x.shape.slice(0, -1), n];
  return {
    x,
    packed,
    outScale,
    outZeroPoint,
    m: outShape.slice(0, -1).reduce((a, b) => a * b, 1),
    k,
    n,
    outShape,
    largestSum: largestSum(k, (x.qparams as { zeroPoint: number }).zeroPoint, packed),
    deviceType: "cpu",
    dtype: "uint8",
  };
}

export const quantizedLinearOp: OpRecord<
  QLinearParams,
  [x: QTensor, packed: PackedLinear, outScale: number, outZeroPoint: number],
  QTensor
> = defineOp({
  name: "quantizedLinear",
  prepare,
  shapeKey: (p: QLinearParams) => `${p.m}x${p.k}x${p.n}`,
  work: (p: QLinearParams) => 2 * p.m * p.n * p.k,
});

/** y = x Wᵀ + b, requantized to (outScale, outZeroPoint), quint8 (torch.ops.quantized.linear). */
export function quantizedLinear(
  x: QTensor,
  packed: PackedLinear,
  outScale: number,
  outZeroPoint: number,
): QTensor {
  return dispatch(quantizedLinearOp, prepare(x, packed, outScale, outZeroPoint));
}

/**
 * The `enabled` check of an engine's quantized kernels: they run when quantized.engine
 * names their engine, or is "none" (any engine, in ranked order).
 */
export function quantizedEngineGate(
  engine: string,
): (flag: (key: string) => unknown) => true | string {
  return (flag) => {
    const e = flag("quantized.engine");
    return e === "none" || e === engine ? true : `quantized.engine is ${JSON.stringify(e)}`;
  };
}

/** Per output channel: the weights' zero point and fl(x_scale · w_scale). */
export function linearChannelParams(p: QLinearParams): { wZp: Int32Array; mult: Float32Array } {
  return channelParams((p.x.qparams as { scale: number }).scale, p.packed.weight, p.n);
}

/**
 * The output from exact int32 sums (acc: m x n, row-major): the requantization every
 * engine's kernel shares, so that equal sums give equal bits.
 */
export function requantizeLinear(
  p: QLinearParams,
  acc: Int32Array | Float64Array,
  mult: Float32Array = linearChannelParams(p).mult,
): QTensor {
  const out = emptyQuantized(p.outShape, "quint8", p.outScale, p.outZeroPoint);
  const bias = p.packed.bias?.hostData() as Float32Array | undefined;
  const r = { mult, bias, scale: p.outScale, zeroPoint: p.outZeroPoint, dtype: "quint8" as const };
  requantizeInto(out.storage().hostData() as Uint8Array, acc, r, (i) => i % p.n);
  return out;
}

/** The core's reference kernel: the exact sums in plain TypeScript, then requantizeLinear. */
export function quantizedLinearReference(p: QLinearParams): QTensor {
  const x = p.x.storage().hostData() as Uint8Array;
  const w = p.packed.weight.storage().hostData() as Int8Array;
  const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
  const { wZp, mult } = linearChannelParams(p);
  const acc = new Float64Array(p.m * p.n);
  for (let i = 0; i < p.m; i++) {
    const xr = i * p.k;
    for (let c = 0; c < p.n; c++) {
      const wr = c * p.k;
      let s = 0;
      for (let t = 0; t < p.k; t++) s += (x[xr + t] - xZp) * (w[wr + t] - wZp[c]);
      acc[i * p.n + c] = s;
    }
  }
  return requantizeLinear(p, acc, mult);
}
