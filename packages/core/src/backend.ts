// Written by scripts/core-entries.ts from src/author-api.ts: edit that file, then run the script.
/**
 * @backplane/core/backend, the contract between the core and a backend: registration,
 * op handles and params, flags and namespaces, the device and memory contracts
 * (src/author-api.ts). docs/writing-a-backend.md walks through it.
 *
 * One core per process: src/one-core.ts hands out the API of the first copy of the core
 * that loaded (this one, or a compatible copy elsewhere in node_modules), or throws a
 * CoreConflictError naming both copies.
 */
import * as userApi from "./api.ts";
import * as api from "./author-api.ts";
import * as cpuApi from "./cpu-api.ts";
import { oneCore } from "./one-core.ts";

const shared: typeof api = oneCore(userApi, api, cpuApi).author;

export type * from "./author-api.ts";
export const NAMESPACE_PACKAGES: typeof api.NAMESPACE_PACKAGES = shared.NAMESPACE_PACKAGES;
export const Q_STORAGE: typeof api.Q_STORAGE = shared.Q_STORAGE;
export const addFlagReader: typeof api.addFlagReader = shared.addFlagReader;
export const addKernels: typeof api.addKernels = shared.addKernels;
export const allocateStorage: typeof api.allocateStorage = shared.allocateStorage;
export const batchOffsets: typeof api.batchOffsets = shared.batchOffsets;
export const bool: typeof api.bool = shared.bool;
export const checkDType: typeof api.checkDType = shared.checkDType;
export const checkFlag: typeof api.checkFlag = shared.checkFlag;
export const checkShape: typeof api.checkShape = shared.checkShape;
export const closest: typeof api.closest = shared.closest;
export const contiguousStrides: typeof api.contiguousStrides = shared.contiguousStrides;
export const currentState: typeof api.currentState = shared.currentState;
export const defineBackend: typeof api.defineBackend = shared.defineBackend;
export const defineNamespace: typeof api.defineNamespace = shared.defineNamespace;
export const defineOp: typeof api.defineOp = shared.defineOp;
export const deviceContext: typeof api.deviceContext = shared.deviceContext;
export const deviceMemory: typeof api.deviceMemory = shared.deviceMemory;
export const deviceTypeOf: typeof api.deviceTypeOf = shared.deviceTypeOf;
export const dispatch: typeof api.dispatch = shared.dispatch;
export const emitVerbose: typeof api.emitVerbose = shared.emitVerbose;
export const emptyQuantized: typeof api.emptyQuantized = shared.emptyQuantized;
export const extendNamespace: typeof api.extendNamespace = shared.extendNamespace;
export const flagChoices: typeof api.flagChoices = shared.flagChoices;
export const forgetCalibration: typeof api.forgetCalibration = shared.forgetCalibration;
export const getBackend: typeof api.getBackend = shared.getBackend;
export const getKernel: typeof api.getKernel = shared.getKernel;
export const getOp: typeof api.getOp = shared.getOp;
export const initBackends: typeof api.initBackends = shared.initBackends;
export const int32SumProblem: typeof api.int32SumProblem = shared.int32SumProblem;
export const int: typeof api.int = shared.int;
export const jsCpuMemory: typeof api.jsCpuMemory = shared.jsCpuMemory;
export const labelledDims: typeof api.labelledDims = shared.labelledDims;
export const leadingBroadcastStrides: typeof api.leadingBroadcastStrides =
  shared.leadingBroadcastStrides;
export const listBackends: typeof api.listBackends = shared.listBackends;
export const mhaCompositions: typeof api.mhaCompositions = shared.mhaCompositions;
export const normalizeDevice: typeof api.normalizeDevice = shared.normalizeDevice;
export const normalizeDim: typeof api.normalizeDim = shared.normalizeDim;
export const oneOf: typeof api.oneOf = shared.oneOf;
export const ops: typeof api.ops = shared.ops;
export const parseEinsum: typeof api.parseEinsum = shared.parseEinsum;
export const provideDeviceContext: typeof api.provideDeviceContext = shared.provideDeviceContext;
export const qrShapes: typeof api.qrShapes = shared.qrShapes;
export const quantizedEngineGate: typeof api.quantizedEngineGate = shared.quantizedEngineGate;
export const registerBackend: typeof api.registerBackend = shared.registerBackend;
export const registerDeviceMemory: typeof api.registerDeviceMemory = shared.registerDeviceMemory;
export const registerFlagChoice: typeof api.registerFlagChoice = shared.registerFlagChoice;
export const restartInit: typeof api.restartInit = shared.restartInit;
export const sameTensor: typeof api.sameTensor = shared.sameTensor;
export const setAllocationHook: typeof api.setAllocationHook = shared.setAllocationHook;
export const setTimingClock: typeof api.setTimingClock = shared.setTimingClock;
export const sizeOf: typeof api.sizeOf = shared.sizeOf;
export const solveOutputShape: typeof api.solveOutputShape = shared.solveOutputShape;
export const statusOf: typeof api.statusOf = shared.statusOf;
export const str: typeof api.str = shared.str;
export const svdShapes: typeof api.svdShapes = shared.svdShapes;
export const viewOf: typeof api.viewOf = shared.viewOf;
export const warnOnce: typeof api.warnOnce = shared.warnOnce;
export const withdrawDeviceContext: typeof api.withdrawDeviceContext = shared.withdrawDeviceContext;
