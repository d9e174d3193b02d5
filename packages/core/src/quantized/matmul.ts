/**
 * Quantized matmul (torch.ops.quantized.matmul): a [..., m, k] and b [..., k, n], both per
 * tensor and of the same dtype (quint8 or qint8), the same leading dimensions (no
 * broadcasting); the sums exact in integers, then requantized to the output's (scale,
 * zero point) in a's dtype with the multiplier fl(a_scale · b_scale) (requant.ts).
 * PyTorch computes this op in float32 (dequantize, matmul, quantize), so its integers may
 * differ from the exact ones by 1 where a float sum rounds across a half.
 */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DTypeError, ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import { emptyQuantized, Q_STORAGE, type QTensor } from "./qtensor.ts";
import { checkOutputQParams, checkQTensor, requantizeInto } from "./requant.ts";

export interface QMatmulParams extends OpParams {
  a: QTensor;
  b: QTensor;
  outScale: number;
  outZeroPoint: number;
  /** Products (every leading dimension), rows, inner size, columns. */
  batch: number;
  m: number;
  k: number;
  n: number;
  outShape: number[];
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
    if (t.rank < 2)
      throw new ShapeError(`${op}: ${name} needs at least 2 dimensions, got [${t.shape}]`);
  }
  if (a.dtype !== b.dtype)
    throw new DTypeError(`${op}: a is ${a.dtype} and b is ${b.dtype}; both must be the same`);
  if (a.dtype === "qint32")
    throw new DTypeError(`${op}: quint8 and qint8 are supported, got qint32`);
  const lead = a.shape.slice(0, -2);
  if (b.rank !== a.rank || b.shape.slice(0, -2).some((d, i) => d !== lead[i]))
    throw new ShapeError(
      `${op}: a [${a.shape}] and b [${b.shape}] must have the same leading dimensions (no broadcasting)`,
    );
  const [m, k] = a.shape.slice(-2);
  const [kb, n] = b.shape.slice(-2);
  if (k !== kb)
    throw new ShapeError(`${op}: a [${a.shape}] has ${k} columns, b [${b.shape}] has ${kb} rows`);
  checkOutputQParams(op, outScale, outZeroPoint, a.dtype);
  return {
    a,
    b,
    outScale,
    outZeroPoint,
    batch: lead.reduce((x, y) => x * y, 1),
    m,
    k,
    n,
    outShape: [...lead, m, n],
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
  const acc = new Float64Array(batch * m * n);
  for (let t = 0; t < batch; t++)
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let l = 0; l < k; l++)
          s += (a[(t * m + i) * k + l] - pa.zeroPoint) * (b[(t * k + l) * n + j] - pb.zeroPoint);
        acc[(t * m + i) * n + j] = s;
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
