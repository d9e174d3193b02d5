/**
 * Invalid calls per op: each must throw a typed BackplaneError (never a TypeError, never
 * a crash) whose message names the argument. Used by the conformance suite and by the
 * property test that throws random garbage at every op.
 */
import { type DType, type Tensor, tensor } from "@backplane/core";
import { randomTensor as R, type Rng } from "./random.ts";

export interface BadCall {
  op: string;
  name: string;
  /** Expected error class name (ShapeError, DTypeError, DeviceError, DisposedError, ArgumentError...). */
  expect: string;
  make(dtype: DType, rng: Rng): unknown[];
}

const disposed = (t: Tensor): Tensor => {
  t.dispose();
  return t;
};
const ints = (shape: number[]) =>
  tensor(new Int32Array(shape.reduce((a, b) => a * b, 1)).fill(1), { shape });

export const BAD_CALLS: BadCall[] = [
  {
    op: "matmul",
    name: "inner sizes differ",
    expect: "ShapeError",
    make: (d, r) => [R([2, 3], d, r), R([4, 5], d, r)],
  },
  {
    op: "matmul",
    name: "scalar operand",
    expect: "ShapeError",
    make: (d, r) => [R([], d, r), R([3], d, r)],
  },
  {
    op: "matmul",
    name: "int32 inputs",
    expect: "DTypeError",
    make: () => [ints([2, 2]), ints([2, 2])],
  },
  {
    op: "matmul",
    name: "mixed dtypes",
    expect: "DTypeError",
    make: (d, r) => [R([2, 2], d, r), R([2, 2], d === "float64" ? "float32" : "float64", r)],
  },
  {
    op: "matmul",
    name: "disposed operand",
    expect: "DisposedError",
    make: (d, r) => [disposed(R([2, 2], d, r)), R([2, 2], d, r)],
  },
  {
    op: "matmul",
    name: "array instead of tensor",
    expect: "ArgumentError",
    make: (d, r) => [[[1, 2]], R([2, 2], d, r)],
  },
  {
    op: "matmul",
    name: "batch dims do not broadcast",
    expect: "ShapeError",
    make: (d, r) => [R([2, 3, 4], d, r), R([5, 4, 3], d, r)],
  },
  {
    op: "add",
    name: "shapes do not broadcast",
    expect: "ShapeError",
    make: (d, r) => [R([3], d, r), R([4], d, r)],
  },
  {
    op: "add",
    name: "bool inputs",
    expect: "DTypeError",
    make: () => [tensor([true]), tensor([false])],
  },
  {
    op: "mul",
    name: "null operand",
    expect: "ArgumentError",
    make: (d, r) => [R([3], d, r), null],
  },
  {
    op: "relu",
    name: "disposed input",
    expect: "DisposedError",
    make: (d, r) => [disposed(R([3], d, r))],
  },
  {
    op: "gelu",
    name: "unknown approximate",
    expect: "ArgumentError",
    make: (d, r) => [R([3], d, r), { approximate: "fast" }],
  },
  {
    op: "softmax",
    name: "dim out of range",
    expect: "ShapeError",
    make: (d, r) => [R([3, 4], d, r), 2],
  },
  { op: "softmax", name: "int32 input", expect: "DTypeError", make: () => [ints([3]), 0] },
  {
    op: "softmax",
    name: "dim not an integer",
    expect: "ShapeError",
    make: (d, r) => [R([3, 4], d, r), 0.5],
  },
  {
    op: "logSoftmax",
    name: "fractional dim",
    expect: "ShapeError",
    make: (d, r) => [R([3], d, r), 0.5],
  },
  {
    op: "conv2d",
    name: "2-D input",
    expect: "ShapeError",
    make: (d, r) => [R([5, 5], d, r), R([2, 3, 3, 3], d, r)],
  },
  {
    op: "conv2d",
    name: "no output channels",
    expect: "ShapeError",
    make: (d, r) => [R([1, 3, 5, 5], d, r), R([0, 3, 3, 3], d, r)],
  },
  {
    op: "conv2d",
    name: "channel mismatch",
    expect: "ShapeError",
    make: (d, r) => [R([1, 3, 5, 5], d, r), R([2, 4, 3, 3], d, r)],
  },
  {
    op: "conv2d",
    name: "kernel larger than input",
    expect: "ShapeError",
    make: (d, r) => [R([1, 1, 2, 2], d, r), R([1, 1, 3, 3], d, r)],
  },
  {
    op: "conv2d",
    name: "stride 0",
    expect: "ArgumentError",
    make: (d, r) => [R([1, 1, 5, 5], d, r), R([1, 1, 3, 3], d, r), { stride: 0 }],
  },
  {
    op: "conv2d",
    name: "groups do not divide channels",
    expect: "ShapeError",
    make: (d, r) => [R([1, 3, 5, 5], d, r), R([4, 1, 3, 3], d, r), { groups: 2 }],
  },
  {
    op: "conv2d",
    name: "bias of the wrong length",
    expect: "ShapeError",
    make: (d, r) => [R([1, 2, 5, 5], d, r), R([3, 2, 3, 3], d, r), { bias: R([4], d, r) }],
  },
  {
    op: "scaledDotProductAttention",
    name: "head dims differ",
    expect: "ShapeError",
    make: (d, r) => [R([2, 4, 8], d, r), R([2, 4, 6], d, r), R([2, 4, 8], d, r)],
  },
  {
    op: "scaledDotProductAttention",
    name: "mask and causal together",
    expect: "ArgumentError",
    make: (d, r) => [
      R([2, 4, 8], d, r),
      R([2, 4, 8], d, r),
      R([2, 4, 8], d, r),
      { isCausal: true, attnMask: tensor([true]) },
    ],
  },
  {
    op: "scaledDotProductAttention",
    name: "dropout 1.5",
    expect: "ArgumentError",
    make: (d, r) => [R([2, 4, 8], d, r), R([2, 4, 8], d, r), R([2, 4, 8], d, r), { dropoutP: 1.5 }],
  },
  {
    op: "scaledDotProductAttention",
    name: "GQA heads not a multiple",
    expect: "ShapeError",
    make: (d, r) => [
      R([1, 3, 4, 8], d, r),
      R([1, 2, 4, 8], d, r),
      R([1, 2, 4, 8], d, r),
      { enableGqa: true },
    ],
  },
  {
    // torch reads the heads at dim -3 under enable_gqa: a 2-D query has none.
    op: "scaledDotProductAttention",
    name: "GQA with a 2-D query",
    expect: "ShapeError",
    make: (d, r) => [R([5, 4], d, r), R([3, 7, 4], d, r), R([3, 7, 2], d, r), { enableGqa: true }],
  },
  {
    op: "einsum",
    name: "size mismatch",
    expect: "ArgumentError",
    make: (d, r) => ["ij,jk->ik", R([2, 3], d, r), R([4, 5], d, r)],
  },
  {
    op: "einsum",
    name: "bad character",
    expect: "ArgumentError",
    make: (d, r) => ["i1,jk", R([2, 3], d, r), R([3, 5], d, r)],
  },
  {
    op: "einsum",
    name: "operand count",
    expect: "ArgumentError",
    make: (d, r) => ["ij,jk", R([2, 3], d, r)],
  },
  {
    op: "einsum",
    name: "unknown output index",
    expect: "ArgumentError",
    make: (d, r) => ["ij->iz", R([2, 3], d, r)],
  },
  { op: "cholesky", name: "not square", expect: "ShapeError", make: (d, r) => [R([3, 4], d, r)] },
  {
    op: "cholesky",
    name: "not positive definite",
    expect: "LinalgError",
    make: (d) => [
      tensor(
        [
          [1, 2],
          [2, 1],
        ],
        { dtype: d },
      ),
    ],
  },
  {
    op: "inv",
    name: "singular",
    expect: "LinalgError",
    make: (d) => [
      tensor(
        [
          [1, 2],
          [2, 4],
        ],
        { dtype: d },
      ),
    ],
  },
  {
    op: "solve",
    name: "rows of B",
    expect: "ShapeError",
    make: (d, r) => [R([3, 3], d, r), R([4, 2], d, r)],
  },
  {
    op: "solve",
    name: "singular A",
    expect: "LinalgError",
    make: (d, r) => [
      tensor(
        [
          [0, 0],
          [0, 0],
        ],
        { dtype: d },
      ),
      R([2], d, r),
    ],
  },
  {
    op: "qr",
    name: "unknown mode",
    expect: "ArgumentError",
    make: (d, r) => [R([3, 3], d, r), { mode: "economic" }],
  },
  { op: "svd", name: "1-D input", expect: "ShapeError", make: (d, r) => [R([3], d, r)] },
  { op: "eigh", name: "int32 input", expect: "DTypeError", make: () => [ints([2, 2])] },
  { op: "fft", name: "real input to fft", expect: "ShapeError", make: (d, r) => [R([8], d, r)] },
  {
    op: "fft",
    name: "n = 0",
    expect: "ArgumentError",
    make: (d, r) => [R([8, 2], d, r), { n: 0 }],
  },
  {
    op: "rfft",
    name: "unknown norm",
    expect: "ArgumentError",
    make: (d, r) => [R([8], d, r), { norm: "unitary" }],
  },
  {
    op: "irfft",
    name: "dim out of range",
    expect: "ShapeError",
    make: (d, r) => [R([5, 2], d, r), { dim: 3 }],
  },
];
