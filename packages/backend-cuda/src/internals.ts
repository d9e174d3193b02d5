/**
 * The package's internals that its tests and the smoke run drive directly (the driver,
 * the recording layer, the caching allocator, the library declarations, the planners).
 * Not a published entry: users import the package's index.
 */
import "./index.ts";

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
export { cudaContext } from "./context.ts";
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
export {
  columnMajorView,
  cublasSizeProblem,
  planGemm,
  readyProblem,
  uniformStride,
} from "./kernels/blas/gemm.ts";
export {
  checkCublasDeterminism,
  cublasWorkspaceBytes,
  type GemmFlags,
  type GemmMode,
  gemmMode,
} from "./kernels/blas/modes.ts";
export { PlanCache, planCacheRegistry } from "./kernels/fft/plan-cache.ts";
export { solverSizeProblem } from "./kernels/linalg/solver.ts";
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
export { type CudaStatus, cudaStatus, installLayer, maybeRuntime, reprobe } from "./state.ts";
export { VERSION } from "./version.ts";
