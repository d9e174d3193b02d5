/**
 * @backplane/core/backend, the contract between the core and a backend: registering a
 * backend and its kernels, the op handles and their params, the ranking hooks, flags and
 * namespaces, the device and memory contracts, and the helpers that read params. The
 * CPU toolkit (WASM memory and modules, parallel-for, FFI, scratch buffers) is
 * `@backplane/core/cpu`; the typed errors are in the user entry. docs/writing-a-backend.md
 * walks through it.
 */

// The same set-up as the user entry, whichever of the two a program imports first.
import "./api.ts";

// Registering a backend and its kernels
export { forgetCalibration } from "./dispatch/calibrate.ts";
export { dispatch, getKernel } from "./dispatch/dispatcher.ts";
export { setTimingClock } from "./dispatch/timing.ts";
export { emitVerbose } from "./dispatch/verbose.ts";
// Flags and namespaces a backend declares
export { NAMESPACE_PACKAGES } from "./flags/builtin.ts";
export type { FlagState } from "./flags/snapshot.ts";
export { bool, int, oneOf, str } from "./flags/spec.ts";
export {
  addFlagReader,
  checkFlag,
  currentState,
  flagChoices,
  registerFlagChoice,
} from "./flags/state.ts";
export {
  extendNamespace,
  namespaceObject as defineNamespace,
  statusOf,
} from "./namespaces/namespace.ts";
// Op handles (`ops.matmul.kernel({...})`) and the params kernels receive
export { ops } from "./op-handles.ts";
export type { Conv2dParams } from "./ops/conv2d.ts";
export { type EinsumParams, type LabelledDims, labelledDims, parseEinsum } from "./ops/einsum.ts";
export type { BinaryParams, UnaryParams } from "./ops/elementwise.ts";
export type { FftParams } from "./ops/fft.ts";
export type { LinalgParams } from "./ops/linalg.ts";
export type { MatmulParams } from "./ops/matmul.ts";
export { type MhaParams, sameTensor } from "./ops/mha.ts";
export type { SdpaParams } from "./ops/sdpa.ts";
export type { SoftmaxParams } from "./ops/softmax.ts";
export type { QConv2dParams } from "./quantized/conv.ts";
export type { QAddParams, QReluParams } from "./quantized/elementwise.ts";
export { type QLinearParams, quantizedEngineGate } from "./quantized/linear.ts";
export type { QMatmulParams } from "./quantized/matmul.ts";
export { emptyQuantized, Q_STORAGE, type QParams } from "./quantized/qtensor.ts";
export { int32SumProblem } from "./quantized/requant.ts";
// Reading params: broadcast batches and the shapes of decompositions
export { batchOffsets, leadingBroadcastStrides } from "./reference/access.ts";
export { qrShapes, solveOutputShape, svdShapes } from "./reference/linalg.ts";
// Compositions a backend registers for its device
export { mhaCompositions } from "./reference/mha.ts";
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
// The device contract: device contexts and device memory
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
  defineOp,
  getOp,
  type Kernel,
  type KernelDefinition,
  type MatmulPrecision,
  type OpDefinition,
  type OpParams,
  type OpRecord,
  type ResultSpec,
} from "./registry/kernels.ts";
export { addKernels, defineBackend, registerBackend } from "./registry/register.ts";
export { checkDType, type StorageArray, viewOf } from "./tensor/dtype.ts";
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
export { checkShape, contiguousStrides, normalizeDim, sizeOf } from "./tensor/tensor.ts";
// What the built-in backend packages add to the core's namespaces (backends.nnpack's
// algorithmFor, getOptEinsum()'s path API...): each package implements these types
export type {
  CudnnLibraryStatus,
  CudnnMembers,
  CudnnPlanSummary,
  NnpackAlgorithm,
  NnpackMembers,
  NnpackTransformCacheInfo,
  OptEinsumApi,
  OptEinsumContractPathOptions,
  OptEinsumPathCacheInfo,
  OptEinsumPathInfo,
  OptEinsumPathStep,
  OptEinsumRandomEquation,
  OptEinsumRandomEquationOptions,
  OptEinsumSearchOptions,
  OptEinsumShapeLike,
  OptEinsumStepKind,
  OptEinsumStrategy,
  WebGPUMembers,
  WebGPUPoolCounters,
  WebGPUPoolStats,
} from "./torch/package-members.ts";
// Warnings a backend gives once (through setLogHandler's handler)
export { warnOnce } from "./util/log.ts";
// "did you mean ...?" for a misspelt name in a backend's or tool's own errors
export { closest } from "./util/suggest.ts";
