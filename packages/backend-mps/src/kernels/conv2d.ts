/** conv2d on mps: MPSGraph's convolution2D (NCHW, OIHW weights, explicit padding), bias added. */
import type { Tensor } from "@backplane/core";
import type { Conv2dParams, KernelDefinition } from "@backplane/core/backend";
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

/** The helper's geometry[16] (bp_mps.h). */
export function geometry(p: Conv2dParams): number[] {
  return [
    p.n,
    p.c,
    p.h,
    p.w,
    p.outChannels,
    p.kh,
    p.kw,
    p.strideH,
    p.strideW,
    p.padTop,
    p.padLeft,
    p.dilationH,
    p.dilationW,
    p.groups,
    p.outH,
    p.outW,
  ];
}

/** MPSGraph takes NSUInteger sizes; the helper refuses anything from 2^31 up. */
const LIMIT = 2 ** 31;

function run(p: Conv2dParams): Tensor {
  return produce([p.n, p.outChannels, p.outH, p.outW], p.input, (out) =>
    withOperands((take) =>
      handleOf(p.input).helper.conv2d(
        dtypeCode(p.dtype),
        take(dense(p.input)),
        take(dense(p.weight)),
        p.bias ? take(dense(p.bias)) : 0n,
        handleOf(out).id,
        geometry(p),
      ),
    ),
  );
}

export const conv2dKernel: KernelDefinition<Conv2dParams> = {
  op: "conv2d",
  name: "mps-conv2d",
  device: "mps",
  dtypes: FLOAT_DTYPES,
  deterministic: true,
  priority: 100,
  supports: (p) => {
    const d = dtypeSupport(p.dtype);
    if (d !== true) return d;
    const big = geometry(p).find((v) => v >= LIMIT);
    if (big !== undefined) return `a conv2d size or parameter of ${big} is past MPSGraph's 2^31`;
    const x = layoutSupport("input", 4, p.input.strides);
    return x === true ? layoutSupport("weight", 4, p.weight.strides) : x;
  },
  run,
};
