// Written by scripts/core-entries.ts from src/cpu-api.ts: edit that file, then run the script.
/**
 * @backplane/core/cpu, the CPU toolkit: the CPU device's WASM memory and modules,
 * parallel-for, scratch buffers, the SIMD check, FFI, host-side kernel helpers
 * (src/cpu-api.ts).
 *
 * One core per process: src/one-core.ts hands out the API of the first copy of the core
 * that loaded (this one, or a compatible copy elsewhere in node_modules), or throws a
 * CoreConflictError naming both copies.
 */
import * as userApi from "./api.ts";
import * as authorApi from "./author-api.ts";
import * as api from "./cpu-api.ts";
import { oneCore } from "./one-core.ts";

const shared: typeof api = oneCore(userApi, authorApi, api).cpu;

export type * from "./cpu-api.ts";
export const FFI_TYPES: typeof api.FFI_TYPES = shared.FFI_TYPES;
export const HEAP_BASE: typeof api.HEAP_BASE = shared.HEAP_BASE;
export const SEARCH_PATH_ENV: typeof api.SEARCH_PATH_ENV = shared.SEARCH_PATH_ENV;
export const Scratch: typeof api.Scratch = shared.Scratch;
export const WasmCpuMemory: typeof api.WasmCpuMemory = shared.WasmCpuMemory;
export const WorkerError: typeof api.WorkerError = shared.WorkerError;
export const addressOf: typeof api.addressOf = shared.addressOf;
export const allFinite: typeof api.allFinite = shared.allFinite;
export const bf16ToNumber: typeof api.bf16ToNumber = shared.bf16ToNumber;
export const builtinModule: typeof api.builtinModule = shared.builtinModule;
export const chunkArgs: typeof api.chunkArgs = shared.chunkArgs;
export const chunksOf: typeof api.chunksOf = shared.chunksOf;
export const claimStaticMemory: typeof api.claimStaticMemory = shared.claimStaticMemory;
export const conv2dChannelParams: typeof api.conv2dChannelParams = shared.conv2dChannelParams;
export const cpuMemory: typeof api.cpuMemory = shared.cpuMemory;
export const cpuThreads: typeof api.cpuThreads = shared.cpuThreads;
export const cpuinfoFields: typeof api.cpuinfoFields = shared.cpuinfoFields;
export const dataExtent: typeof api.dataExtent = shared.dataExtent;
export const defaultSearchDirs: typeof api.defaultSearchDirs = shared.defaultSearchDirs;
export const defineLibrary: typeof api.defineLibrary = shared.defineLibrary;
export const detectRuntime: typeof api.detectRuntime = shared.detectRuntime;
export const f16ToNumber: typeof api.f16ToNumber = shared.f16ToNumber;
export const f64View: typeof api.f64View = shared.f64View;
export const ffiCall: typeof api.ffiCall = shared.ffiCall;
export const ffiOptionalStatus: typeof api.ffiOptionalStatus = shared.ffiOptionalStatus;
export const ffiStatus: typeof api.ffiStatus = shared.ffiStatus;
export const forEachIndex: typeof api.forEachIndex = shared.forEachIndex;
export const host: typeof api.host = shared.host;
export const hostInfo: typeof api.hostInfo = shared.hostInfo;
export const i32View: typeof api.i32View = shared.i32View;
export const inWasmMemory: typeof api.inWasmMemory = shared.inWasmMemory;
export const initFfi: typeof api.initFfi = shared.initFfi;
export const isNullPtr: typeof api.isNullPtr = shared.isNullPtr;
export const libraryFileNames: typeof api.libraryFileNames = shared.libraryFileNames;
export const linearChannelParams: typeof api.linearChannelParams = shared.linearChannelParams;
export const loadWasmModule: typeof api.loadWasmModule = shared.loadWasmModule;
export const loadWasmModuleSync: typeof api.loadWasmModuleSync = shared.loadWasmModuleSync;
export const matricesOf: typeof api.matricesOf = shared.matricesOf;
export const nullPtr: typeof api.nullPtr = shared.nullPtr;
export const numberToBf16: typeof api.numberToBf16 = shared.numberToBf16;
export const numberToF16: typeof api.numberToF16 = shared.numberToF16;
export const onWasmModule: typeof api.onWasmModule = shared.onWasmModule;
export const openLibrary: typeof api.openLibrary = shared.openLibrary;
export const parallelFor: typeof api.parallelFor = shared.parallelFor;
export const parallelService: typeof api.parallelService = shared.parallelService;
export const pivotsTensor: typeof api.pivotsTensor = shared.pivotsTensor;
export const planSearch: typeof api.planSearch = shared.planSearch;
export const ptrAddress: typeof api.ptrAddress = shared.ptrAddress;
export const ptrFromAddress: typeof api.ptrFromAddress = shared.ptrFromAddress;
export const ptrOf: typeof api.ptrOf = shared.ptrOf;
export const pythonSitePackages: typeof api.pythonSitePackages = shared.pythonSitePackages;
export const quantizeValue: typeof api.quantizeValue = shared.quantizeValue;
export const readCString: typeof api.readCString = shared.readCString;
export const readCacheFile: typeof api.readCacheFile = shared.readCacheFile;
export const readEnv: typeof api.readEnv = shared.readEnv;
export const readNumber: typeof api.readNumber = shared.readNumber;
export const readPointer: typeof api.readPointer = shared.readPointer;
export const referenceKernels: typeof api.referenceKernels = shared.referenceKernels;
export const registerWasmModule: typeof api.registerWasmModule = shared.registerWasmModule;
export const relaxedSimdEnabled: typeof api.relaxedSimdEnabled = shared.relaxedSimdEnabled;
export const requantizeConv2d: typeof api.requantizeConv2d = shared.requantizeConv2d;
export const requantizeLinear: typeof api.requantizeLinear = shared.requantizeLinear;
export const rightHandSides: typeof api.rightHandSides = shared.rightHandSides;
export const rint: typeof api.rint = shared.rint;
export const setParallelService: typeof api.setParallelService = shared.setParallelService;
export const setWasmLocation: typeof api.setWasmLocation = shared.setWasmLocation;
export const stackMatrices: typeof api.stackMatrices = shared.stackMatrices;
export const staticClaims: typeof api.staticClaims = shared.staticClaims;
export const toArrayBuffer: typeof api.toArrayBuffer = shared.toArrayBuffer;
export const userCacheDir: typeof api.userCacheDir = shared.userCacheDir;
export const validateDeclaration: typeof api.validateDeclaration = shared.validateDeclaration;
export const validateTask: typeof api.validateTask = shared.validateTask;
export const wasmKernelImports: typeof api.wasmKernelImports = shared.wasmKernelImports;
export const wasmModule: typeof api.wasmModule = shared.wasmModule;
export const wasmModuleUrl: typeof api.wasmModuleUrl = shared.wasmModuleUrl;
export const wasmModules: typeof api.wasmModules = shared.wasmModules;
export const wasmSimdAvailability: typeof api.wasmSimdAvailability = shared.wasmSimdAvailability;
export const writeCacheFile: typeof api.writeCacheFile = shared.writeCacheFile;
export const writeNumber: typeof api.writeNumber = shared.writeNumber;
export type Scratch = api.Scratch;
export type WasmCpuMemory = api.WasmCpuMemory;
export type WorkerError = api.WorkerError;
