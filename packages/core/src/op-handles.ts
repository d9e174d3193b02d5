/**
 * Every op's handle, by the op's name: a backend defines its kernels through them
 * (`ops.matmul.kernel({ name, ..., run })` types run()'s params and result by the op) and
 * calls them directly where one op is built on another.
 */
import { conv2dOp } from "./ops/conv2d.ts";
import { einsumOp } from "./ops/einsum.ts";
import { addOp, geluOp, mulOp, reluOp } from "./ops/elementwise.ts";
import { fftOp, ifftOp, irfftOp, rfftOp } from "./ops/fft.ts";
import { choleskyOp, eighOp, invOp, luFactorOp, qrOp, solveOp, svdOp } from "./ops/linalg.ts";
import { matmulOp } from "./ops/matmul.ts";
import { mhaOp } from "./ops/mha.ts";
import { sdpaOp } from "./ops/sdpa.ts";
import { logSoftmaxOp, softmaxOp } from "./ops/softmax.ts";
import { quantizedConv2dOp } from "./quantized/conv.ts";
import { quantizedAddOp, quantizedReluOp } from "./quantized/elementwise.ts";
import { quantizedLinearOp } from "./quantized/linear.ts";
import { quantizedMatmulOp } from "./quantized/matmul.ts";

/** The op handles, each under its op's name (the `op` of its kernels). */
export const ops: {
  readonly matmul: typeof matmulOp;
  readonly conv2d: typeof conv2dOp;
  readonly einsum: typeof einsumOp;
  readonly add: typeof addOp;
  readonly mul: typeof mulOp;
  readonly relu: typeof reluOp;
  readonly gelu: typeof geluOp;
  readonly fft: typeof fftOp;
  readonly ifft: typeof ifftOp;
  readonly rfft: typeof rfftOp;
  readonly irfft: typeof irfftOp;
  readonly cholesky: typeof choleskyOp;
  readonly inv: typeof invOp;
  readonly luFactor: typeof luFactorOp;
  readonly eigh: typeof eighOp;
  readonly qr: typeof qrOp;
  readonly svd: typeof svdOp;
  readonly solve: typeof solveOp;
  readonly multiHeadAttention: typeof mhaOp;
  readonly scaledDotProductAttention: typeof sdpaOp;
  readonly softmax: typeof softmaxOp;
  readonly logSoftmax: typeof logSoftmaxOp;
  readonly quantizedConv2d: typeof quantizedConv2dOp;
  readonly quantizedLinear: typeof quantizedLinearOp;
  readonly quantizedMatmul: typeof quantizedMatmulOp;
  readonly quantizedAdd: typeof quantizedAddOp;
  readonly quantizedRelu: typeof quantizedReluOp;
} = Object.freeze({
  matmul: matmulOp,
  conv2d: conv2dOp,
  einsum: einsumOp,
  add: addOp,
  mul: mulOp,
  relu: reluOp,
  gelu: geluOp,
  fft: fftOp,
  ifft: ifftOp,
  rfft: rfftOp,
  irfft: irfftOp,
  cholesky: choleskyOp,
  inv: invOp,
  luFactor: luFactorOp,
  eigh: eighOp,
  qr: qrOp,
  svd: svdOp,
  solve: solveOp,
  multiHeadAttention: mhaOp,
  scaledDotProductAttention: sdpaOp,
  softmax: softmaxOp,
  logSoftmax: logSoftmaxOp,
  quantizedConv2d: quantizedConv2dOp,
  quantizedLinear: quantizedLinearOp,
  quantizedMatmul: quantizedMatmulOp,
  quantizedAdd: quantizedAddOp,
  quantizedRelu: quantizedReluOp,
});
