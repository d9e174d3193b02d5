/**
 * @backplane/core: torch.backends for TypeScript. The backend registry, typed flags,
 * scoped overrides, the kernel table and dispatcher, the tensor and device-memory
 * contracts, the ops with their reference kernels. No runtime dependencies.
 */

export {
  type Availability,
  type BackendDefinition,
  defineBackend,
  getBackend,
  listBackends,
  type RegisteredBackend,
  ready,
  refreshAvailability,
  registerBackend,
  restartInit,
} from "./backend.ts";
export {
  type AllFlags,
  type Backends,
  type BackendsRoot,
  backends,
  type CufftPlanCache,
  defineNamespace,
  type FlagDescription,
} from "./backends.ts";
export { type CpuCapability, cpuCapabilityInfo } from "./cpu-capability.ts";
export {
  clearAutotuneCache,
  dispatch,
  type Explanation,
  emitVerbose,
  explain,
  formatCalls,
  getKernel,
  kernelPriority,
  type Recorded,
  record,
  setKernelPriority,
  setVerboseSink,
  withKernelPriority,
} from "./dispatcher.ts";
export * from "./dtype.ts";
export * from "./errors.ts";
export { BUILTIN_FLAGS, NAMESPACE_PACKAGES } from "./flags/builtin.ts";
export { asyncScopesIsolated, type KernelCall } from "./flags/context.ts";
export * from "./flags/spec.ts";
export {
  allFlagKeys,
  checkFlag,
  currentState,
  FlagScope,
  FlagState,
  flagChoices,
  flagNamespaces,
  flagReaders,
  flagSchema,
  flagSpec,
  getFlag,
  onFlagChange,
  registerFlagChoice,
  setFlag,
} from "./flags/state.ts";
export * from "./kernels.ts";
export { type LogHandler, type LogLevel, setLogHandler } from "./log.ts";
export * from "./memory.ts";
export {
  extendNamespace,
  type Namespace,
  type NamespaceBase,
  type NamespaceStatus,
  statusOf,
} from "./namespaces.ts";
export * from "./ops/conv2d.ts";
export * from "./ops/einsum.ts";
export * from "./ops/elementwise.ts";
export * from "./ops/fft.ts";
export * from "./ops/linalg.ts";
export * from "./ops/matmul.ts";
export * from "./ops/mha.ts";
export * from "./ops/sdpa.ts";
export * from "./ops/softmax.ts";
export { referenceKernels } from "./reference/index.ts";
export { type RuntimeInfo, type RuntimeName, readEnv, runtime } from "./runtime.ts";
export {
  canUseCudnnAttention,
  canUseEfficientAttention,
  canUseFlashAttention,
  isFlashAttentionAvailable,
  SDPAParams,
  SDPBackend,
  sdpaKernel,
  sdpaRefusals,
  sdpKernel,
  withSdpaKernel,
} from "./sdpa-select.ts";
export * from "./switches.ts";
export * from "./tensor.ts";
export { fromTorchName, TORCH_NAMES, type TorchName } from "./torch-names.ts";
export { version } from "./version.ts";

import { SDPBackend, sdpaKernel, withSdpaKernel } from "./sdpa-select.ts";
/** torch.nn.attention */
export const nn = { attention: { sdpaKernel, withSdpaKernel, SDPBackend } };
export {
  type CpuMemoryStats,
  cpuMemory,
  HEAP_BASE,
  WASM_STATIC_SLICES,
  WasmCpuMemory,
  wasmKernelImports,
} from "./cpu-memory.ts";
export {
  chunkArgs,
  chunksOf,
  cpuThreads,
  onWasmModule,
  type ParallelService,
  type ParallelTask,
  parallelFor,
  parallelService,
  registerWasmModule,
  setParallelService,
  type WasmModuleEntry,
  WorkerError,
  wasmModules,
} from "./parallel.ts";
export { batchOffsets, leadingBroadcastStrides } from "./reference/access.ts";
/** Helpers for backend authors' kernels: matrices of a batch in and out as float64. */
export {
  matricesOf,
  pivotsTensor,
  qrShapes,
  rightHandSides,
  solveOutputShape,
  stackMatrices,
  svdShapes,
} from "./reference/linalg.ts";
