/**
 * flash-cpu-dnnl: attention on oneDNN. Every query block first runs the bounded-shift
 * path (flash-bounded.ts: the softmax shifted by a Cauchy-Schwarz bound known before the
 * scores, the exp fused into oneDNN's matmul); a block whose bound underflows runs again
 * on the exact FlashAttention-2 tiles of kernels/flash-blas.ts with their products on
 * oneDNN's dnnl_sgemm and the online softmax on oneDNN's primitives (flash-softmax.ts).
 * The bounded path skips the row-maximum pass, which makes it the faster of the two
 * (BENCHMARKS.md, sdpa). The calibration ranks this kernel and flash-cpu-blas by what they
 * measure on the machine at hand.
 */
import type { AnyKernelDefinition, SdpaParams } from "@backplane/core/backend";
import {
  flashTileRun,
  flashTileSupports,
  queryBlocks,
  type TileGemm,
} from "../kernels/flash-blas.ts";
import { check } from "./call.ts";
import { BOUNDED_ROWS, boundedProblem, boundedTiles } from "./flash-bounded.ts";
import { dnnlSoftmaxStep } from "./flash-softmax.ts";
import { autoBlasOnly } from "./matmul.ts";
import { dnnlState } from "./state.ts";

const N = 78; // 'N'
const T = 84; // 'T'

const dnnlGemm: TileGemm = {
  kernel: "flash-cpu-dnnl",
  missing: () => (dnnlState.lib ? undefined : "oneDNN is not loaded"),
  sgemm(transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
    const d = dnnlState.ready().dnnl;
    check(
      `dnnl_sgemm(${m}x${n}x${k})`,
      d.dnnl_sgemm(N, transB ? T : N, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc),
    );
  },
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
    run: (p: SdpaParams) => flashTileRun(dnnlGemm, p),
  } as AnyKernelDefinition;
}
