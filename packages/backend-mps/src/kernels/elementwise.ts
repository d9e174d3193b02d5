/**
 * add, mul (broadcasting), relu, gelu (erf and tanh forms) on mps, as MPSGraph element-wise
 * ops: the operands go as their own shapes (left-padded with 1s) and the helper broadcasts.
 */
import type { Tensor } from "@backplane/core";
import type { BinaryParams, KernelDefinition, UnaryParams } from "@backplane/core/backend";
import { ELEMENTWISE } from "../native/abi.ts";
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

/** `shape` left-padded with 1s to `rank` dims (a scalar is [1]). */
function padded(shape: readonly number[], rank: number): number[] {
  return [...new Array<number>(rank - shape.length).fill(1), ...shape];
}

function runBinary(op: number, p: BinaryParams): Tensor {
  const rank = Math.max(1, p.outShape.length);
  return produce(p.outShape, p.a, (out) =>
    withOperands((take) =>
      handleOf(p.a).helper.elementwise(
        op,
        dtypeCode(p.dtype),
        take(dense(p.a)),
        take(dense(p.b)),
        handleOf(out).id,
        { a: padded(p.a.shape, rank), b: padded(p.b.shape, rank), out: padded(p.outShape, rank) },
      ),
    ),
  );
}

function runUnary(op: number, p: UnaryParams): Tensor {
  const shape = padded(p.x.shape, Math.max(1, p.x.rank));
  return produce(p.x.shape, p.x, (out) =>
    withOperands((take) =>
      handleOf(p.x).helper.elementwise(
        op,
        dtypeCode(p.dtype),
        take(dense(p.x)),
        0n,
        handleOf(out).id,
        { a: shape, b: shape, out: shape },
      ),
    ),
  );
}

const common = { device: "mps", dtypes: FLOAT_DTYPES, deterministic: true, priority: 100 } as const;

function binarySupport(p: BinaryParams): true | string {
  const d = dtypeSupport(p.dtype);
  if (d !== true) return d;
  const a = layoutSupport("a", p.outShape.length, p.a.strides);
  return a === true ? layoutSupport("b", p.outShape.length, p.b.strides) : a;
}

function unarySupport(p: UnaryParams): true | string {
  const d = dtypeSupport(p.dtype);
  return d === true ? layoutSupport("x", p.x.rank, p.x.strides) : d;
}

export const elementwiseKernels: KernelDefinition<never>[] = [
  {
    ...common,
    op: "add",
    name: "mps-add",
    supports: binarySupport,
    run: (p: BinaryParams) => runBinary(ELEMENTWISE.ADD, p),
  },
  {
    ...common,
    op: "mul",
    name: "mps-mul",
    supports: binarySupport,
    run: (p: BinaryParams) => runBinary(ELEMENTWISE.MUL, p),
  },
  {
    ...common,
    op: "relu",
    name: "mps-relu",
    supports: unarySupport,
    run: (p: UnaryParams) => runUnary(ELEMENTWISE.RELU, p),
  },
  {
    ...common,
    op: "gelu",
    name: "mps-gelu",
    supports: unarySupport,
    run: (p: UnaryParams) =>
      runUnary(p.approximate === "tanh" ? ELEMENTWISE.GELU_TANH : ELEMENTWISE.GELU, p),
  },
] as KernelDefinition<never>[];
