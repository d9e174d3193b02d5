/**
 * Scaled dot-product attention as FlashAttention-2 tiles whose two products run on a
 * native GEMM (PyTorch's CPU flash kernel is built the same way on its cpublas gemm):
 * flash-cpu-blas on the BLAS's cblas_sgemm, and (dnnl/flash.ts) flash-cpu-dnnl on
 * oneDNN's matmul primitive (dnnl/matmul-step.ts).
 * For each (batch/head, block of BQ query rows), key blocks of BK:
 *
 *   S = (scale * log2 e) Q_blk K_blkᵀ          sgemm into a BQ x BK workspace
 *   online softmax on S, rescale O rows         WASM SIMD (flash_block_softmax), or the
 *                                               library's own step (TileGemm.softmax)
 *   O += P V_blk                                sgemm, beta = 1, into the output
 *   O /= l                                      WASM SIMD (flash_block_finish)
 *
 * The output rows are the accumulator, so the extra memory is one score block and the
 * row statistics (about 2 MiB), whatever the sequence lengths.
 *
 * Threads: the products run on the GEMM library's threads (backends.openmp's setting) and
 * the softmax rows on the pool's (or the library's, for its own step), one after the
 * other. That pays only with the libraries' idle spins limited (native/spin-env.ts: the
 * pool's workers and theirs would fight for the cores) and key blocks of 2048 (products
 * big enough to split). Pool workers cannot call the native library, so there is no split
 * by heads (PyTorch's way). In deterministic mode the products run on one thread (a
 * library's split moves the last bits); the softmax rows are independent, so their split
 * does not.
 * The blocks are the same at every thread count, so the order of every sum is too.
 * Masks other than causal, and dropout, are left to flash-cpu (supports() says so).
 */
import { empty, getFlag, type Tensor } from "@backplane/core";
import type { AnyKernelDefinition, SdpaParams } from "@backplane/core/backend";
import { addressOf, cpuMemory, parallelFor } from "@backplane/core/cpu";
import { onLibraryThreads, state } from "./blas-lapack.ts";
import { attentionModule, flashOperandProblem, flashOutput, layoutOf } from "./wasm-attention.ts";

/**
 * Query rows per block and keys per block: a 2 MiB score block. On one thread 512 keys
 * (0.5 MiB) measured the same; on two, products over 2048 keys split well (256 x 512
 * ones did not).
 */
const BQ = 256;
const BK = 2048;

export { BK as TILE_COLS, BQ as TILE_ROWS };

const ROW_MAJOR = 101;
const NO_TRANS = 111;
const TRANS = 112;

/** The scores' factor: the softmax scale, in the log2 domain the online softmax works in. */
export const tileAlpha = (p: SdpaParams): number => p.scale * Math.LOG2E;

/**
 * How the tiles make the scores alpha Q Kᵀ: the product's alpha and the query rows' stride.
 * A GEMM applies alpha after the sum, so with |alpha| < 1 Q Kᵀ alone can overflow float32
 * (|q|, |k| ~ 1e19 with a small scale: every row NaN) where the scaled scores fit, as the
 * reference and torch's math kernel (which scale q and k first) give. Then the tiles copy
 * the query block times alpha and multiply by 1; scaling first cannot overflow there. With
 * |alpha| >= 1 scaling first could only overflow sooner: the product scales.
 */
export function scoreProduct(p: SdpaParams, ldq: number): ScoreProduct {
  const alpha = tileAlpha(p);
  return Math.abs(alpha) < 1
    ? { alpha: 1, lda: p.E, prescaled: true }
    : { alpha, lda: ldq, prescaled: false };
}

/** The scores' product: its alpha, the query rows' stride, and whether they are a scaled copy. */
export interface ScoreProduct {
  alpha: number;
  lda: number;
  prescaled: boolean;
}

