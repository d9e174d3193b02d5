/**
 * @backplane/backend-cuda: torch.backends.cuda for Backplane. Importing it probes the machine
 * (libcuda over FFI: driver, devices; no context yet) and registers:
 * - the "cuda" backend (backends.cuda): a "cuda" device memory on a caching allocator,
 *   matmul on cuBLAS / cuBLASLt (TF32 per allowTf32 / float32MatmulPrecision),
 *   scaledDotProductAttention (FLASH_ATTENTION, EFFICIENT_ATTENTION, MATH kernels from the
 *   package's PTX), fft/ifft/rfft/irfft on cuFFT with torch's cufftPlanCache, and the linalg
 *   ops on cuSOLVER;
 * - the "cusparselt" backend (backends.cusparselt: version(), isAvailable()).
 * Without a GPU every answer is a reason: backends.cuda.status().reason says why.
 * The math libraries load asynchronously: `await backends.ready()` before timing anything.
 */
import { ready } from "@backplane/core";
import { registerBackend } from "@backplane/core/backend";
import { CUDA_BACKEND, cudaBackend, cusparseltBackend } from "./backend.ts";

registerBackend(cudaBackend);
registerBackend(cusparseltBackend);
void ready(CUDA_BACKEND).catch(() => {});

export type { AllocatorStats, Block, RawDeviceMemory } from "./allocator.ts";
export { CachingAllocator, roundSize, segmentSize } from "./allocator.ts";
export {
  CUDA_BACKEND,
  CUSPARSELT_BACKEND,
  cudaApi,
  cudaMemory,
  cufftPlanCache,
  linalgLibraryStatus,
} from "./backend.ts";
export {
  CudaDriver,
  type DeviceInfo,
  type KernelArg,
  packKernelParams,
} from "./driver.ts";
export {
  CublasWorkspaceConfigError,
  CudaError,
  CudaOutOfMemoryError,
  statusName,
} from "./errors.ts";
export {
  type DeviceFacts,
  efficientSupport,
  flashSupport,
  mathSupport,
} from "./kernels/attention/constraints.ts";
export { columnMajorView, planGemm, uniformStride } from "./kernels/blas/gemm.ts";
export {
  checkCublasDeterminism,
  cublasWorkspaceBytes,
  type GemmFlags,
  type GemmMode,
  gemmMode,
} from "./kernels/blas/modes.ts";
export { PlanCache, planCacheRegistry } from "./kernels/fft/plan-cache.ts";
export type { CudaLayer, MathLibraries } from "./layer.ts";
export { CU, CUDART_DECL, DRIVER_DECL } from "./native/driver-api.ts";
export {
  CUBLAS_DECL,
  CUBLASLT_DECL,
  CUFFT_DECL,
  CUSOLVER_DECL,
  LIBRARY_API,
  LIBRARY_ENUMS,
} from "./native/library-api.ts";
export { librarySpec } from "./native/load.ts";
export { ptxManifest, ptxStatus } from "./ptx.ts";
export {
  type FakeDevice,
  launchArg,
  type RecordedCall,
  type RecordedLaunch,
  RecordingLayer,
  type RecordingOptions,
} from "./recording.ts";
export { CudaRuntime } from "./runtime.ts";
export { type CudaStatus, cudaStatus, installLayer, reprobe } from "./state.ts";
export { VERSION } from "./version.ts";
