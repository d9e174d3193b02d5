/** add, mul (broadcasting), relu, gelu. */

import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DTypeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { DType } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import {
  broadcastShapes,
  checkDTypeIn,
  checkFloat,
  checkOptions,
  checkSame,
  checkTensor,
} from "./validate.ts";

export interface BinaryParams extends OpParams {
  a: Tensor;
  b: Tensor;
  outShape: number[];
}
export interface UnaryParams extends OpParams {
  x: Tensor;
  approximate: "none" | "tanh";
}

const BINARY_DTYPES: readonly DType[] = ["float32", "float64", "float16", "bfloat16", "int32"];

/**
 * torch promotes mixed dtypes (float32 + float64 gives float64); we do not, so say which
 * cast gives torch's result: to the dtype torch promotes the pair to.
 */
function checkNoPromotion(op: string, a: Tensor, b: Tensor): void {
  if (a.dtype === b.dtype || a.device !== b.device) return;
  const wider = promotedOf(a, b);
  const which = a.dtype === wider ? "b" : b.dtype === wider ? "a" : "both";
  throw new DTypeError(
    `${op}: a has dtype ${a.dtype} but b has ${b.dtype}; they must match (no implicit promotion): cast ${which} with .to("${wider}") first, the dtype torch would promote them to`,
  );
}

const isInteger = (d: DType): boolean => d === "int32";

/**
 * torch's result dtype for a and b. A 0-d tensor beside one with dimensions counts only
 * where it is of a higher kind (a float beside an integer): float16 [3] + float32 0-d is
 * float16 in torch (casting to float32 gave another dtype than torch's).
 */
function promotedOf(a: Tensor, b: Tensor): DType {
  if ((a.rank === 0) === (b.rank === 0)) return promoted(a.dtype, b.dtype);
  const [dimensioned, scalar] = a.rank === 0 ? [b, a] : [a, b];
  return isInteger(dimensioned.dtype) && !isInteger(scalar.dtype)
    ? scalar.dtype
    : dimensioned.dtype;
}

/** torch's result dtype for two of BINARY_DTYPES, both with dimensions (or both 0-d). */
function promoted(x: DType, y: DType): DType {
  // float16 with bfloat16 meets at float32 in torch; otherwise the later in this order wins.
  if ((x === "float16" && y === "bfloat16") || (x === "bfloat16" && y === "float16"))
    return "float32";
  const order: readonly DType[] = ["int32", "bfloat16", "float16", "float32", "float64"];
  return order[Math.max(order.indexOf(x), order.indexOf(y))];
}

function binary(op: string): OpRecord<BinaryParams, [a: Tensor, b: Tensor], Tensor> {
  const prepare = (a: Tensor, b: Tensor): BinaryParams => {
    checkTensor(op, "a", a);
    checkTensor(op, "b", b);
    checkDTypeIn(op, "a", a, BINARY_DTYPES);
    checkDTypeIn(op, "b", b, BINARY_DTYPES);
    checkNoPromotion(op, a, b);
    checkSame(op, ["a", "b"], [a, b]);
    const outShape = broadcastShapes(op, a.shape, b.shape);
    return { a, b, outShape, deviceType: a.deviceType, dtype: a.dtype };
  };
  return defineOp({
    name: op,
    prepare,
    shapeKey: (p: BinaryParams) => `${p.a.shape.join("x")},${p.b.shape.join("x")}`,
    result: (p: BinaryParams) => ({ shape: p.outShape, dtype: p.dtype }),
  });
}

export const addOp: OpRecord<BinaryParams, [a: Tensor, b: Tensor], Tensor> = binary("add");
export const mulOp: OpRecord<BinaryParams, [a: Tensor, b: Tensor], Tensor> = binary("mul");

/** a + b with broadcasting. */
export function add(a: Tensor, b: Tensor): Tensor {
  return dispatch(addOp, addOp.prepare(a, b));
}
/** a * b (elementwise) with broadcasting. */
export function mul(a: Tensor, b: Tensor): Tensor {
  return dispatch(mulOp, mulOp.prepare(a, b));
}

export const reluOp: OpRecord<UnaryParams, [x: Tensor], Tensor> = defineOp({
  name: "relu",
  prepare: (x: Tensor): UnaryParams => {
    checkTensor("relu", "x", x);
    checkDTypeIn("relu", "x", x, ["float32", "float64", "float16", "bfloat16", "int32"]);
    return { x, approximate: "none", deviceType: x.deviceType, dtype: x.dtype };
  },
  shapeKey: (p: UnaryParams) => p.x.shape.join("x"),
  result: (p: UnaryParams) => ({ shape: p.x.shape, dtype: p.dtype }),
});

export const geluOp: OpRecord<
  UnaryParams,
  [x: Tensor, opts?: { approximate?: "none" | "tanh" }],
  Tensor
> = defineOp({
  name: "gelu",
  prepare: (x: Tensor, opts?: { approximate?: "none" | "tanh" }): UnaryParams => {
    checkTensor("gelu", "x", x);
    checkFloat("gelu", "x", x);
    const o = checkOptions("gelu", opts, ["approximate"]);
    // Only a missing option takes the default: null is as wrong as any other non-string
    // (torch: "argument 'approximate' must be str, not NoneType").
    const approximate = o.approximate === undefined ? "none" : o.approximate;
    if (approximate !== "none" && approximate !== "tanh") {
      throw new ArgumentError(
        `gelu: approximate must be "none" or "tanh", got ${show(approximate)}`,
      );
    }
    return { x, approximate, deviceType: x.deviceType, dtype: x.dtype };
  },
  shapeKey: (p: UnaryParams) => p.x.shape.join("x"),
  result: (p: UnaryParams) => ({ shape: p.x.shape, dtype: p.dtype }),
});

/** max(x, 0). */
export function relu(x: Tensor): Tensor {
  return dispatch(reluOp, reluOp.prepare(x));
}
/** Gaussian error linear unit; approximate "tanh" as in torch. */
export function gelu(x: Tensor, opts?: { approximate?: "none" | "tanh" }): Tensor {
  return dispatch(geluOp, geluOp.prepare(x, opts));
}