/** dst row r (row stride e) = alpha * src row r (row stride ld), for r < rows; in float64, rounded once. */
function scaleRowsInto(
  f32: Float32Array,
  src: number,
  ld: number,
  rows: number,
  e: number,
  alpha: number,
  dst: number,
): void {
  for (let r = 0; r < rows; r++) {
    const from = src + r * ld;
    const to = dst + r * e;
    for (let c = 0; c < e; c++) f32[to + c] = f32[from + c] * alpha;
  }
}

/**
 * The row stride a BLAS takes for t's matrices (row-major: at least the row length). A
 * single row may carry any stride (a permuted [E, 1] view has stride 1): any valid value
 * does then.
 */
export function leadingDim(t: Tensor): number {
  const rows = t.shape[t.rank - 2];
  const cols = t.shape[t.rank - 1];
  return rows > 1 ? t.strides[t.rank - 2] : Math.max(1, cols);
}

/** The row-major product the tiles need: C = alpha A op(B) + beta C, op(B) = B or Bᵀ. */
export interface TileGemm {
  /** The kernel's name. */
  readonly kernel: string;
  /** Why the library cannot run now (not loaded), or undefined. */
  missing(): string | undefined;
  /** Why it cannot make the tile products for these inputs' sizes and strides, or undefined. */
  refuses?(p: SdpaParams): string | undefined;
  sgemm(
    transB: boolean,
    m: number,
    n: number,
    k: number,
    alpha: number,
    a: Float32Array,
    lda: number,
    b: Float32Array,
    ldb: number,
    beta: number,
    c: Float32Array,
    ldc: number,
  ): void;
  /** Runs `call` with the library on one thread when `oneThread`, else on the setting's. */
  onThreads<T>(oneThread: boolean, call: () => T): T;
  /**
   * The library's own online-softmax step, when it has one faster than the WASM's
   * (flash_block_softmax on the pool); false when it cannot take this block (the WASM
   * step runs instead).
   */
  softmax?(step: SoftmaxStep): boolean;
  /**
   * A faster pass the library runs first over every query block of `out` (flash-cpu-dnnl's
   * bounded shift); returns the blocks it could not hold, which the exact tiles then run.
   */
  firstPass?(p: SdpaParams, out: Tensor): QueryBlock[];
}

/**
 * One online-softmax step between the two products (flash_block_softmax's contract), as
 * byte addresses in the CPU device's memory: the rows x cols score block s (row stride
 * ld floats, log2 domain), per row the running max m (f32) and sum l (f64), the output
 * rows o (ev floats each), the causal diagonal, and 3 x BQ floats of scratch.
 */
export interface SoftmaxStep {
  s: number;
  ld: number;
  rows: number;
  cols: number;
  m: number;
  l: number;
  o: number;
  ev: number;
  causal: boolean;
  diag: number;
  scratch: number;
}

/** The step in WASM SIMD, its rows split over the pool's threads. */
function wasmSoftmax(st: SoftmaxStep, kernel: string): void {
  parallelFor({
    module: "backend-cpu-mkl/attention",
    fn: "flash_block_softmax",
    args: [
      st.s,
      st.ld,
      st.rows,
      st.cols,
      st.m,
      st.l,
      st.o,
      st.ev,
      st.ev,
      st.causal ? 1 : 0,
      st.diag,
    ],
    step: [st.ld * 4, 0, 0, 0, 4, 8, st.ev * 4, 0, 0, 0, 1],
    countArg: 2,
    items: st.rows,
    label: `${kernel} softmax rows`,
  });
}

/** The native BLAS's cblas_sgemm. */
const blasGemm: TileGemm = {
  kernel: "flash-cpu-blas",
  missing: () => (state.lib ? undefined : "no native BLAS is loaded"),
  sgemm: (transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) =>
    state.lib!.blas.cblas_sgemm(
      ROW_MAJOR,
      NO_TRANS,
      transB ? TRANS : NO_TRANS,
      m,
      n,
      k,
      alpha,
      a,
      lda,
      b,
      ldb,
      beta,
      c,
      ldc,
    ),
  onThreads: onLibraryThreads,
};

