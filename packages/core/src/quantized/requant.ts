/**
 * What the quantized ops share: the checks of a quantized argument and of an output's
 * scale and zero point, the per-channel multipliers, and the requantization of exact
 * int32 sums (linear, conv2d, matmul), in float32 as PyTorch's x86 engines compute it
 * (fbgemm's ReQuantizeOutput; onednn and qnnpack gave the same bits on every case):
 *
 *   y = clamp(zp + rint(fl(fl(fl(fl(acc) · mult[c]) + bias[c]) · fl(1 / scale))))
 *
 * with fl() rounding to float32 and mult[c] = fl(x_scale · w_scale[c]).
 *
 * Known difference, measured against PyTorch 2.13 on a VNNI CPU: this formula matches its
 * x86 engine on random layers (the testkit's cases, bit for bit) but not on exact or near
 * ties, nor where a bias, scale or product is non-finite or past int32. x86 runs linear on
 * fbgemm: M[c] = fl(fl(x_scale · w_scale[c]) / out_scale), v = fl(acc) (+ fl(b[c] / a[c])
 * per channel, or one fma(b, fl(1 / a), fl(acc)) per tensor), y = fl(v · M[c]), rint with
 * NaN and |y| >= 2^31 giving INT_MIN (so 0 after the zero point and clamp). Conv runs on
 * oneDNN when the weights' zero points are 0 and groups <= 100 (else fbgemm, as linear):
 * v = fl(fl(fl(acc) · fl(1 / fl(1 / x_scale))) · w_scale[c]) (+ b[c]), y = fl(fl(v ·
 * fl(1 / out_scale)) + zp), saturated in float (NaN gives 255), then rint. Taking these
 * needs the same change in every engine's kernel (qnnpack's WASM requantization, oneDNN's
 * fused one), which keep the bits of this formula today.
 *
 * The sums are exact whatever their size (the reference sums in float64). An engine's
 * kernel that sums in int32 takes only inputs whose every sum fits int32: its supports()
 * asks int32SumProblem() first, from the bound on |acc| each op's prepare() computes
 * (largestSum).
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
  // Every kernel multiplies by fl(1 / fl(outScale)): past float32's range that is infinite
  // (a zero sum became NaN, stored as 0 rather than the zero point) or 0 (every output the
  // zero point). PyTorch's qnnpack refuses such requantization scales too.
  const inv = Math.fround(1 / Math.fround(scale));
  if (!Number.isFinite(inv) || inv === 0)
    throw new ArgumentError(
      `${op}: outScale ${show(scale)} is outside float32's range for a requantization (its float32 reciprocal is ${inv}); use a scale between about 3e-39 and 3e38`,
    );
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

/** largestWeightOffset by packed layer: computed once (a packed layer never changes). */
const largestWeightOffsets = new WeakMap<object, number>();

/**
 * The largest |w - w_zp[c]| over the weights of `packed` (qint8, quantized along axis 0,
 * contiguous): from the weights themselves, at the layer's first call, then kept.
 */
export function largestWeightOffset(packed: { readonly weight: QTensor }): number {
  let largest = largestWeightOffsets.get(packed);
  if (largest !== undefined) return largest;
  const weight = packed.weight;
  const w = weight.storage().hostData() as Int8Array;
  const q = weight.qparams;
  const channels = weight.shape[0];
  const per = channels === 0 ? 0 : weight.numel / channels;
  largest = 0;
  for (let c = 0; c < channels && per > 0; c++) {
    const zp = q.scheme === "per_tensor_affine" ? q.zeroPoint : q.zeroPoints[c];
    let lo = w[c * per];
    let hi = lo;
    for (let i = c * per + 1; i < (c + 1) * per; i++) {
      const v = w[i];
      if (v < lo) lo = v;
      else if (v > hi) hi = v;
    }
    largest = Math.max(largest, hi - zp, zp - lo);
  }
  largestWeightOffsets.set(packed, largest);
  return largest;
}

/**
 * The bound on |acc| = |Σ (x - x_zp)(w - w_zp[c])| over `terms` products, for every quint8
 * activation (|x - x_zp| <= max(x_zp, 255 - x_zp)) and the layer's actual weights.
 */
export function largestSum(
  terms: number,
  xZeroPoint: number,
  packed: { readonly weight: QTensor },
): number {
  const x = Math.max(xZeroPoint, 255 - xZeroPoint);
  return terms * x * largestWeightOffset(packed);
}

const INT32_MAX = 2 ** 31 - 1;

/**
 * Why a kernel that sums in int32 must refuse these params (an int32 sum would wrap where
 * the op's sums are exact), or undefined when every sum they allow fits int32. int32
 * addition wraps consistently, so such a kernel is exact whenever the final sum fits,
 * whatever its partial sums did: the bound on the final sum is the test.
 */
export function int32SumProblem(p: { readonly largestSum: number }): string | undefined {
  if (p.largestSum <= INT32_MAX) return undefined;
  return `the exact sums can reach ${p.largestSum} in magnitude (terms x largest |x - x_zp| x largest |w - w_zp|), past int32's ${INT32_MAX}: this kernel's int32 sums would wrap, so the exact reference serves`;
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
