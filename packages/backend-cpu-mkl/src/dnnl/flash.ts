/**
 * flash-cpu-dnnl: attention on oneDNN. Every query block first runs the bounded-shift
 * path (flash-bounded.ts: the softmax shifted by a Cauchy-Schwarz bound known before the
 * scores, the exp fused into oneDNN's matmul); a block whose bound underflows runs again
 * on the exact FlashAttention-2 tiles of kernels/flash-blas.ts with their products on
 * oneDNN's matmul primitive (matmul-step.ts) and the online softmax on oneDNN's primitives
 * (flash-softmax.ts).
 * The bounded path skips the row-maximum pass, which makes it the faster of the two
 * (BENCHMARKS.md, sdpa). The calibration ranks this kernel and flash-cpu-blas by what they
 * measure on the machine at hand.
 */
import { getFlag, type Tensor } from "@backplane/core";
import type { AnyKernelDefinition, SdpaParams } from "@backplane/core/backend";
import {
  flashTileRun,
  flashTileSupports,
  leadingDim,
  queryBlocks,
  scoreProduct,
  type TileGemm,
  tileShapes,
} from "../kernels/flash-blas.ts";
import { needsProducts } from "../kernels/wasm-attention.ts";
import { PlanCache } from "./call.ts";
import { BOUNDED_ROWS, boundedProblem, boundedTiles } from "./flash-bounded.ts";
import { dnnlSoftmaxStep } from "./flash-softmax.ts";
import { autoBlasOnly } from "./matmul.ts";
import { sgemmStep, stepSgemm } from "./matmul-step.ts";
import { dnnlState } from "./state.ts";

/** The row strides of query, key and value that the products are planned for. */
interface RowStrides {
  q: number;
  k: number;
  v: number;
}

/**
 * How the operands run: as they are or as contiguous copies (oneDNN plans strided rows on
 * its JIT GEMM, refused in call.ts: [B, L, H, d] permuted to [B, H, L, d] takes the
 * copies), and whether the bounded-shift path plans for them.
 */
interface Operands {
  copies: boolean;
  bounded: boolean;
}

const operandPlans = new PlanCache<Operands>("flash-cpu-dnnl cannot plan its products");

/** Forgets the operand plans (with the steps they were checked against). */
export function resetOperandPlans(): void {
  operandPlans.clear();
}

/** The OpenMP threads flashTileRun applies: one in deterministic mode. */
const runThreads = (): number =>
  getFlag("core.deterministic") === true ? 1 : dnnlState.threadsWanted();

/**
 * Why oneDNN will not make some tile product of these inputs (every size the tile loop
 * makes, these row strides) on `threads`, or undefined.
 */
function tileProblem(p: SdpaParams, ld: RowStrides, threads: number): string | undefined {
  const { alpha, lda } = scoreProduct(p, ld.q);
  for (const [rows, cols] of tileShapes(p)) {
    const scores = sgemmStep(true, rows, cols, p.E, alpha, lda, ld.k, 0, cols, threads);
    if (typeof scores === "string") return scores;
    const values = sgemmStep(false, rows, p.Ev, cols, 1, cols, ld.v, 1, p.Ev, threads);
    if (typeof values === "string") return values;
  }
  return undefined;
}

/** The plan for these operands (throws why neither they nor copies of them can run). */
function planOperands(p: SdpaParams, threads: number): Operands {
  const given = { q: leadingDim(p.query), k: leadingDim(p.key), v: leadingDim(p.value) };
  const bounded = (ldv: number) => boundedProblem(p, ldv, threads) === undefined;
  if (tileProblem(p, given, threads) === undefined) {
    // Copies where only they take the (faster) bounded path.
    const copies = !bounded(given.v) && bounded(p.Ev);
    return { copies, bounded: bounded(copies ? p.Ev : given.v) };
  }
  const problem = tileProblem(p, { q: p.E, k: p.E, v: p.Ev }, threads);
  if (problem) throw new Error(problem);
  return { copies: true, bounded: bounded(p.Ev) };
}

/**
 * The operands' plan, kept per sizes, strides and threads: supports() and run() ask at
 * every call (the params object remembered between them).
 */
function operandPlan(p: SdpaParams): Operands | string {
  const threads = runThreads();
  return operandPlans.forParams(
    p,
    () =>
      `${p.L},${p.S},${p.E},${p.Ev},${leadingDim(p.query)},${leadingDim(p.key)},${leadingDim(p.value)},${p.scale},${p.isCausal}`,
    () => planOperands(p, threads),
    threads,
  );
}

/** The attention on contiguous copies of query, key and value (freed after). */
function runOnCopies(p: SdpaParams): Tensor {
  const query = p.query.contiguous();
  const key = p.key.contiguous();
  const value = p.value.contiguous();
  try {
    return flashTileRun(dnnlGemm, { ...p, query, key, value });
  } finally {
    for (const [copy, of] of [
      [query, p.query],
      [key, p.key],
      [value, p.value],
    ])
      if (copy !== of) copy.dispose();
  }
}

const dnnlGemm: TileGemm = {
  kernel: "flash-cpu-dnnl",
  missing: () => (dnnlState.lib ? undefined : "oneDNN is not loaded"),
  refuses(p) {
    // An empty output, or no keys: flashOutput completes it without products to plan.
    if (!needsProducts(p)) return undefined;
    const plan = operandPlan(p);
    return typeof plan === "string" ? plan : undefined;
  },
  sgemm: stepSgemm,
  softmax: dnnlSoftmaxStep,
  // Every query block on the bounded-shift path first (or all on the exact tiles where
  // oneDNN refuses its steps for these sizes).
  firstPass: (p, out) =>
    (operandPlan(p) as Operands).bounded
      ? boundedTiles(p, out)
      : [...queryBlocks(p, out, BOUNDED_ROWS)],
  onThreads(oneThread, call) {
    dnnlState.applyThreads(oneThread ? 1 : undefined);
    try {
      return call();
    } finally {
      dnnlState.applyThreads();
    }
  },
};

export function dnnlFlashKernel(): AnyKernelDefinition {
  return {
    op: "scaledDotProductAttention",
    name: "flash-cpu-dnnl",
    family: "FLASH_ATTENTION",
    device: "cpu",
    dtypes: ["float32"],
    // Fixed blocks; in deterministic mode the products run on one thread (flash-blas.ts).
    deterministic: true,
    flags: ["cuda.flashSdp", "mkldnn.enabled"],
    verboseFlags: ["mkldnn.verbose"],
    // Above flash-cpu-blas: faster on one and two threads on the Intel Xeon it was measured
    // on (see the header); the calibration reorders by what it measures elsewhere.
    priority: 61,
    enabled: autoBlasOnly,
    supports: (p: SdpaParams) => flashTileSupports(dnnlGemm, p),
    run: (p: SdpaParams) =>
      (operandPlan(p) as Operands).copies ? runOnCopies(p) : flashTileRun(dnnlGemm, p),
  } as AnyKernelDefinition;
}
