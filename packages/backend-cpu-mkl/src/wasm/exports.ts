/** The functions each WASM module exports (pointers are byte offsets into the CPU memory). */
type Ptr = number;
type Gemm = (
  m: number,
  n: number,
  k: number,
  a: Ptr,
  lda: number,
  transA: number,
  b: Ptr,
  ldb: number,
  transB: number,
  c: Ptr,
  ldc: number,
  work: Ptr,
) => void;

export interface GemmModule {
  sgemm: Gemm;
  dgemm: Gemm;
  sgemmWorkspaceBytes(m: number, n: number, k: number): number;
  dgemmWorkspaceBytes(m: number, n: number, k: number): number;
}

type Binary = (a: Ptr, b: Ptr, out: Ptr, n: number) => void;
type RowBinary = (a: Ptr, row: Ptr, out: Ptr, rows: number, cols: number) => void;
type Unary = (x: Ptr, out: Ptr, n: number) => void;
type Rows = (x: Ptr, out: Ptr, rows: number, cols: number) => void;

export interface KernelsModule {
  add_f32: Binary;
  add_f64: Binary;
  mul_f32: Binary;
  mul_f64: Binary;
  addRow_f32: RowBinary;
  addRow_f64: RowBinary;
  mulRow_f32: RowBinary;
  mulRow_f64: RowBinary;
  relu_f32: Unary;
  relu_f64: Unary;
  gelu_f32: Unary;
  gelu_f64: Unary;
  geluTanh_f32: Unary;
  geluTanh_f64: Unary;
  softmax_f32: Rows;
  softmax_f64: Rows;
  logSoftmax_f32: Rows;
  logSoftmax_f64: Rows;
  fftWorkspaceBytes(n: number): number;
  fft_c2c(input: Ptr, output: Ptr, n: number, inverse: number, work: Ptr): void;
  rfft_r2c(input: Ptr, output: Ptr, n: number, work: Ptr): void;
  irfft_c2r(input: Ptr, output: Ptr, n: number, work: Ptr): void;
  linalgWorkspaceBytes(m: number, n: number): number;
  cholesky(a: Ptr, l: Ptr, n: number, upper: number): number;
  luFactor(a: Ptr, lu: Ptr, pivots: Ptr, n: number): number;
  solve(a: Ptr, n: number, b: Ptr, nrhs: number, x: Ptr, work: Ptr): number;
  inv(a: Ptr, n: number, out: Ptr, work: Ptr): number;
  qr(a: Ptr, m: number, n: number, complete: number, q: Ptr, r: Ptr, work: Ptr): void;
  eigh(a: Ptr, n: number, values: Ptr, vectors: Ptr, work: Ptr): number;
  svd(a: Ptr, m: number, n: number, full: number, u: Ptr, s: Ptr, vh: Ptr, work: Ptr): number;
  /** dst (cols x rows) = the transpose of src (rows x cols), bytes. */
  transpose_u8(src: Ptr, rows: number, cols: number, dst: Ptr): void;
  /** dst (cols x rows) = the transpose of src (rows x cols, rows lds apart), rows ldd apart; f32. */
  transpose_f32(src: Ptr, rows: number, cols: number, lds: number, dst: Ptr, ldd: number): void;
  /** Per plane: dst (rows x cols) = src (h x w) shifted by (dy, dx), 0 outside it; f32. */
  shifted_planes_f32(
    src: Ptr,
    planes: number,
    h: number,
    w: number,
    dy: number,
    dx: number,
    dst: Ptr,
    rows: number,
    cols: number,
  ): void;
}
