/**
 * flash-cpu-dnnl's fast path: attention whose softmax shift is a bound known before the
 * scores, so the exp runs inside the first product (a oneDNN matmul post-op) and no pass
 * over the scores looks for a row maximum.
 *
 * Cauchy-Schwarz bounds every score of query row i: |scale q_i . k_j| <= b_i =
 * |scale| |q_i| max_j |k_j| (the max over the keys row i sees). Softmax is the same for
 * any shift, so with the query rows extended by -b_i and the key rows by 1:
 *
 *   P = exp([scale Q, -b] [K, 1]ᵀ)        one matmul primitive, exp fused (values <= 1)
 *   l = row sums of P                     WASM (attn_row_sums)
 *   O (+)= P V                            a matmul primitive (+= on later key blocks)
 *   O /= l                                WASM (flash_block_finish)
 *
 * Per block of 512 query rows and 512 keys; nothing is carried between key blocks but O
 * and l, since the shift does not change. The bound can sit far above a row's largest
 * score (large norms, nearly orthogonal vectors): exp then underflows. From l we know
 * how far: the gap g = b_i - max_j s_ij satisfies e^-g >= l / n for n visible keys, and
 * while g <= 70 - ln n every term within 2^-24 of the largest stays a normal float (so the
 * row is as exact as with the true maximum). The products P V are scaled down by e^-g too:
 * with small values (|V| ~ 1e-20 and g ~ 60) they leave the normal floats and flush to 0,
 * each losing under 2^-126, so a row's largest |O| before the division by l must also be
 * at least n 2^-101 (the loss then under 2^-24 of it). A block with a row past either (or
 * with a non-finite l, from inf or NaN inputs) is handed back to the caller, which runs it
 * on the exact online-softmax tiles (kernels/flash-blas.ts), as is one whose O is not
 * finite: norms that underflow (|q| ~ 1e-23) put the bound below the largest score, and
 * P stays finite while P V overflows.
 *
 * The shift rides in an extra column because oneDNN takes a per-row bias or binary post-op
 * only in its reference code, and the transposed product (a per-column bias) made P V
 * slower. Timings: BENCHMARKS.md, sdpa.
 */
import { empty, type Tensor } from "@backplane/core";
import type { SdpaParams } from "@backplane/core/backend";
import { addressOf, cpuMemory } from "@backplane/core/cpu";
import { leadingDim, type QueryBlock } from "../kernels/flash-blas.ts";
import { attentionModule, layoutOf } from "../kernels/wasm-attention.ts";
import { SUM_POST_OP } from "./call.ts";
import { ENUMS } from "./library.ts";
import { matmulStep, runStep, type Step } from "./matmul-step.ts";

const EXP = { alg: ENUMS.dnnl_alg_kind_t.dnnl_eltwise_exp, alpha: 0, beta: 0 };

/**
 * Query rows and keys per block: a 2 MiB block of P. Chosen from interleaved timings of
 * several shapes on a Zen 4 (N = 2048): from 256 x 1024 to 1024 x 1024 all ran within 3%
 * on one thread; on two, 1024 x 512 took 47.4-48.2 ms where 512 x 512 took 48.1-48.8 (half
 * the calls, each thread's share of a product as large as a whole one-thread block). Nothing is rescaled
 * between key blocks, so short ones cost only their calls.
 */
export const BOUNDED_ROWS = 1024;
/**
 * Under causal masking, 512: a query block computes every key block up to its last row and
 * zeroes the hidden part, so 1024-row blocks would compute 20% more scores than 512
 * at N = 2048 (3.1M against 2.6M a head, 2.1M visible).
 */
const CAUSAL_ROWS = 512;
const rowsPerBlock = (p: SdpaParams): number => (p.isCausal ? CAUSAL_ROWS : BOUNDED_ROWS);
const BK = 512;
/** The gap the check allows, 70 - ln n, as a bound on l: l >= n^2 e^-70 (see the header). */
const MIN_SUM_PER_KEY_SQUARED = Math.exp(-70);
/**
 * The smallest largest |O| of a row before the division by l, n keys: the products P V
 * that flush to 0 lose at most 2 n 2^-126 of it, 2^-24 of this (see the header).
 */
