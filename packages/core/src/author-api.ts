/**
 * @backplane/core/backend, the author entry: what a backend package needs besides the
 * user API: register a backend and its kernels, define ops, claim CPU memory and load
 * WASM modules into it, run parallel-for tasks, reach native libraries over FFI, and the
 * device-memory contract. docs/writing-a-backend.md uses only this and the user entry.
 */

// The same set-up as the user entry, whichever of the two a program imports first.
import "./api.ts";

// Registering a backend and its kernels
export { forgetCalibration } from "./dispatch/calibrate.ts";
export { dispatch, getKernel } from "./dispatch/dispatcher.ts";
export { setTimingClock } from "./dispatch/timing.ts";
export { emitVerbose } from "./dispatch/verbose.ts";
export { NAMESPACE_PACKAGES } from "./flags/builtin.ts";
export { FlagState } from "./flags/snapshot.ts";
export {
  allowedText,
  bool,
  envNames,
  int,
  isSpec,
  leaves,
  oneOf,
  parseEnv,
  str,
  typeText,
  validate,
} from "./flags/spec.ts";
export {
  addFlagReader,
  checkFlag,
  currentState,
  flagChoices,
  flagReaders,
  registerFlagChoice,
} from "./flags/state.ts";
export {
  extendNamespace,
  namespaceObject as defineNamespace,
  statusOf,
} from "./namespaces/namespace.ts";
// Op parameters, as kernels receive them
export type { Conv2dParams } from "./ops/conv2d.ts";
export { conv2dOp } from "./ops/conv2d.ts";
export { type EinsumParams, einsumOp, parseEinsum } from "./ops/einsum.ts";
export {
  addOp,
  type BinaryParams,
  geluOp,
  mulOp,
  reluOp,
  type UnaryParams,
} from "./ops/elementwise.ts";
export { type FftParams, fftOp, ifftOp, irfftOp, rfftOp } from "./ops/fft.ts";
export {
  choleskyOp,
  eighOp,
  invOp,
  type LinalgParams,
  luFactorOp,
  qrOp,
  solveOp,
  svdOp,
} from "./ops/linalg.ts";
export { type MatmulParams, matmulOp } from "./ops/matmul.ts";
export { type MhaParams, mhaOp, sameTensor } from "./ops/mha.ts";
export { type SdpaParams, sdpaOp } from "./ops/sdpa.ts";
export { logSoftmaxOp, type SoftmaxParams, softmaxOp } from "./ops/softmax.ts";
export {
  conv2dChannelParams,
  type QConv2dParams,
  quantizedConv2dOp,
  requantizeConv2d,
} from "./quantized/conv.ts";
export {
  type QAddParams,
  type QReluParams,
  quantizedAddOp,
  quantizedReluOp,
} from "./quantized/elementwise.ts";
export {
  linearChannelParams,
  type QLinearParams,
  quantizedEngineGate,
  quantizedLinearOp,
  requantizeLinear,
} from "./quantized/linear.ts";
export { type QMatmulParams, quantizedMatmulOp } from "./quantized/matmul.ts";
export {
  emptyQuantized,
  Q_STORAGE,
  type QParams,
  quantizeValue,
  rint,
} from "./quantized/qtensor.ts";
// Kernel helpers: strided access and float64 matrices
export { batchOffsets, leadingBroadcastStrides } from "./reference/access.ts";
export { referenceKernels } from "./reference/index.ts";
export {
  matricesOf,
  pivotsTensor,
  qrShapes,
  rightHandSides,
  solveOutputShape,
  stackMatrices,
  svdShapes,
} from "./reference/linalg.ts";
export {
  type Availability,
  type BackendDefinition,
  getBackend,
  type InitState,
  listBackends,
  type RegisteredBackend,
  /** Starts (and awaits) backends' initialisation without ranking the CPU kernels: a backend package's own background start. */
  ready as initBackends,
  restartInit,
} from "./registry/backends.ts";
export {
  type DeviceBuffer,
  type DeviceContext,
  type DeviceProperties,
  deviceContext,
  provideDeviceContext,
  withdrawDeviceContext,
} from "./registry/device-context.ts";
export {
  type AnyKernelDefinition,
  addKernels,
  defineOp,
  getOp,
  type Kernel,
  type KernelDefinition,
  type MatmulPrecision,
  type OpDefinition,
  type OpParams,
  type OpRecord,
} from "./registry/kernels.ts";
export { defineBackend, registerBackend } from "./registry/register.ts";
// The host: environment and native libraries over FFI (bun:ffi, Deno.dlopen, koffi)
export { cpuinfoFields } from "./runtime/cpu-capability.ts";
export { readEnv } from "./runtime/detect.ts";
export * from "./runtime/ffi/index.ts";
export { builtinModule, type HostGlobals, host } from "./runtime/host.ts";
export { readCacheFile, userCacheDir, writeCacheFile } from "./runtime/user-cache.ts";
// Device memory and the CPU's WASM memory
export {
  bf16ToNumber,
  checkDType,
  f16ToNumber,
  numberToBf16,
  numberToF16,
  readNumber,
  type StorageArray,
  viewOf,
  writeNumber,
} from "./tensor/dtype.ts";
export {
  allocateStorage,
  type DeviceMemory,
  deviceMemory,
  deviceTypeOf,
  jsCpuMemory,
  normalizeDevice,
  registerDeviceMemory,
  type Storage,
  setAllocationHook,
} from "./tensor/memory.ts";
export {
  allFinite,
  checkShape,
  contiguousStrides,
  forEachIndex,
  normalizeDim,
  sizeOf,
} from "./tensor/tensor.ts";
// Warnings a backend gives once (through setLogHandler's handler)
export { warnOnce } from "./util/log.ts";
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
