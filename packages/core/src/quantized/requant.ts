/**
 * What the quantized ops share: the checks of a quantized argument and of an output's
 * scale and zero point, the per-channel multipliers, and the requantization of exact
 * int32 sums (linear, conv2d, matmul), in float32 as PyTorch's x86 engines compute it
 * (fbgemm's ReQuantizeOutput; onednn and qnnpack gave the same bits on every case):
 *
 *   y = clamp(zp + rint(fl(fl(fl(fl(acc) · mult[c]) + bias[c]) · fl(1 / scale))))
 *
 * with fl() rounding to float32 and mult[c] = fl(x_scale · w_scale[c]).
 */
import { ArgumentError } from "../errors.ts";
import { show } from "../util/format.ts";
import { Q_STORAGE, type QDType, QTensor, rint } from "./qtensor.ts";

/** `x` as a live QTensor, or a typed error naming the argument. */
export function checkQTensor(op: string, name: string, x: unknown): QTensor {
  if (!(x instanceof QTensor))
    throw new ArgumentError(`${op}: ${name} must be a QTensor, got ${show(x)}`);
  x.storage(op);
  return x;
}

/** Throws unless (scale, zeroPoint) can quantize an output of `dtype`. */
export function checkOutputQParams(
  op: string,
  scale: number,
  zeroPoint: number,
  dtype: QDType,
): void {
  if (typeof scale !== "number" || !Number.isFinite(scale) || scale <= 0)
    throw new ArgumentError(`${op}: outScale must be a finite number > 0, got ${show(scale)}`);
  const { min, max } = Q_STORAGE[dtype];
  if (!Number.isInteger(zeroPoint) || zeroPoint < min || zeroPoint > max)
    throw new ArgumentError(
      `${op}: outZeroPoint must be an integer in [${min}, ${max}] (${dtype}), got ${show(zeroPoint)}`,
    );
}

/** Per output channel c < n of `weight` (quantized along axis 0): its zero point and fl(x_scale · w_scale). */
export function channelParams(
  xScale: number,
  weight: QTensor,
  n: number,
): { wZp: Int32Array; mult: Float32Array } {
  const xs = Math.fround(xScale);
  const w = weight.qparams;
  const wZp = new Int32Array(n);
  const mult = new Float32Array(n);
  for (let c = 0; c < n; c++) {
    const ws = w.scheme === "per_tensor_affine" ? w.scale : w.scales[c];
    wZp[c] = w.scheme === "per_tensor_affine" ? w.zeroPoint : w.zeroPoints[c];
    mult[c] = xs * Math.fround(ws);
  }
  return { wZp, mult };
}

/** How exact sums become an output: multipliers and bias by channel, the output's parameters. */
export interface Requantization {
  mult: Float32Array;
  bias: Float32Array | undefined;
  scale: number;
  zeroPoint: number;
  dtype: QDType;
}

/**
 * out[i] from the exact sum acc[i] of channel channelOf(i). The sum goes to float32 first
 * (rounded past 2^24), then the product, as fbgemm does.
 */
export function requantizeInto(
  out: Uint8Array | Int8Array,
  acc: ArrayLike<number>,
  r: Requantization,
  channelOf: (i: number) => number,
): void {
  const inv = Math.fround(1 / Math.fround(r.scale));
  const { min, max } = Q_STORAGE[r.dtype];
  for (let i = 0; i < out.length; i++) {
    const c = channelOf(i);
    let v = Math.fround(Math.fround(acc[i]) * r.mult[c]);
    if (r.bias) v = Math.fround(v + r.bias[c]);
    const q = r.zeroPoint + rint(Math.fround(v * inv));
    out[i] = q < min ? min : q > max ? max : q;
  }
}
