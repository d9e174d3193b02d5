// Written by scripts/core-entries.ts from src/api.ts: edit that file, then run the script.
/**
 * @backplane/core, the user entry: tensors, ops, the `backends` object with its flags and
 * scopes, the global switches, explain() and record(), and the typed errors (src/api.ts).
 * No runtime dependencies. Backend authors import `@backplane/core/backend` as well.
 *
 * One core per process: src/one-core.ts hands out the API of the first copy of the core
 * that loaded (this one, or a compatible copy elsewhere in node_modules), or throws a
 * CoreConflictError naming both copies.
 */
import * as api from "./api.ts";
import * as authorApi from "./author-api.ts";
import * as cpuApi from "./cpu-api.ts";
import { oneCore } from "./one-core.ts";

const shared: typeof api = oneCore(api, authorApi, cpuApi).user;

export type * from "./api.ts";
export const ArgumentError: typeof api.ArgumentError = shared.ArgumentError;
export const BUILTIN_FLAGS: typeof api.BUILTIN_FLAGS = shared.BUILTIN_FLAGS;
export const BackplaneError: typeof api.BackplaneError = shared.BackplaneError;
export const CALIBRATION_BUDGET_MS: typeof api.CALIBRATION_BUDGET_MS = shared.CALIBRATION_BUDGET_MS;
export const CONV_INDEX_LIMIT: typeof api.CONV_INDEX_LIMIT = shared.CONV_INDEX_LIMIT;
export const CoreConflictError: typeof api.CoreConflictError = shared.CoreConflictError;
export const DTYPES: typeof api.DTYPES = shared.DTYPES;
export const DTypeError: typeof api.DTypeError = shared.DTypeError;
export const DeviceError: typeof api.DeviceError = shared.DeviceError;
export const DisposedError: typeof api.DisposedError = shared.DisposedError;
export const FLOAT_DTYPES: typeof api.FLOAT_DTYPES = shared.FLOAT_DTYPES;
export const FallbackError: typeof api.FallbackError = shared.FallbackError;
export const FfiError: typeof api.FfiError = shared.FfiError;
export const FlagError: typeof api.FlagError = shared.FlagError;
export const KernelContractError: typeof api.KernelContractError = shared.KernelContractError;
export const KernelError: typeof api.KernelError = shared.KernelError;
export const LinalgError: typeof api.LinalgError = shared.LinalgError;
export const NoKernelError: typeof api.NoKernelError = shared.NoKernelError;
export const NondeterministicError: typeof api.NondeterministicError = shared.NondeterministicError;
export const NotInstalledError: typeof api.NotInstalledError = shared.NotInstalledError;
export const PackedConv2d: typeof api.PackedConv2d = shared.PackedConv2d;
export const PackedLinear: typeof api.PackedLinear = shared.PackedLinear;
export const QDTYPES: typeof api.QDTYPES = shared.QDTYPES;
export const QTensor: typeof api.QTensor = shared.QTensor;
export const RegistrationError: typeof api.RegistrationError = shared.RegistrationError;
export const SDPAParams: typeof api.SDPAParams = shared.SDPAParams;
export const SDPBackend: typeof api.SDPBackend = shared.SDPBackend;
export const ShapeError: typeof api.ShapeError = shared.ShapeError;
export const TORCH_NAMES: typeof api.TORCH_NAMES = shared.TORCH_NAMES;
export const Tensor: typeof api.Tensor = shared.Tensor;
export const UnknownFlagError: typeof api.UnknownFlagError = shared.UnknownFlagError;
export const UnknownNamespaceError: typeof api.UnknownNamespaceError = shared.UnknownNamespaceError;
export const WorkerError: typeof api.WorkerError = shared.WorkerError;
export const add: typeof api.add = shared.add;
export const allFlagKeys: typeof api.allFlagKeys = shared.allFlagKeys;
export const areDeterministicAlgorithmsEnabled: typeof api.areDeterministicAlgorithmsEnabled =
  shared.areDeterministicAlgorithmsEnabled;
