/**
 * @backplane/core: torch.backends for TypeScript. The backend registry, typed flags,
 * scoped overrides, the kernel table and dispatcher, the tensor and device-memory
 * contracts, the ops with their reference kernels. No runtime dependencies.
 */
export * from "./errors.ts";
export * from "./dtype.ts";
export { runtime, readEnv, type RuntimeInfo, type RuntimeName } from "./runtime.ts";
export * from "./memory.ts";
export * from "./tensor.ts";
export * from "./flags/spec.ts";
export {
  FlagScope, FlagState, getFlag, setFlag, onFlagChange, currentState, allFlagKeys, flagSpec, flagSchema, flagNamespaces,
} from "./flags/state.ts";
export { asyncScopesIsolated } from "./flags/context.ts";
export { BUILTIN_FLAGS, NAMESPACE_PACKAGES } from "./flags/builtin.ts";
export * from "./kernels.ts";
export {
  type Availability, type BackendDefinition, type RegisteredBackend, defineBackend, registerBackend, getBackend,
  listBackends, refreshAvailability, ready,
} from "./backend.ts";
export {
  dispatch, explain, type Explanation, getKernel, setVerboseSink, clearAutotuneCache, setKernelPriority,
  kernelPriority, withKernelPriority,
} from "./dispatcher.ts";
export { type NamespaceStatus, type NamespaceBase, type Namespace, extendNamespace, statusOf } from "./namespaces.ts";
export { backends, defineNamespace, type Backends, type BackendsRoot, type AllFlags, type CufftPlanCache } from "./backends.ts";
export * from "./switches.ts";
export {
  SDPBackend, SDPAParams, sdpaKernel, withSdpaKernel, sdpKernel, canUseFlashAttention, canUseEfficientAttention,
  canUseCudnnAttention, isFlashAttentionAvailable, sdpaRefusals,
} from "./sdpa-select.ts";
export { cpuCapabilityInfo, type CpuCapability } from "./cpu-capability.ts";
export * from "./ops/matmul.ts";
export * from "./ops/elementwise.ts";
export * from "./ops/softmax.ts";
export * from "./ops/conv2d.ts";
export * from "./ops/sdpa.ts";
export * from "./ops/einsum.ts";
export * from "./ops/linalg.ts";
export * from "./ops/fft.ts";
export { referenceKernels } from "./reference/index.ts";
export { version } from "./version.ts";

import { SDPBackend, sdpaKernel, withSdpaKernel } from "./sdpa-select.ts";
/** torch.nn.attention */
export const nn = { attention: { sdpaKernel, withSdpaKernel, SDPBackend } };
