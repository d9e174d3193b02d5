/**
 * Element-wise quantized ops with PyTorch's semantics:
 *
 * - quantizedRelu (torch.relu on a quantized tensor): q = max(q, zero point), the input's
 *   quantization kept (per tensor or per channel).
 * - quantizedAdd (torch.ops.quantized.add): both inputs per tensor and of the same dtype,
 *   their shapes broadcast as torch's (numpy's rules); each is dequantized as PyTorch's
 *   vector code does it, one fused multiply-add fl(scale · fl(q) + fl(scale · -fl(zp))),
 *   the two summed in float32 and quantized to the output's (scale, zero point) with inv =
 *   fl(1 / fl(scale)): for quint8 and qint8 zp + rint(fl(sum · inv)), clamped (its AVX2
 *   quantize); for qint32 rint(fl(fl(sum · inv) + fl(zp))), clamped (fbgemm's scalar
 *   quantize, which its qint32 vector code calls). Every engine of PyTorch 2.13 gave these
 *   bits (scripts/quantized-cases.py) for its vectorised loop. PyTorch's scalar loop, which
 *   takes the last n % 64 elements (n % 16 for qint32) of each contiguous run its
 *   TensorIterator makes (the whole tensor for same shapes; each broadcast row, so a whole
 *   row shorter than 64, when an input broadcasts), adds the zero point before rounding
 *   (and for qint32 dequantizes fl(fl(q - zp) · scale) with q - zp wrapping in int32):
 *   there an exact tie can round the other way. This follows the vector loop everywhere.
 */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DTypeError } from "../errors.ts";
import { broadcastShapes } from "../ops/validate.ts";
import { leadingBroadcastStrides } from "../reference/access.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { DType } from "../tensor/dtype.ts";
import { contiguousStrides, forEachIndexPair } from "../tensor/tensor.ts";
import { emptyQuantized, fmaf, inverseScale, Q_STORAGE, type QTensor, rint } from "./qtensor.ts";
import { checkOutputQParams, checkQTensor } from "./requant.ts";

export interface QReluParams extends OpParams {
  x: QTensor;
}

const storageDType = (q: QTensor): DType => Q_STORAGE[q.dtype].dtype;

export const quantizedReluOp: OpRecord<QReluParams, [x: QTensor], QTensor> = defineOp({
  name: "quantizedRelu",
  prepare: (x: QTensor): QReluParams => {
    const q = checkQTensor("quantizedRelu", "x", x);
    return { x: q, deviceType: "cpu", dtype: storageDType(q) };
  },
  shapeKey: (p: QReluParams) => `${p.x.numel}`,
  work: (p: QReluParams) => p.x.numel,
});

/** max(x, 0) on a quantized tensor: the integers clamped below at the zero point. */
export function quantizedRelu(x: QTensor): QTensor {
  return dispatch(quantizedReluOp, quantizedReluOp.prepare(x));
}

/** The zero point of each element's channel (per channel) or of the tensor. */
function zeroPointOf(x: QTensor): (i: number) => number {
  const p = x.qparams;
  if (p.scheme === "per_tensor_affine") return () => p.zeroPoint;
  const inner = x.shape.slice(p.axis + 1).reduce((a, b) => a * b, 1);
  const n = x.shape[p.axis];
  return (i) => p.zeroPoints[Math.floor(i / inner) % n];
}

export function quantizedReluReference(p: QReluParams): QTensor {
  const q = p.x.clone();
  const v = q.storage().hostData() as Uint8Array | Int8Array | Int32Array;
  const zp = zeroPointOf(p.x);
  for (let i = 0; i < v.length; i++) {
    const z = zp(i);
    if (v[i] < z) v[i] = z;
  }
  return q;
}

export interface QAddParams extends OpParams {
  a: QTensor;
  b: QTensor;
  outScale: number;
  outZeroPoint: number;
  /** The broadcast shape of a and b: the output's. */
  outShape: number[];
}