/** Why the tile kernel on `gemm` refuses these inputs, or true. */
export function flashTileSupports(gemm: TileGemm, p: SdpaParams): true | string {
  const name = gemm.kernel;
  const missing = gemm.missing();
  if (missing) return missing;
  if (p.attnMask)
    return `${p.maskKind} attn_mask: ${name} takes causal masking only (flash-cpu takes masks)`;
  if (p.dropoutP > 0) return `dropout_p > 0: ${name} has no dropout (flash-cpu has)`;
  const problem = flashOperandProblem(p, name);
  if (problem) return problem;
  for (const [name, t] of [
    ["query", p.query],
    ["key", p.key],
    ["value", p.value],
  ] as const) {
    // Rows that overlap (a row stride below the row length) are no BLAS matrix.
    if (leadingDim(t) < t.shape[t.rank - 1])
      return `${name}'s rows overlap (row stride ${leadingDim(t)} < ${t.shape[t.rank - 1]}); a GEMM needs a row stride of at least the row length`;
  }
  return gemm.refuses?.(p) ?? true;
}

/**
 * Runs the library's first pass, if any, then the tile loop over the blocks left (on one
 * library thread in deterministic mode).
 */
export function flashTileRun(gemm: TileGemm, p: SdpaParams): Tensor {
  return gemm.onThreads(getFlag("core.deterministic") === true, () => {
    const { out, done } = flashOutput(p);
    if (done) return out;
    try {
      const exact = gemm.firstPass ? gemm.firstPass(p, out) : [...queryBlocks(p, out, BQ)];
      if (exact.length > 0) flashTiles(gemm, p, out, exact);
      return out;
    } catch (e) {
      out.dispose();
      throw e;
    }
  });
}

/**
 * Every (rows, cols) tile product flashTiles' loop makes for these sizes: query blocks of
 * BQ rows, key blocks of BK columns, cut at the block's last row under causal masking.
 */
export function tileShapes(p: SdpaParams): [number, number][] {
  const shapes = new Map<number, [number, number]>();
  for (let i0 = 0; i0 < p.L; i0 += BQ) {
    const rows = Math.min(BQ, p.L - i0);
    const jEnd = p.isCausal ? Math.min(p.S, i0 + rows) : p.S;
    for (let j0 = 0; j0 < jEnd; j0 += BK) {
      const cols = Math.min(BK, jEnd - j0);
      shapes.set(rows * (BK + 1) + cols, [rows, cols]);
    }
  }
  return [...shapes.values()];
}

/** Rows i0 .. i0 + rows - 1 of the queries of batch/head b (a flat index). */
export interface QueryBlock {
  b: number;
  i0: number;
  rows: number;
}

/** Every block of `size` query rows of every batch/head of `out`. */
export function* queryBlocks(p: SdpaParams, out: Tensor, size: number): Generator<QueryBlock> {
  const bh = out.numel / (p.L * p.Ev);
  for (let b = 0; b < bh; b++)
    for (let i0 = 0; i0 < p.L; i0 += size) yield { b, i0, rows: Math.min(size, p.L - i0) };
}

/** `blocks` cut into blocks of at most BQ rows (the workspace's). */
function* subBlocks(blocks: Iterable<QueryBlock>): Generator<QueryBlock> {
  for (const { b, i0, rows } of blocks)
    for (let r0 = 0; r0 < rows; r0 += BQ) yield { b, i0: i0 + r0, rows: Math.min(BQ, rows - r0) };
}

/**
 * The tile loop with the online softmax over `blocks` of `out`:
 * flash-cpu-blas's whole run, and flash-cpu-dnnl's exact path for the blocks its bounded
 * shift does not hold (dnnl/flash-bounded.ts).
 */
