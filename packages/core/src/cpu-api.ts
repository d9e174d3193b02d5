/**
 * @backplane/core/cpu, the CPU toolkit: what CPU kernels (and backends that reach native
 * libraries) share so that no backend copies it. The CPU device's one WebAssembly memory
 * and its static region, the one WASM module loader and the registered modules,
 * parallel-for (provided by backend-openmp, single-threaded without it), scratch buffers
 * and the SIMD check, FFI over bun:ffi, Deno.dlopen and koffi, the host's environment and
 * cache directory, and host-side helpers for float64 matrices, element access and
 * quantization arithmetic. The contract itself is `@backplane/core/backend`.
 */

// The same set-up as the user entry, whichever entry a program imports first.
import "./api.ts";

// Host-side kernel helpers: float64 matrices, element access, quantization arithmetic
export { conv2dChannelParams, requantizeConv2d } from "./quantized/conv.ts";
export { linearChannelParams, requantizeLinear } from "./quantized/linear.ts";
export { quantizeValue, rint } from "./quantized/qtensor.ts";
export { referenceKernels } from "./reference/index.ts";
export { matricesOf, pivotsTensor, rightHandSides, stackMatrices } from "./reference/linalg.ts";
// The host: environment, cache directory and native libraries over FFI
export { cpuinfoFields } from "./runtime/cpu-capability.ts";
export { readEnv } from "./runtime/detect.ts";
export * from "./runtime/ffi/index.ts";
export { builtinModule, type HostGlobals, host } from "./runtime/host.ts";
export { readCacheFile, userCacheDir, writeCacheFile } from "./runtime/user-cache.ts";
export {
  bf16ToNumber,
  f16ToNumber,
  numberToBf16,
  numberToF16,
  readNumber,
  writeNumber,
} from "./tensor/dtype.ts";
export { allFinite, forEachIndex } from "./tensor/tensor.ts";
// The CPU device's WASM memory, the WASM modules in it, parallel-for, scratch buffers
export {
  loadWasmModule,
  loadWasmModuleSync,
  relaxedSimdEnabled,
  setWasmLocation,
  type WasmModuleFiles,
  wasmModuleUrl,
} from "./wasm/loader.ts";
export { type CpuMemoryStats, cpuMemory, WasmCpuMemory, wasmKernelImports } from "./wasm/memory.ts";
export {
  onWasmModule,
  registerWasmModule,
  type WasmModuleEntry,
  wasmModule,
  wasmModules,
} from "./wasm/modules.ts";
export {
  chunkArgs,
  chunksOf,
  cpuThreads,
  type ParallelService,
  type ParallelTask,
  parallelFor,
  parallelService,
  setParallelService,
  validateTask,
  WorkerError,
} from "./wasm/parallel.ts";
export {
  addressOf,
  f64View,
  i32View,
  inWasmMemory,
  Scratch,
  wasmSimdAvailability,
} from "./wasm/scratch.ts";
export { claimStaticMemory, dataExtent, HEAP_BASE, staticClaims } from "./wasm/static.ts";
export type { WasmImports, WasmInstance, WasmMemory, WasmModule } from "./wasm/types.ts";