function prepareAdd(a: QTensor, b: QTensor, outScale: number, outZeroPoint: number): QAddParams {
  const op = "quantizedAdd";
  checkQTensor(op, "a", a);
  checkQTensor(op, "b", b);
  if (a.dtype !== b.dtype)
    throw new DTypeError(`${op}: a is ${a.dtype} and b is ${b.dtype}; both must be the same`);
  if (a.qscheme !== "per_tensor_affine" || b.qscheme !== "per_tensor_affine")
    throw new ArgumentError(`${op}: both inputs must be quantized per tensor`);
  const outShape = broadcastShapes(op, a.shape, b.shape);
  checkOutputQParams(op, outScale, outZeroPoint, a.dtype);
  return { a, b, outScale, outZeroPoint, outShape, deviceType: "cpu", dtype: storageDType(a) };
}

export const quantizedAddOp: OpRecord<
  QAddParams,
  [a: QTensor, b: QTensor, outScale: number, outZeroPoint: number],
  QTensor
> = defineOp({
  name: "quantizedAdd",
  prepare: prepareAdd,
  shapeKey: (p: QAddParams) => `${p.outShape.join("x")}`,
  work: (p: QAddParams) => p.outShape.reduce((x, y) => x * y, 1),
});

/** a + b on quantized tensors, quantized to (outScale, outZeroPoint) (torch.ops.quantized.add). */
export function quantizedAdd(
  a: QTensor,
  b: QTensor,
  outScale: number,
  outZeroPoint: number,
): QTensor {
  return dispatch(quantizedAddOp, prepareAdd(a, b, outScale, outZeroPoint));
}

/** fl(scale · fl(q) + fl(scale · -fl(zp))) with one rounding, as PyTorch's vector FMA gives it. */
function dequantizer(q: QTensor): (v: number) => number {
  const { scale, zeroPoint } = q.qparams as { scale: number; zeroPoint: number };
  const s = Math.fround(scale);
  const premul = Math.fround(s * -Math.fround(zeroPoint));
  return (v) => fmaf(s, Math.fround(v), premul);
}

/** The sum of two dequantized values, quantized as PyTorch's vector code does for `dtype`. */
function sumQuantizer(p: QAddParams): (sum: number) => number {
  const inv = inverseScale(p.outScale);
  const zp = p.outZeroPoint;
  const { min, max } = Q_STORAGE[p.a.dtype];
  if (p.a.dtype === "qint32") {
    const fzp = Math.fround(zp);
    return (sum) => {
      const q = rint(Math.fround(Math.fround(sum * inv) + fzp));
      return Number.isNaN(q) ? min : q < min ? min : q > max ? max : q;
    };
  }
  return (sum) => {
    const q = zp + rint(Math.fround(sum * inv));
    return q < min ? min : q > max ? max : q;
  };
}

export function quantizedAddReference(p: QAddParams): QTensor {
  const out = emptyQuantized(p.outShape, p.a.dtype, p.outScale, p.outZeroPoint);
  const y = out.storage().hostData() as Uint8Array | Int8Array | Int32Array;
  const a = p.a.storage().hostData() as Uint8Array | Int8Array | Int32Array;
  const b = p.b.storage().hostData() as Uint8Array | Int8Array | Int32Array;
  const da = dequantizer(p.a);
  const db = dequantizer(p.b);
  const quantize = sumQuantizer(p);
  // The output walked once with both operands' (broadcast, stride-0) positions: no table of
  // them (one entry per output element).
  const strides = (t: QTensor) =>
    leadingBroadcastStrides(t.shape, contiguousStrides(t.shape), p.outShape);
  let i = 0;
  forEachIndexPair(p.outShape, strides(p.a), strides(p.b), (ia, ib) => {
    y[i++] = quantize(Math.fround(da(a[ia]) + db(b[ib])));
  });
  return out;
}
