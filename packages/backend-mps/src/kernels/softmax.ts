/** softmax and logSoftmax on mps: MPSGraph's softMax (log: x - max - log(sum(exp))). */
import type { Tensor } from "@backplane/core";
import { type KernelDefinition, type SoftmaxParams, sizeOf } from "@backplane/core/backend";
import {
  dense,
  dtypeCode,
  dtypeSupport,
  FLOAT_DTYPES,
  handleOf,
  layoutSupport,
  produce,
  withOperands,
} from "./common.ts";

function run(p: SoftmaxParams): Tensor {
  const shape = p.x.shape;
  const outer = sizeOf(shape.slice(0, p.dim));
  const dim = shape[p.dim] ?? 1;
  const inner = sizeOf(shape.slice(p.dim + 1));
  return produce(shape, p.x, (out) =>
    withOperands((take) =>
      handleOf(p.x).helper.softmax(
        dtypeCode(p.dtype),
        take(dense(p.x)),
        handleOf(out).id,
        [outer, dim, inner],
        p.log,
      ),
    ),
  );
}

function softmaxKernel(op: "softmax" | "logSoftmax"): KernelDefinition<SoftmaxParams> {
  return {
    op,
    name: `mps-${op}`,
    device: "mps",
    dtypes: FLOAT_DTYPES,
    deterministic: true,
    priority: 100,
    supports: (p) => {
      const d = dtypeSupport(p.dtype);
      return d === true ? layoutSupport("x", p.x.rank, p.x.strides) : d;
    },
    run,
  };
}

export const softmaxKernels: KernelDefinition<SoftmaxParams>[] = [
  softmaxKernel("softmax"),
  softmaxKernel("logSoftmax"),
];
