/**
 * Element-wise quantized ops with PyTorch's semantics:
 *
 * - quantizedRelu (torch.relu on a quantized tensor): q = max(q, zero point), the input's
 *   quantization kept (per tensor or per channel).
 * - quantizedAdd (torch.ops.quantized.add): both inputs per tensor, the same dtype and
 *   shape; each is dequantized as PyTorch's vector code does it, one fused multiply-add
 *   fl(scale · q + fl(-zero_point · scale)), the two summed in float32 and quantized to the
 *   output's (scale, zero point): zp + rint(fl(sum · fl(1 / scale))), clamped. Every
 *   engine of PyTorch 2.13 gave these bits (scripts/quantized-cases.py).
 */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DTypeError, ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { DType } from "../tensor/dtype.ts";
import { emptyQuantized, Q_STORAGE, type QTensor, rint } from "./qtensor.ts";
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
}

function prepareAdd(a: QTensor, b: QTensor, outScale: number, outZeroPoint: number): QAddParams {
  const op = "quantizedAdd";
  checkQTensor(op, "a", a);
  checkQTensor(op, "b", b);
  if (a.dtype !== b.dtype)
    throw new DTypeError(`${op}: a is ${a.dtype} and b is ${b.dtype}; both must be the same`);
  if (a.dtype === "qint32")
    throw new DTypeError(`${op}: quint8 and qint8 are supported, got qint32`);
  if (a.qscheme !== "per_tensor_affine" || b.qscheme !== "per_tensor_affine")
    throw new ArgumentError(`${op}: both inputs must be quantized per tensor`);
  if (a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i]))
    throw new ShapeError(
      `${op}: a [${a.shape}] and b [${b.shape}] must have the same shape (no broadcasting)`,
    );
  checkOutputQParams(op, outScale, outZeroPoint, a.dtype);
  return { a, b, outScale, outZeroPoint, deviceType: "cpu", dtype: storageDType(a) };
}

export const quantizedAddOp: OpRecord<
  QAddParams,
  [a: QTensor, b: QTensor, outScale: number, outZeroPoint: number],
  QTensor
> = defineOp({
  name: "quantizedAdd",
  prepare: prepareAdd,
  shapeKey: (p: QAddParams) => `${p.a.numel}`,
  work: (p: QAddParams) => p.a.numel,
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

/**
 * fl(scale · q + fl(-zp · scale)) with one rounding, as an FMA gives it: the product of a
 * float32 and an integer below 2^32, plus a float32 of nearby exponent, is exact in
 * float64, so rounding that sum to float32 once is the fused result.
 */
function dequantizer(q: QTensor): (v: number) => number {
  const { scale, zeroPoint } = q.qparams as { scale: number; zeroPoint: number };
  const s = Math.fround(scale);
  const premul = Math.fround(-zeroPoint * s);
  return (v) => Math.fround(s * v + premul);
}

export function quantizedAddReference(p: QAddParams): QTensor {
  const out = emptyQuantized(p.a.shape, p.a.dtype, p.outScale, p.outZeroPoint);
  const y = out.storage().hostData() as Uint8Array | Int8Array;
  const a = p.a.storage().hostData() as Uint8Array | Int8Array;
  const b = p.b.storage().hostData() as Uint8Array | Int8Array;
  const da = dequantizer(p.a);
  const db = dequantizer(p.b);
  const inv = Math.fround(1 / Math.fround(p.outScale));
  const { min, max } = Q_STORAGE[p.a.dtype];
  for (let i = 0; i < y.length; i++) {
    const q = p.outZeroPoint + rint(Math.fround(Math.fround(da(a[i]) + db(b[i])) * inv));
    y[i] = q < min ? min : q > max ? max : q;
  }
  return out;
}
