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
import type { Tensor } from "@backplane/core";
import type { AnyKernelDefinition, SdpaParams } from "@backplane/core/backend";
import {
  flashTileRun,
  flashTileSupports,
  leadingDim,
  queryBlocks,
  TILE_COLS,
  TILE_ROWS,
  type TileGemm,
  tileAlpha,
} from "../kernels/flash-blas.ts";
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

const asGiven = (p: SdpaParams): RowStrides => ({
  q: leadingDim(p.query),
  k: leadingDim(p.key),
  v: leadingDim(p.value),
});

/** The strides of contiguous copies. */
const asCopied = (p: SdpaParams): RowStrides => ({ q: p.E, k: p.E, v: p.Ev });

/**
 * Why oneDNN will not make the tile products for these sizes and row strides (a full
 * block and the last, shorter one), or undefined.
 */
function tileProblem(p: SdpaParams, ld: RowStrides): string | undefined {
  const alpha = tileAlpha(p);
  for (const rows of new Set([Math.min(TILE_ROWS, p.L), p.L % TILE_ROWS || TILE_ROWS]))
    for (const cols of new Set([Math.min(TILE_COLS, p.S), p.S % TILE_COLS || TILE_COLS])) {
      const scores = sgemmStep(true, rows, cols, p.E, alpha, ld.q, ld.k, 0, cols);
      if (typeof scores === "string") return scores;
      const values = sgemmStep(false, rows, p.Ev, cols, 1, cols, ld.v, 1, p.Ev);
      if (typeof values === "string") return values;
    }
  return undefined;
}

/**
 * How the operands run: as they are, or as contiguous copies (oneDNN plans strided rows
 * on its JIT GEMM, refused in call.ts: [B, L, H, d] permuted to [B, H, L, d] takes the
 * copies), or why neither can. Kept per sizes, strides and thread count: supports() and
 * run() ask at every call, and eight step lookups a call showed in small attentions (B1 H2
 * L256 at 0.36 ms) while V8 had not yet optimized them.
 */
function operandPlan(p: SdpaParams): "as given" | "copied" | string {
  const given = asGiven(p);
  const key = `${p.L},${p.S},${p.E},${p.Ev},${given.q},${given.k},${given.v},${p.scale},${dnnlState.threads}`;
  let plan = operandPlans.get(key);
  if (plan === undefined) {
    const copiedFaster = () =>
      boundedProblem(p, given.v) !== undefined && boundedProblem(p, p.Ev) === undefined;
    if (tileProblem(p, given) === undefined) plan = copiedFaster() ? "copied" : "as given";
    else plan = tileProblem(p, asCopied(p)) ?? "copied";
    if (operandPlans.size >= 64) operandPlans.delete(operandPlans.keys().next().value as string);
    operandPlans.set(key, plan);
  }
  return plan;
}
const operandPlans = new Map<string, string>();

/** Forgets the operand plans (with the steps they were checked against). */
export function resetOperandPlans(): void {
  operandPlans.clear();
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
    const plan = operandPlan(p);
    return plan === "as given" || plan === "copied" ? undefined : plan;
  },
  sgemm: stepSgemm,
  softmax: dnnlSoftmaxStep,
  // Every query block on the bounded-shift path first (or all on the exact tiles where
  // oneDNN refuses its steps for these sizes).
  firstPass: (p, out) =>
    boundedProblem(p) ? [...queryBlocks(p, out, BOUNDED_ROWS)] : boundedTiles(p, out),
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
      operandPlan(p) === "copied" ? runOnCopies(p) : flashTileRun(dnnlGemm, p),
  } as AnyKernelDefinition;
}
