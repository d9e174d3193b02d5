/** matmul: torch.matmul semantics (1-D promotion, batched, broadcasting batch dims). */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { broadcastShapes, checkFloat, checkSame, checkTensor } from "./validate.ts";

export interface MatmulParams extends OpParams {
  a: Tensor;
  b: Tensor;
  m: number;
  k: number;
  n: number;
  /** Broadcast batch shape of the output. */
  batchShape: number[];
  outShape: number[];
  /** a and b seen as [...batch, m, k] and [...batch, k, n]: shapes and strides after 1-D promotion. */
  aShape: number[];
  aStrides: number[];
  bShape: number[];
  bStrides: number[];
}

function prepare(a: Tensor, b: Tensor): MatmulParams {
  checkTensor("matmul", "a", a);
  checkTensor("matmul", "b", b);
  checkSame("matmul", ["a", "b"], [a, b]);
  checkFloat("matmul", "a", a);
  if (a.rank === 0 || b.rank === 0) {
    throw new ShapeError(
      `matmul: both arguments need at least 1 dimension, got shapes [${a.shape}] and [${b.shape}]`,
    );
  }
  const aVec = a.rank === 1;
  const bVec = b.rank === 1;
  const aShape = aVec ? [1, a.shape[0]] : (a.shape as number[]);
  const aStrides = aVec ? [0, a.strides[0]] : (a.strides as number[]);
  const bShape = bVec ? [b.shape[0], 1] : (b.shape as number[]);
  const bStrides = bVec ? [b.strides[0], 0] : (b.strides as number[]);
  const m = aShape[aShape.length - 2];
  const k = aShape[aShape.length - 1];
  const n = bShape[bShape.length - 1];
  if (bShape[bShape.length - 2] !== k) {
    throw new ShapeError(
      `matmul: a [${a.shape}] and b [${b.shape}] cannot be multiplied: a has ${k} columns, b has ${bShape[bShape.length - 2]} rows`,
    );
  }
  const batchShape =
    aShape.length === 2 && bShape.length === 2
      ? []
      : broadcastShapes("matmul", aShape.slice(0, -2), bShape.slice(0, -2), [
          "a's batch dims",
          "b's batch dims",
        ]);
  const outShape = [...batchShape];
  if (!aVec) outShape.push(m);
  if (!bVec) outShape.push(n);
  return {
    a,
    b,
    m,
    k,
    n,
    batchShape,
    outShape,
    aShape,
    aStrides,
    bShape,
    bStrides,
    deviceType: a.deviceType,
    dtype: a.dtype,
  };
}

export const matmulOp: OpRecord<MatmulParams, [a: Tensor, b: Tensor], Tensor> = defineOp({
  name: "matmul",
  prepare,
  shapeKey: (p: MatmulParams) =>
    `${p.batchShape.length ? `${p.batchShape.join("x")}x` : ""}${p.m}x${p.k}x${p.n}`,
  work: (p: MatmulParams) => 2 * p.m * p.n * p.k * p.batchShape.reduce((a, b) => a * b, 1),
  result: (p: MatmulParams) => ({ shape: p.outShape, dtype: p.dtype }),
});

/** Matrix product of a and b (torch.matmul). */
export function matmul(a: Tensor, b: Tensor): Tensor {
  return dispatch(matmulOp, prepare(a, b));
}