export const asyncScopesIsolated: typeof api.asyncScopesIsolated = shared.asyncScopesIsolated;
export const backends: typeof api.backends = shared.backends;
export const bytesPerElement: typeof api.bytesPerElement = shared.bytesPerElement;
export const canUseCudnnAttention: typeof api.canUseCudnnAttention = shared.canUseCudnnAttention;
export const canUseEfficientAttention: typeof api.canUseEfficientAttention =
  shared.canUseEfficientAttention;
export const canUseFlashAttention: typeof api.canUseFlashAttention = shared.canUseFlashAttention;
export const cholesky: typeof api.cholesky = shared.cholesky;
export const clearAutotuneCache: typeof api.clearAutotuneCache = shared.clearAutotuneCache;
export const conv2d: typeof api.conv2d = shared.conv2d;
export const conv2dPrepack: typeof api.conv2dPrepack = shared.conv2dPrepack;
export const cpuCapabilityInfo: typeof api.cpuCapabilityInfo = shared.cpuCapabilityInfo;
export const dequantize: typeof api.dequantize = shared.dequantize;
export const deviceTypes: typeof api.deviceTypes = shared.deviceTypes;
export const eigh: typeof api.eigh = shared.eigh;
export const einsum: typeof api.einsum = shared.einsum;
export const empty: typeof api.empty = shared.empty;
export const explain: typeof api.explain = shared.explain;
export const fft: typeof api.fft = shared.fft;
export const flagNamespaces: typeof api.flagNamespaces = shared.flagNamespaces;
export const flagSchema: typeof api.flagSchema = shared.flagSchema;
export const flagSpec: typeof api.flagSpec = shared.flagSpec;
export const formatCalls: typeof api.formatCalls = shared.formatCalls;
export const fromFloat64: typeof api.fromFloat64 = shared.fromFloat64;
export const fromTorchName: typeof api.fromTorchName = shared.fromTorchName;
export const full: typeof api.full = shared.full;
export const gelu: typeof api.gelu = shared.gelu;
export const getFlag: typeof api.getFlag = shared.getFlag;
export const getFloat32MatmulPrecision: typeof api.getFloat32MatmulPrecision =
  shared.getFloat32MatmulPrecision;
export const ifft: typeof api.ifft = shared.ifft;
export const inv: typeof api.inv = shared.inv;
export const irfft: typeof api.irfft = shared.irfft;
export const isDType: typeof api.isDType = shared.isDType;
export const isDeterministicAlgorithmsWarnOnlyEnabled: typeof api.isDeterministicAlgorithmsWarnOnlyEnabled =
  shared.isDeterministicAlgorithmsWarnOnlyEnabled;
export const isFlashAttentionAvailable: typeof api.isFlashAttentionAvailable =
  shared.isFlashAttentionAvailable;