// Long: one FlashAttention-2 tile loop; its two products and the online softmax share the running max, sum and output tile.
function flashTiles(
  gemm: TileGemm,
  p: SdpaParams,
  out: Tensor,
  blocks: Iterable<QueryBlock>,
): void {
  const mod = attentionModule.current!;
  const { L, S, E, Ev } = p;
  const lay = layoutOf(p);
  const ldq = leadingDim(p.query);
  const product = scoreProduct(p, ldq);
  const { prescaled } = product;
  // Workspace: the score block, then per query row m (f32) and l (f64), the step's
  // scratch, and the scaled query block when the product does not scale.
  const work = empty([BQ * BK + BQ * 6 + 16 + (prescaled ? BQ * E : 0)], { dtype: "float32" });
  try {
    const mem = cpuMemory().memory.buffer;
    const f32 = new Float32Array(mem);
    const sAddr = addressOf(work);
    const mAddr = sAddr + BQ * BK * 4;
    const lAddr = mAddr + BQ * 4 + ((8 - ((mAddr + BQ * 4) % 8)) % 8);
    const scratch = lAddr + BQ * 8;
    const qScaled = (scratch + BQ * 12) / 4;
    const sView = f32.subarray(sAddr / 4, sAddr / 4 + BQ * BK);
    const mView = new Float32Array(mem, mAddr, BQ);
    const lView = new Float64Array(mem, lAddr, BQ);
    const ldk = leadingDim(p.key);
    const ldv = leadingDim(p.value);
    const q0 = addressOf(p.query) / 4;
    const k0 = addressOf(p.key) / 4;
    const v0 = addressOf(p.value) / 4;
    const o0 = addressOf(out) / 4;
    const causal = p.isCausal;
    for (const { b, i0, rows } of subBlocks(blocks)) {
      let q = q0 + lay.q[b] + i0 * ldq;
      if (prescaled) {
        scaleRowsInto(f32, q, ldq, rows, E, tileAlpha(p), qScaled);
        q = qScaled;
      }
      const k = k0 + lay.k[b];
      const v = v0 + lay.v[b];
      const oBlk = o0 + b * L * Ev + i0 * Ev;
      f32.fill(0, oBlk, oBlk + rows * Ev);
      mView.fill(Number.NEGATIVE_INFINITY, 0, rows);
      lView.fill(0, 0, rows);
      // Causal (key j sees query rows i >= j): no key past the block's last row.
      const jEnd = causal ? Math.min(S, i0 + rows) : S;
      for (let j0 = 0; j0 < jEnd; j0 += BK) {
        const cols = Math.min(BK, jEnd - j0);
        gemm.sgemm(
          true,
          rows,
          cols,
          E,
          product.alpha,
          f32.subarray(q),
          product.lda,
          f32.subarray(k + j0 * ldk),
          ldk,
          0,
          sView,
          cols,
        );
        const step: SoftmaxStep = {
          s: sAddr,
          ld: cols,
          rows,
          cols,
          m: mAddr,
          l: lAddr,
          o: oBlk * 4,
          ev: Ev,
          causal,
          diag: i0 - j0,
          scratch,
        };
        if (!gemm.softmax?.(step)) wasmSoftmax(step, gemm.kernel);
        gemm.sgemm(
          false,
          rows,
          Ev,
          cols,
          1,
          sView,
          cols,
          f32.subarray(v + j0 * ldv),
          ldv,
          1,
          f32.subarray(oBlk),
          Ev,
        );
      }
      mod.flash_block_finish(oBlk * 4, Ev, rows, Ev, lAddr, 0);
    }
  } finally {
    work.dispose();
  }
}

export function flashBlasKernels(): AnyKernelDefinition[] {
  return [
    {
      op: "scaledDotProductAttention",
      name: "flash-cpu-blas",
      family: "FLASH_ATTENTION",
      device: "cpu",
      dtypes: ["float32"],
      deterministic: true,
      flags: ["cuda.flashSdp"],
      verboseFlags: ["mkl.verbose"],
      priority: 60,
      supports: (p: SdpaParams) => flashTileSupports(blasGemm, p),
      run: (p: SdpaParams) => flashTileRun(blasGemm, p),
    },
  ];
}
