/**
 * @backplane/backend-nnpack: torch.backends.nnpack for Backplane. Importing it registers
 * conv2d kernels for device cpu after Maratyszcza/NNPACK, in WASM SIMD: Winograd
 * F(6x6,3x3) "wt8x8", FFT "ft8x8" / "ft16x16", "implicit-gemm" (im2col + the core's
 * matmul), "direct" (1x1 and depthwise) and "auto", which picks one by NNPACK's rules.
 * The GEMM stages call the core's matmul, so native BLAS (backend-cpu-mkl) serves them
 * where it is loaded. Work is split with the core's parallelFor (backend-openmp's threads).
 */
import { initBackends, registerBackend } from "@backplane/core/backend";
import { NNPACK_BACKEND, nnpackBackend } from "./backend.ts";

registerBackend(nnpackBackend);
void initBackends(NNPACK_BACKEND).catch(() => {});

export { algorithmFor, NNPACK_BACKEND, nnpackBackend, VERSION } from "./backend.ts";
export {
  clearTransformCache,
  setTransformCacheEnabled,
  setTransformCacheLimit,
  type TransformCacheInfo,
  transformCacheInfo,
} from "./cache.ts";
export { type Algorithm, chooseAlgorithm } from "./kernels/conv2d.ts";