export const isFloat: typeof api.isFloat = shared.isFloat;
export const kernelPriority: typeof api.kernelPriority = shared.kernelPriority;
export const linalgFailure: typeof api.linalgFailure = shared.linalgFailure;
export const linearPrepack: typeof api.linearPrepack = shared.linearPrepack;
export const logSoftmax: typeof api.logSoftmax = shared.logSoftmax;
export const luFactor: typeof api.luFactor = shared.luFactor;
export const makeQuantized: typeof api.makeQuantized = shared.makeQuantized;
export const matmul: typeof api.matmul = shared.matmul;
export const memoryStats: typeof api.memoryStats = shared.memoryStats;
export const mul: typeof api.mul = shared.mul;
export const multiHeadAttention: typeof api.multiHeadAttention = shared.multiHeadAttention;
export const nn: typeof api.nn = shared.nn;
export const onFlagChange: typeof api.onFlagChange = shared.onFlagChange;
export const ones: typeof api.ones = shared.ones;
export const opNames: typeof api.opNames = shared.opNames;
export const qr: typeof api.qr = shared.qr;
export const quantizePerChannel: typeof api.quantizePerChannel = shared.quantizePerChannel;
export const quantizePerTensor: typeof api.quantizePerTensor = shared.quantizePerTensor;
export const quantizedAdd: typeof api.quantizedAdd = shared.quantizedAdd;
export const quantizedConv2d: typeof api.quantizedConv2d = shared.quantizedConv2d;
export const quantizedLinear: typeof api.quantizedLinear = shared.quantizedLinear;
export const quantizedMatmul: typeof api.quantizedMatmul = shared.quantizedMatmul;
export const quantizedRelu: typeof api.quantizedRelu = shared.quantizedRelu;
export const rand: typeof api.rand = shared.rand;
export const randn: typeof api.randn = shared.randn;
export const ready: typeof api.ready = shared.ready;
export const record: typeof api.record = shared.record;
export const refreshAvailability: typeof api.refreshAvailability = shared.refreshAvailability;
export const relu: typeof api.relu = shared.relu;
export const resetPeakMemory: typeof api.resetPeakMemory = shared.resetPeakMemory;
export const rfft: typeof api.rfft = shared.rfft;
export const runtime: typeof api.runtime = shared.runtime;
export const scaledDotProductAttention: typeof api.scaledDotProductAttention =
  shared.scaledDotProductAttention;
export const sdpKernel: typeof api.sdpKernel = shared.sdpKernel;
export const sdpaKernel: typeof api.sdpaKernel = shared.sdpaKernel;
export const sdpaRefusals: typeof api.sdpaRefusals = shared.sdpaRefusals;
export const seededRandom: typeof api.seededRandom = shared.seededRandom;
export const setFlag: typeof api.setFlag = shared.setFlag;
export const setFloat32MatmulPrecision: typeof api.setFloat32MatmulPrecision =
  shared.setFloat32MatmulPrecision;
export const setKernelPriority: typeof api.setKernelPriority = shared.setKernelPriority;
export const setLogHandler: typeof api.setLogHandler = shared.setLogHandler;
export const setVerboseSink: typeof api.setVerboseSink = shared.setVerboseSink;
export const setWasmLocation: typeof api.setWasmLocation = shared.setWasmLocation;
export const softmax: typeof api.softmax = shared.softmax;
export const solve: typeof api.solve = shared.solve;
export const svd: typeof api.svd = shared.svd;
export const tensor: typeof api.tensor = shared.tensor;
export const useDeterministicAlgorithms: typeof api.useDeterministicAlgorithms =
  shared.useDeterministicAlgorithms;
export const version: typeof api.version = shared.version;
export const withKernelPriority: typeof api.withKernelPriority = shared.withKernelPriority;
export const withSdpaKernel: typeof api.withSdpaKernel = shared.withSdpaKernel;
export const zeros: typeof api.zeros = shared.zeros;
export type ArgumentError = api.ArgumentError;
export type BackplaneError = api.BackplaneError;
export type CoreConflictError = api.CoreConflictError;
export type DTypeError = api.DTypeError;
export type DeviceError = api.DeviceError;
export type DisposedError = api.DisposedError;
export type FallbackError = api.FallbackError;
export type FfiError = api.FfiError;
export type FlagError = api.FlagError;
export type KernelContractError = api.KernelContractError;
export type KernelError = api.KernelError;
export type LinalgError = api.LinalgError;
export type NoKernelError = api.NoKernelError;
export type NondeterministicError = api.NondeterministicError;
export type NotInstalledError = api.NotInstalledError;
export type PackedConv2d = api.PackedConv2d;
export type PackedLinear = api.PackedLinear;
export type QTensor = api.QTensor;
export type RegistrationError = api.RegistrationError;
export type SDPAParams = api.SDPAParams;
export type SDPBackend = api.SDPBackend;
export type ShapeError = api.ShapeError;
export type Tensor = api.Tensor;
export type UnknownFlagError = api.UnknownFlagError;
export type UnknownNamespaceError = api.UnknownNamespaceError;
export type WorkerError = api.WorkerError;
