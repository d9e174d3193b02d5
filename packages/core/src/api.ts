/**
 * @backplane/core, the user entry: tensors, ops, the `backends` object with its flags and
 * scopes, the global switches, explain() and record(), and the typed errors. No runtime
 * dependencies. Backend authors import `@backplane/core/backend` as well.
 */

// What the core sets up when imported: the CPU device's memory (one WebAssembly memory
// every WASM kernel imports) and, last (after every op is defined), the float64 reference
// kernels of every op.
import "./wasm/memory.ts";

export { CALIBRATION_BUDGET_MS, type CalibrationReport } from "./dispatch/calibrate.ts";
export { clearAutotuneCache } from "./dispatch/dispatcher.ts";
export { type Explanation, explain } from "./dispatch/explain.ts";
export type { KernelFigure, Measurement } from "./dispatch/measured.ts";
export { kernelPriority, setKernelPriority, withKernelPriority } from "./dispatch/priority.ts";
export type { RankPolicy } from "./dispatch/ranker.ts";
export { formatCalls, type Recorded, record } from "./dispatch/record.ts";
export { setVerboseSink } from "./dispatch/verbose.ts";
export * from "./errors.ts";
export { BUILTIN_FLAGS } from "./flags/builtin.ts";
export { asyncScopesIsolated, type KernelCall } from "./flags/context.ts";
export type {
  BoolSpec,
  DeepPartial,
  EnumSpec,
  FlagSchema,
  FlagSpec,
  FlagValues,
  IntSpec,
  StringSpec,
} from "./flags/spec.ts";
export {
  allFlagKeys,
  type FlagScope,
  flagNamespaces,
  flagSchema,
  flagSpec,
  getFlag,
  onFlagChange,
  setFlag,
} from "./flags/state.ts";
export type { Namespace, NamespaceBase, NamespaceStatus } from "./namespaces/namespace.ts";
export { fromTorchName, TORCH_NAMES, type TorchName } from "./namespaces/torch-names.ts";
export { CONV_INDEX_LIMIT, type Conv2dOptions, conv2d, type Pair } from "./ops/conv2d.ts";
export { einsum } from "./ops/einsum.ts";
export { add, gelu, mul, relu } from "./ops/elementwise.ts";
export { type FftNorm, type FftOptions, fft, ifft, irfft, rfft } from "./ops/fft.ts";
export type { EighOptions, LuFactorOptions, QrOptions, SolveOptions } from "./ops/linalg.ts";
export { cholesky, eigh, inv, luFactor, qr, solve, svd } from "./ops/linalg.ts";
export { matmul } from "./ops/matmul.ts";
export { type MhaOptions, multiHeadAttention } from "./ops/mha.ts";
export { type SdpaOptions, scaledDotProductAttention } from "./ops/sdpa.ts";
export { logSoftmax, softmax } from "./ops/softmax.ts";
export {
  type Conv2dPrepackOptions,
  conv2dPrepack,
  PackedConv2d,
  quantizedConv2d,
} from "./quantized/conv.ts";
export { quantizedAdd, quantizedRelu } from "./quantized/elementwise.ts";
export {
  linearPrepack,
  PackedLinear,
  quantizedLinear,
} from "./quantized/linear.ts";
export { quantizedMatmul } from "./quantized/matmul.ts";
export {
  dequantize,
  makeQuantized,
  QDTYPES,
  type QDType,
  type QScheme,
  QTensor,
  quantizePerChannel,
  quantizePerTensor,
} from "./quantized/qtensor.ts";
export { refreshAvailability } from "./registry/backends.ts";
export { opNames } from "./registry/kernels.ts";
export { type CpuCapability, cpuCapabilityInfo } from "./runtime/cpu-capability.ts";
export { type RuntimeInfo, type RuntimeName, runtime } from "./runtime/detect.ts";
export {
  bytesPerElement,
  DTYPES,
  type DType,
  FLOAT_DTYPES,
  type FloatDType,
  isDType,
  isFloat,
} from "./tensor/dtype.ts";
export { deviceTypes, type MemoryStats, memoryStats, resetPeakMemory } from "./tensor/memory.ts";
export {
  type CreateOptions,
  empty,
  fromFloat64,
  full,
  type NestedArray,
  ones,
  rand,
  randn,
  seededRandom,
  Tensor,
  tensor,
  zeros,
} from "./tensor/tensor.ts";
export {
  type AllFlags,
  type Backends,
  type BackendsRoot,
  backends,
  type CufftPlanCache,
  type FlagDescription,
  readyAndRanked as ready,
} from "./torch/backends.ts";
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
} from "./torch/sdpa-select.ts";
export * from "./torch/switches.ts";
export { type LogHandler, type LogLevel, setLogHandler } from "./util/log.ts";
export { version } from "./version.ts";
export { setWasmLocation } from "./wasm/loader.ts";
export { WorkerError } from "./wasm/parallel.ts";

import { SDPBackend, sdpaKernel, withSdpaKernel } from "./torch/sdpa-select.ts";
/** torch.nn.attention */
export const nn = { attention: { sdpaKernel, withSdpaKernel, SDPBackend } };

// Last: kernels register only for defined ops, and the exports above define them.
import "./reference/index.ts";
