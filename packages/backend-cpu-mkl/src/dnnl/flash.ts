/**
 * flash-cpu-dnnl: the FlashAttention-2 tiles of kernels/flash-blas.ts with their two
 * products on oneDNN's dnnl_sgemm. On the thin products of attention (256 x 512 x 64 and
 * 256 x 64 x 512) it measured 55.8 ms against OpenBLAS's 65.3 ms for all the products of
 * N = 2048, 8 heads, on one thread of an Intel Xeon (model 207), and it splits them over
 * two threads better (the whole call on 2 cores: 53-60 ms against 65-72); the
 * calibration ranks the two kernels by what they measure on the machine at hand. Its
 * softmax step runs on oneDNN's primitives too (flash-softmax.ts): N = 2048 then took
 * 84 ms on one thread and 45 on two.
 */
import { getFlag, type Tensor } from "@backplane/core";
import type { AnyKernelDefinition, SdpaParams } from "@backplane/core/backend";
import {
  flashTileSupports,
  flashTiles,
  queryBlocks,
  type TileGemm,
} from "../kernels/flash-blas.ts";
import { flashOutput } from "../kernels/wasm-attention.ts";
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
  onThreads(oneThread, call) {
    dnnlState.applyThreads(oneThread ? 1 : undefined);
    try {
      return call();
    } finally {
      dnnlState.applyThreads();
    }
  },
};

/**
 * The bounded-shift path (flash-bounded.ts) over every query block, then the exact tiles
 * over the blocks it could not hold; all on one library thread in deterministic mode.
 */
function dnnlFlashRun(p: SdpaParams): Tensor {
  return dnnlGemm.onThreads(getFlag("core.deterministic") === true, () => {
    const { out, done } = flashOutput(p);
    if (done) return out;
    try {
      if (boundedProblem(p)) flashTiles(dnnlGemm, p, out, queryBlocks(p, out, BOUNDED_ROWS));
      else {
        const exact = boundedTiles(p, out);
        if (exact.length > 0) flashTiles(dnnlGemm, p, out, exact);
      }
      return out;
    } catch (e) {
      out.dispose();
      throw e;
    }
  });
}

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
    run: dnnlFlashRun,
  } as AnyKernelDefinition;
}
