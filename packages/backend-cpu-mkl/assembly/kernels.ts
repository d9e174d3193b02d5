// The "kernels" WASM module of backend-cpu-mkl: elementwise ops and softmax (f32/f64),
// FFTs (f64 complex interleaved), dense linear algebra (f64) and byte transposes. See
// assembly/README.md for the conventions (imported env.memory, byte-offset pointers,
// caller-provided workspace).
export {
  add_f32,
  add_f64,
  mul_f32,
  mul_f64,
  addRow_f32,
  addRow_f64,
  mulRow_f32,
  mulRow_f64,
  relu_f32,
  relu_f64,
  gelu_f32,
  gelu_f64,
  geluTanh_f32,
  geluTanh_f64,
  softmax_f32,
  softmax_f64,
  logSoftmax_f32,
  logSoftmax_f64,
} from "./kernels/elementwise";
export { fftWorkspaceBytes, fft_c2c, rfft_r2c, irfft_c2r } from "./kernels/fft";
export { transpose_f32, transpose_u8 } from "./kernels/transpose";
export { shifted_planes_f32 } from "./kernels/shift";
export { linalgWorkspaceBytes, cholesky, luFactor, luSolve, solve, inv, qr, eigh, svd } from "./kernels/linalg";
