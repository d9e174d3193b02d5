/**
 * FFI declarations of the CUDA driver API (libcuda.so.1 / nvcuda.dll) and of the few CUDA
 * runtime calls used to explain why CUDA is unavailable (libcudart). The installed headers
 * cover all of them: test/headers.test.ts checks every declaration here against
 * /usr/local/cuda/include/cuda.h and cuda_runtime_api.h (names, argument count and size
 * classes, return type), and every constant against its enumerator.
 *
 * Conventions (the same for every library this package binds):
 * - Symbols are the exported names the header maps to: cuda.h `#define cuMemAlloc cuMemAlloc_v2`
 *   means a program compiled against cuda.h calls cuMemAlloc_v2, so that is what is bound.
 * - Opaque handles (CUcontext, CUstream, CUmodule, CUfunction, CUevent: `struct X *`) are
 *   carried as addresses: declared "usize" (pointer width, passed in the same registers as a
 *   pointer on every 64-bit ABI), read from out-parameters through a BigUint64Array.
 * - CUdeviceptr is `unsigned long long` in cuda.h: "u64".
 * - Host pointers (out-parameters, host buffers, kernel parameter arrays) are "buffer".
 */
import {
  defineLibrary,
  ffiCall,
  ffiOptionalStatus,
  ffiStatus,
  type NativeLibrary,
} from "@backplane/core/cpu";

// Every driver call returns CUresult (a status); a few are missing from older drivers.
const f = ffiStatus;
const opt = ffiOptionalStatus;
const r = ffiCall;

const H = "usize" as const; // an opaque handle (struct pointer) carried as an address
const DPTR = "u64" as const; // CUdeviceptr
const OUT = "buffer" as const; // a host pointer: out-parameter or host data

/** libcuda symbols. Every one returns CUresult ("i32"). */
export const DRIVER_DECL = defineLibrary({
  cuInit: f(["u32"]),
  cuDriverGetVersion: f([OUT]),
  cuGetErrorName: f(["i32", OUT]),
  cuGetErrorString: f(["i32", OUT]),
  // Devices
  cuDeviceGetCount: f([OUT]),
  cuDeviceGet: f([OUT, "i32"]),
  cuDeviceGetName: f([OUT, "i32", "i32"]),
  cuDeviceGetAttribute: f([OUT, "i32", "i32"]),
  cuDeviceTotalMem_v2: f([OUT, "i32"]),
  // Contexts: the primary context of each device (what the runtime API and PyTorch use),
  // plus created contexts for callers that want their own.
  cuDevicePrimaryCtxRetain: f([OUT, "i32"]),
  cuDevicePrimaryCtxRelease_v2: f(["i32"]),
  cuCtxCreate_v4: opt([OUT, OUT, "u32", "i32"]), // CUDA >= 12.5 drivers
  cuCtxDestroy_v2: f([H]),
  cuCtxSetCurrent: f([H]),
  cuCtxGetCurrent: f([OUT]),
  cuCtxPushCurrent_v2: f([H]),
  cuCtxPopCurrent_v2: f([OUT]),
  cuCtxSynchronize: f([]),
  // Streams and events
  cuStreamCreate: f([OUT, "u32"]),
  cuStreamDestroy_v2: f([H]),
  cuStreamSynchronize: f([H]),
  cuStreamQuery: f([H]),
  cuEventCreate: f([OUT, "u32"]),
  cuEventRecord: f([H, H]),
  cuEventQuery: f([H]),
  cuEventSynchronize: f([H]),
  cuEventDestroy_v2: f([H]),
  cuEventElapsedTime_v2: opt([OUT, H, H]), // CUDA >= 12.8 drivers
  // Memory
  cuMemAlloc_v2: f([OUT, "usize"]),
  cuMemFree_v2: f([DPTR]),
  cuMemGetInfo_v2: f([OUT, OUT]),
  cuMemcpyHtoDAsync_v2: f([DPTR, OUT, "usize", H]),
  cuMemcpyDtoHAsync_v2: f([OUT, DPTR, "usize", H]),
  cuMemcpyDtoDAsync_v2: f([DPTR, DPTR, "usize", H]),
  cuMemcpyPeerAsync: f([DPTR, H, DPTR, H, "usize", H]),
  cuMemsetD8Async: f([DPTR, "u8", "usize", H]),
  // Modules and launches
  cuModuleLoadData: f([OUT, OUT]),
  cuModuleUnload: f([H]),
  cuModuleGetFunction: f([OUT, H, "cstring"]),
  cuFuncSetAttribute: f([H, "i32", "i32"]),
  cuFuncGetAttribute: f([OUT, "i32", H]),
  cuLaunchKernel: f([H, "u32", "u32", "u32", "u32", "u32", "u32", "u32", H, OUT, OUT]),
});

/** libcudart symbols: only what explains an unusable setup (no driver, old driver). */
export const CUDART_DECL = defineLibrary({
  cudaRuntimeGetVersion: f([OUT]),
  cudaDriverGetVersion: f([OUT]),
  cudaGetDeviceCount: f([OUT]),
  cudaGetErrorName: r(["i32"], "cstring"),
  cudaGetErrorString: r(["i32"], "cstring"),
});

export type DriverSymbols = NativeLibrary<typeof DRIVER_DECL>["symbols"];
export type CudartSymbols = NativeLibrary<typeof CUDART_DECL>["symbols"];

/**
 * The cuda.h enumerators this package passes or compares, each under its header name
 * (test/headers.test.ts checks every value).
 */
export const CU = {
  CUDA_SUCCESS: 0,
  CUDA_ERROR_OUT_OF_MEMORY: 2,
  CUDA_ERROR_NOT_READY: 600,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE: 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 16,
  CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: 33,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: 38,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 97,
  CU_STREAM_NON_BLOCKING: 1,
  CU_EVENT_DEFAULT: 0,
  CU_EVENT_DISABLE_TIMING: 2,
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 0,
  CU_FUNC_ATTRIBUTE_NUM_REGS: 4,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: 8,
} as const;

/** cudaError_t values compared by name (driver_types.h). */
export const CUDART = {
  cudaSuccess: 0,
  cudaErrorInsufficientDriver: 35,
  cudaErrorNoDevice: 100,
} as const;