const MIN_OUTPUT_PER_KEY = 2 ** -101;

/**
 * Whether a row of n keys is as exact as on the exact tiles: its sum l and its largest |O|
 * before the division, both finite (a bound below the largest score, from norms that
 * underflowed, can leave P finite and P V infinite) and large enough (see the header).
 */
const rowHolds = (l: number, outMax: number, n: number): boolean =>
  Number.isFinite(l) &&
  l >= n * n * MIN_SUM_PER_KEY_SQUARED &&
  Number.isFinite(outMax) &&
  outMax >= n * MIN_OUTPUT_PER_KEY;

/** P = exp(Q' K'ᵀ) for rows x cols scores of extended rows of e1 floats. */
const scoresStep = (rows: number, cols: number, e1: number, threads?: number) =>
  matmulStep({ m: rows, k: e1, n: cols, lda: e1, ws: [1, e1], ldc: cols, postOps: [EXP] }, threads);

/** O (+)= P V for rows x cols probabilities and value rows of stride ldv. */
const valuesStep = (
  rows: number,
  cols: number,
  ev: number,
  ldv: number,
  accumulate: boolean,
  threads?: number,
) =>
  matmulStep(
    {
      m: rows,
      k: cols,
      n: ev,
      lda: cols,
      ws: [ldv, 1],
      ldc: ev,
      postOps: accumulate ? [SUM_POST_OP] : [],
    },
    threads,
  );

/**
 * Why the bounded path cannot run blocks of these sizes and this value row stride on
 * `threads` (the exact tiles run), or undefined.
 */
export function boundedProblem(p: SdpaParams, ldv: number, threads: number): string | undefined {
  const rows = Math.min(rowsPerBlock(p), p.L);
  const cols = Math.min(BK, p.S);
  for (const step of [
    scoresStep(rows, cols, p.E + 1, threads),
    valuesStep(rows, cols, p.Ev, ldv, false, threads),
  ])
    if (typeof step === "string") return step;
  return undefined;
}

/** Byte addresses of the workspace's parts. */
interface Workspace {
  kext: number;
  knorm: number;
  qext: number;
  qnorm: number;
  p: number;
  l: number;
  sums: number;
}

/**
 * The workspace: the keys of one head extended (S x (E + 1)) and their norms, one query
 * block extended and its norms, P and the row sums.
 */
function workspace(p: SdpaParams): { tensor: Tensor; at: Workspace } {
  const e1 = p.E + 1;
  const parts = {
    kext: p.S * e1,
    knorm: p.S,
    qext: BOUNDED_ROWS * e1,
    qnorm: BOUNDED_ROWS,
    p: BOUNDED_ROWS * BK,
    l: BOUNDED_ROWS * 2,
    sums: BOUNDED_ROWS,
  };
  // Each part 64-byte aligned (16 floats).
  const floats = Object.values(parts).reduce((a, n) => a + Math.ceil(n / 16) * 16, 16);
  const tensor = empty([floats], { dtype: "float32" });
  let next = Math.ceil(addressOf(tensor) / 64) * 64;
  const at = {} as Workspace;
  for (const [name, n] of Object.entries(parts)) {
    at[name as keyof Workspace] = next;
    next += Math.ceil(n / 16) * 64;
  }
  return { tensor, at };
}

/**
 * Runs every query block of `out` on the bounded path; returns the blocks it could not
 * hold (the caller runs them on the exact tiles, which overwrite them whole).
 */
