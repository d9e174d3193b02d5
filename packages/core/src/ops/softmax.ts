/** softmax and logSoftmax along one dimension. */
import { dispatch } from "../dispatch/dispatcher.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import { normalizeDim, type Tensor } from "../tensor/tensor.ts";
import { checkFloat, checkTensor } from "./validate.ts";

export interface SoftmaxParams extends OpParams {
  x: Tensor;
  dim: number;
  log: boolean;
}

type SoftmaxOp = OpRecord<SoftmaxParams, [x: Tensor, dim?: number], Tensor>;

function define(name: string, log: boolean): SoftmaxOp {
  return defineOp({
    name,
    prepare: (x: Tensor, dim: number = -1): SoftmaxParams => {
      checkTensor(name, "x", x);
      checkFloat(name, "x", x);
      const d = normalizeDim(`${name}: dim`, dim, x.rank);
      return { x, dim: x.rank === 0 ? 0 : d, log, deviceType: x.deviceType, dtype: x.dtype };
    },
    shapeKey: (p: SoftmaxParams) => `${p.x.shape.join("x")}@${p.dim}`,
    result: (p: SoftmaxParams) => ({ shape: p.x.shape, dtype: p.dtype }),
  });
}

export const softmaxOp: SoftmaxOp = define("softmax", false);
export const logSoftmaxOp: SoftmaxOp = define("logSoftmax", true);

/** exp(x) / sum(exp(x)) along dim (default: last). */
export function softmax(x: Tensor, dim = -1): Tensor {
  return dispatch(softmaxOp, softmaxOp.prepare(x, dim));
}
/** log(softmax(x)) computed stably. */
export function logSoftmax(x: Tensor, dim = -1): Tensor {
  return dispatch(logSoftmaxOp, logSoftmaxOp.prepare(x, dim));
}
