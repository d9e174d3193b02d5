/**
 * @backplane/backend-cuda: torch.backends.cuda for Backplane. Importing it probes the machine
 * (libcuda over FFI: driver, devices; no context yet) and registers:
 * - the "cuda" backend (backends.cuda): a "cuda" device memory on a caching allocator,
 *   matmul on cuBLAS / cuBLASLt (TF32 per allowTf32 / float32MatmulPrecision),
 *   scaledDotProductAttention (FLASH_ATTENTION, EFFICIENT_ATTENTION, MATH kernels from the
 *   package's PTX), fft/ifft/rfft/irfft on cuFFT with torch's cufftPlanCache, and the linalg
 *   ops on cuSOLVER;
 * - the "cusparselt" backend (backends.cusparselt: version(), isAvailable());
 * - core's "cuda" DeviceContext, which backend-cudnn runs on without importing this package.
 * Without a GPU every answer is a reason: backends.cuda.status().reason says why.
 * The math libraries load asynchronously: `await backends.ready()` before timing anything.
 */
import { initBackends, provideDeviceContext, registerBackend } from "@backplane/core/backend";
import { CUDA_BACKEND, cudaBackend, cusparseltBackend } from "./backend.ts";
import { cudaContext } from "./context.ts";

registerBackend(cudaBackend);
registerBackend(cusparseltBackend);
// Libraries on CUDA devices (backend-cudnn) reach devices, streams and memory through it.
provideDeviceContext(cudaContext);
void initBackends(CUDA_BACKEND).catch(() => {});

export {
  CUDA_BACKEND,
  CUSPARSELT_BACKEND,
  cudaApi,
  cudaMemory,
  cufftPlanCache,
  linalgLibraryStatus,
} from "./backend.ts";
export type { DeviceInfo } from "./driver.ts";
export {
  CublasWorkspaceConfigError,
  CudaError,
  CudaOutOfMemoryError,
  statusName,
} from "./errors.ts";
export { ptxManifest, ptxStatus } from "./ptx.ts";
export { type CudaStatus, cudaStatus, reprobe } from "./state.ts";
export { VERSION } from "./version.ts";
