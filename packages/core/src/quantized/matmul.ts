/**
 * Quantized matmul (torch.ops.quantized.matmul): a and b both per tensor and of the same
 * dtype (quint8 or qint8), with torch.matmul's shapes: a 1-D a is a row and a 1-D b a
 * column (that dimension left out of the output: 1-D @ 1-D is a scalar), the leading
 * (batch) dimensions broadcast. The sums are exact in integers, then requantized to the
 * output's (scale, zero point) in a's dtype with the multiplier fl(a_scale · b_scale)
 * (requant.ts). PyTorch computes this op in float32 (dequantize, matmul, quantize), so its
 * integers may differ from the exact ones by 1 where a float sum rounds across a half.
 */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DTypeError, ShapeError } from "../errors.ts";
import { broadcastShapes } from "../ops/validate.ts";
import { batchOffsets, leadingBroadcastStrides } from "../reference/access.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import { contiguousStrides } from "../tensor/tensor.ts";
import { emptyQuantized, Q_STORAGE, type QTensor } from "./qtensor.ts";
import { checkOutputQParams, checkQTensor, requantizeInto } from "./requant.ts";

export interface QMatmulParams extends OpParams {
  a: QTensor;
  b: QTensor;
  outScale: number;
  outZeroPoint: number;
  /** Products (the broadcast leading dimensions' elements), rows, inner size, columns. */
  batch: number;
  m: number;
  k: number;
  n: number;
  /** The broadcast leading dimensions. */
  batchShape: number[];
  outShape: number[];
}

/** a's (or b's) shape as matrices: a 1-D a is one row, a 1-D b one column. */
function asMatrices(t: QTensor, isB: boolean): number[] {
  if (t.rank >= 2) return [...t.shape];
  return isB ? [t.shape[0], 1] : [1, t.shape[0]];
}

function prepare(a: QTensor, b: QTensor, outScale: number, outZeroPoint: number): QMatmulParams {
  const op = "quantizedMatmul";
  for (const [name, t] of [
    ["a", a],
    ["b", b],
  ] as const) {
    checkQTensor(op, name, t);
    if (t.qscheme !== "per_tensor_affine")
      throw new ArgumentError(`${op}: ${name} must be quantized per tensor, got ${t.qscheme}`);
    if (t.rank < 1)
      throw new ShapeError(`${op}: ${name} needs at least 1 dimension, got a scalar ([])`);
  }
  if (a.dtype !== b.dtype)
    throw new DTypeError(`${op}: a is ${a.dtype} and b is ${b.dtype}; both must be the same`);
  if (a.dtype === "qint32")
    throw new DTypeError(`${op}: quint8 and qint8 are supported, got qint32`);
  const as = asMatrices(a, false);
  const bs = asMatrices(b, true);
  const [m, k] = as.slice(-2);
  const [kb, n] = bs.slice(-2);
  if (k !== kb)
    throw new ShapeError(`${op}: a [${a.shape}] has ${k} columns, b [${b.shape}] has ${kb} rows`);
  const batchShape = broadcastShapes(op, as.slice(0, -2), bs.slice(0, -2), [
    "a's leading dimensions",
    "b's leading dimensions",
  ]);
  checkOutputQParams(op, outScale, outZeroPoint, a.dtype);
  const outShape = [...batchShape];
  if (a.rank > 1) outShape.push(m);
  if (b.rank > 1) outShape.push(n);
  return {
    a,
    b,
    outScale,
    outZeroPoint,
    batch: batchShape.reduce((x, y) => x * y, 1),
    m,
    k,
    n,
    batchShape,
    outShape,
    deviceType: "cpu",
    dtype: Q_STORAGE[a.dtype].dtype,
  };
}

export const quantizedMatmulOp: OpRecord<
  QMatmulParams,
  [a: QTensor, b: QTensor, outScale: number, outZeroPoint: number],
  QTensor
> = defineOp({
  name: "quantizedMatmul",
  prepare,
  shapeKey: (p: QMatmulParams) => `${p.batch}x${p.m}x${p.k}x${p.n}`,
  work: (p: QMatmulParams) => 2 * p.batch * p.m * p.n * p.k,
});

/** a @ b on quantized tensors, quantized to (outScale, outZeroPoint) in a's dtype (torch.ops.quantized.matmul). */
export function quantizedMatmul(
  a: QTensor,
  b: QTensor,
  outScale: number,
  outZeroPoint: number,
): QTensor {
  return dispatch(quantizedMatmulOp, prepare(a, b, outScale, outZeroPoint));
}

export function quantizedMatmulReference(p: QMatmulParams): QTensor {
  const pa = p.a.qparams as { scale: number; zeroPoint: number };
  const pb = p.b.qparams as { scale: number; zeroPoint: number };
  const a = p.a.storage().hostData() as Uint8Array | Int8Array;
  const b = p.b.storage().hostData() as Uint8Array | Int8Array;
  const { batch, m, k, n } = p;
  // Each matrix's element offset, batch dims broadcast (stride 0).
  const batchStrides = (t: QTensor) =>
    leadingBroadcastStrides(
      t.shape.slice(0, -2),
      contiguousStrides(t.shape).slice(0, -2),
      p.batchShape,
    );
  const [ta, tb] = batchOffsets(p.batchShape, [batchStrides(p.a), batchStrides(p.b)]);
  const acc = new Float64Array(batch * m * n);
  for (let t = 0; t < batch; t++) {
    const a0 = ta[t];
    const b0 = tb[t];
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let l = 0; l < k; l++)
          s += (a[a0 + i * k + l] - pa.zeroPoint) * (b[b0 + l * n + j] - pb.zeroPoint);
        acc[(t * m + i) * n + j] = s;
      }
  }
  const out = emptyQuantized(p.outShape, p.a.dtype, p.outScale, p.outZeroPoint);
  const mult = Float32Array.of(Math.fround(pa.scale) * Math.fround(pb.scale));
  const r = {
    mult,
    bias: undefined,
    scale: p.outScale,
    zeroPoint: p.outZeroPoint,
    dtype: p.a.dtype,
  };
  requantizeInto(out.storage().hostData() as Uint8Array | Int8Array, acc, r, () => 0);
  return out;
}