// Long: one loop over heads and blocks whose steps share the extended rows, P, the sums and O.
export function boundedTiles(p: SdpaParams, out: Tensor): QueryBlock[] {
  const mod = attentionModule.current!;
  const { L, S, E: e, Ev } = p;
  const e1 = e + 1;
  const bh = out.numel / (L * Ev);
  const lay = layoutOf(p);
  const blockRows = rowsPerBlock(p);
  const failed: QueryBlock[] = [];
  const { tensor, at } = workspace(p);
  try {
    const buf = cpuMemory().memory.buffer;
    const f32 = new Float32Array(buf);
    const knorm = new Float32Array(buf, at.knorm, S);
    const qext = at.qext / 4;
    const qnorm = new Float32Array(buf, at.qnorm, BOUNDED_ROWS);
    const l = new Float64Array(buf, at.l, BOUNDED_ROWS);
    const sums = new Float32Array(buf, at.sums, BOUNDED_ROWS);
    const ldq = leadingDim(p.query);
    const ldk = leadingDim(p.key);
    const ldv = leadingDim(p.value);
    const absScale = Math.abs(p.scale);
    // The steps of each block size met (a few per call: full, ragged last rows or keys).
    const stepsOf = new Map<string, [Step | string, Step | string]>();
    const blockSteps = (rows: number, cols: number, accumulate: boolean) => {
      const key = `${rows},${cols},${accumulate}`;
      let steps = stepsOf.get(key);
      if (!steps) {
        steps = [scoresStep(rows, cols, e1), valuesStep(rows, cols, Ev, ldv, accumulate)];
        stepsOf.set(key, steps);
      }
      return steps;
    };
    let keysOf = -1;
    for (let b = 0; b < bh; b++) {
      // Query heads of one GQA group read the same keys: extend them once.
      if (lay.k[b] !== keysOf) {
        keysOf = lay.k[b];
        mod.attn_augment_rows(addressOf(p.key) + keysOf * 4, ldk, S, e, 1, 1, at.kext, at.knorm);
        // The largest key norm row i sees: a running max under causal masking.
        for (let j = 1; j < S; j++) knorm[j] = Math.max(knorm[j], knorm[j - 1]);
        if (!p.isCausal) knorm.fill(knorm[S - 1]);
      }
      const q = addressOf(p.query) + lay.q[b] * 4;
      const v = addressOf(p.value) + lay.v[b] * 4;
      for (let i0 = 0; i0 < L; i0 += blockRows) {
        const rows = Math.min(blockRows, L - i0);
        const o = addressOf(out) + (b * L + i0) * Ev * 4;
        mod.attn_augment_rows(q + i0 * ldq * 4, ldq, rows, e, p.scale, 0, at.qext, at.qnorm);
        for (let r = 0; r < rows; r++)
          f32[qext + r * e1 + e] = -absScale * qnorm[r] * knorm[Math.min(i0 + r, S - 1)];
        let held = true;
        const jEnd = p.isCausal ? Math.min(S, i0 + rows) : S;
        for (let j0 = 0; j0 < jEnd && held; j0 += BK) {
          const cols = Math.min(BK, jEnd - j0);
          const [scores, values] = blockSteps(rows, cols, j0 > 0);
          // boundedProblem() saw the full blocks made; a ragged block's steps may still be
          // refused: the exact tiles take the query block then.
          if (typeof scores === "string" || typeof values === "string") {
            held = false;
            break;
          }
          runStep(scores, at.qext, at.kext + j0 * e1 * 4, at.p);
          // Under causal masking, zero what row r may not see (c > i0 + r - j0: the bound
          // covers the visible keys only, so those may be inf).
          if (p.isCausal) mod.flash_zero_hidden(at.p, cols, rows, cols, i0 - j0);
          // The row sums in WASM: 17-27 µs a 512 x 512 block on one thread, like oneDNN's
          // GEMV by a column of ones (whose JIT GEMM a signal can break: call.ts), where a
          // matmul primitive with one column took 74.
          mod.attn_row_sums(at.p, cols, rows, cols, at.sums, j0 > 0 ? 1 : 0);
          runStep(values, at.p, v + j0 * ldv * 4, o);
        }
        for (let r = 0; r < rows; r++) l[r] = sums[r];
        // O /= l in one pass that also writes each row's largest |O| before it into the
        // sums' buffer (their values are in l now); a block that fails the check is run
        // again from the start on the exact tiles, so dividing first costs nothing.
        if (held) mod.flash_block_finish(o, Ev, rows, Ev, at.l, at.sums);
        for (let r = 0; r < rows && held; r++) {
          const n = p.isCausal ? Math.min(S, i0 + r + 1) : S;
          held = rowHolds(l[r], sums[r], n);
        }
        if (!held) failed.push({ b, i0, rows });
      }
    }
    return failed;
  } finally {
    tensor.dispose();
  }
}
