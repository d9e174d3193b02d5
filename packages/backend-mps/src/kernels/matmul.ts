/**
 * matmul on mps: MPSGraph's matrixMultiplication over [batch, m, k] x [batch, k, n]. An
 * operand whose batch dims all broadcast is passed once (the helper broadcasts it);
 * otherwise its batch is gathered to [batch, m, k].
 */
import type { Tensor } from "@backplane/core";
import {
  type KernelDefinition,
  leadingBroadcastStrides,
  type MatmulParams,
  sizeOf,
} from "@backplane/core/backend";
import {
  dtypeCode,
  dtypeSupport,
  FLOAT_DTYPES,
  gather,
  handleOf,
  layoutSupport,
  produce,
  withOperands,
} from "./common.ts";

/** [batch-or-1, rows, cols] of one operand, and whether it varies along the batch. */
function operandLayout(
  shape: readonly number[],
  strides: readonly number[],
  batchShape: readonly number[],
): { shape: number[]; strides: number[]; batched: boolean } {
  const bs = leadingBroadcastStrides(shape.slice(0, -2), strides.slice(0, -2), batchShape);
  const inner = shape.slice(-2);
  const innerStrides = strides.slice(-2);
  if (bs.every((s) => s === 0))
    return { shape: [1, ...inner], strides: [0, ...innerStrides], batched: false };
  return { shape: [...batchShape, ...inner], strides: [...bs, ...innerStrides], batched: true };
}

function run(p: MatmulParams): Tensor {
  const a = operandLayout(p.aShape, p.aStrides, p.batchShape);
  const b = operandLayout(p.bShape, p.bStrides, p.batchShape);
  return produce(p.outShape, p.a, (out) =>
    withOperands((take) =>
      handleOf(p.a).helper.matmul(
        dtypeCode(p.dtype),
        take(gather(p.a, a.shape, a.strides)),
        take(gather(p.b, b.shape, b.strides)),
        handleOf(out).id,
        [sizeOf(p.batchShape), p.m, p.n, p.k],
        a.batched,
        b.batched,
      ),
    ),
  );
}

export const matmulKernel: KernelDefinition<MatmulParams> = {
  op: "matmul",
  name: "mps-matmul",
  device: "mps",
  dtypes: FLOAT_DTYPES,
  deterministic: true,
  priority: 100,
  supports: (p) => {
    const d = dtypeSupport(p.dtype);
    if (d !== true) return d;
    const a = layoutSupport("a", p.batchShape.length + 2, p.aStrides);
    return a === true ? layoutSupport("b", p.batchShape.length + 2, p.bStrides) : a;
  },
  run,
};
