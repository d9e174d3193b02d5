/**
 * backend-openmp's own WASM module, "backend-openmp/runtime" (assembly/runtime.ts):
 * deterministic chunked sums, and the small helpers the pool's tests use. Loaded by the
 * core's loader (synchronously on servers, fetched in browsers), which registers it, so
 * every worker instantiates it too.
 */
import { ArgumentError, Tensor } from "@backplane/core";
import {
  cpuMemory,
  cpuThreads,
  loadWasmModule,
  loadWasmModuleSync,
  parallelFor,
  type WasmModuleFiles,
} from "@backplane/core/cpu";

export const RUNTIME_MODULE = "backend-openmp/runtime";

type Ptr = number;
/** The exports of runtime.wasm (pointers are byte offsets into the CPU memory). */
export interface RuntimeExports {
  sumChunksF64(values: Ptr, n: number, chunk: number, out: Ptr, c0: number, count: number): void;
  sumChunksF32(values: Ptr, n: number, chunk: number, out: Ptr, c0: number, count: number): void;
  sumF64(values: Ptr, n: number): number;
  fillF64(x: Ptr, count: number, value: number): void;
  scaleF64(x: Ptr, count: number, factor: number): void;
  addF64(x: Ptr, count: number, value: number): void;
  iotaF64(x: Ptr, i0: number, count: number): void;
  trap(): void;
  trapOffCaller(thread: number, iters: number, scratch: Ptr): void;
}

let loaded: RuntimeExports | undefined;

/** The two builds, as literal URLs so bundlers emit them (this file sits directly under src/). */
const RUNTIME_WASM: WasmModuleFiles = {
  id: RUNTIME_MODULE,
  threads: new URL("../wasm/runtime.wasm", import.meta.url),
  plain: new URL("../wasm/runtime.nothreads.wasm", import.meta.url),
};

/** Instantiates the module synchronously where the runtime can read files (servers). */
export function loadRuntimeModuleSync(): RuntimeExports | undefined {
  loaded ??= loadWasmModuleSync<RuntimeExports>(RUNTIME_WASM);
  return loaded;
}

/** Instantiates the module (fetching it in browsers). */
export async function loadRuntimeModule(): Promise<RuntimeExports> {
  loaded ??= await loadWasmModule<RuntimeExports>(RUNTIME_WASM);
  return loaded;
}

/** The module's exports on this thread; throws when it is not loaded yet (await backends.ready()). */
export function runtimeModule(): RuntimeExports {
  const mod = loaded ?? loadRuntimeModuleSync();
  if (!mod)
    throw new ArgumentError(
      `${RUNTIME_MODULE} is not loaded yet; await loadRuntimeModule() (or backends.ready("openmp")) first`,
    );
  return mod;
}

/** Values summed per partial sum by parallelSum (the chunk boundaries of the reduction). */
export const SUM_CHUNK = 4096;

export interface ParallelSumOptions {
  /** Threads to use (default cpuThreads()). The result does not depend on it. */
  threads?: number;
  /** Values per partial sum (default SUM_CHUNK). The result does depend on it. */
  chunk?: number;
}

/**
 * Sum of float64 (or float32, accumulated in float64) values with the pool: partial sums
 * of fixed chunks of `chunk` values, then their left-to-right sum on this thread. The
 * chunk boundaries never depend on the thread count, so the result is bit-identical
 * for 1, 2 or any number of threads.
 * `values`: a contiguous float32/float64 CPU tensor, or a Float64Array/Float32Array
 * (used in place when it is a view of cpuMemory().memory.buffer, else copied there).
 */
export function parallelSum(
  values: Float64Array | Float32Array | Tensor,
  options: ParallelSumOptions = {},
): number {
  if (options === null || typeof options !== "object")
    throw new ArgumentError("parallelSum: options must be an object ({ threads?, chunk? })");
  const mod = runtimeModule();
  const mem = cpuMemory();
  const chunk = options.chunk ?? SUM_CHUNK;
  if (!Number.isInteger(chunk) || chunk < 1)
    throw new ArgumentError(`parallelSum: chunk must be an integer >= 1, got ${String(chunk)}`);
  // (checked here too: a NaN thread count made the pool run no chunk and the sum 0)
  const threads = options.threads ?? cpuThreads();
  if (!Number.isInteger(threads) || threads < 1)
    throw new ArgumentError(
      `parallelSum: threads must be an integer >= 1, got ${String(options.threads)}`,
    );
  let ptr: number;
  let n: number;
  let f32: boolean;
  let copy: number | undefined;
  if (values instanceof Tensor) {
    if (values.dtype !== "float64" && values.dtype !== "float32")
      throw new ArgumentError(`parallelSum: float32 or float64 values, got ${values.dtype}`);
    if (values.storage.memory !== mem || !values.isContiguous)
      throw new ArgumentError(
        "parallelSum: the tensor must be contiguous and in the CPU memory (a cpu tensor)",
      );
    values.assertAlive("values", "parallelSum");
    f32 = values.dtype === "float32";
    ptr = (values.storage.handle as number) + values.offset * (f32 ? 4 : 8);
    n = values.numel;
  } else if (values instanceof Float64Array || values instanceof Float32Array) {
    f32 = values instanceof Float32Array;
    n = values.length;
    if (values.buffer === mem.memory.buffer) ptr = values.byteOffset;
    else {
      ptr = copy = mem.allocate(values.byteLength);
      const dst = f32
        ? new Float32Array(mem.memory.buffer, ptr, n)
        : new Float64Array(mem.memory.buffer, ptr, n);
      dst.set(values);
    }
  } else
    throw new ArgumentError("parallelSum: values must be a Float64Array, Float32Array or Tensor");
  if (n === 0) {
    if (copy !== undefined) mem.free(copy);
    return 0;
  }
  // A chunk of n or more is one chunk of n: the same sum, and a length the WASM's i32
  // arguments hold (2^31 wrapped negative there, and the sum came out 0).
  const size = Math.min(chunk, n);
  const parts = Math.ceil(n / size);
  const out = mem.allocate(parts * 8);
  try {
    parallelFor(
      {
        module: RUNTIME_MODULE,
        fn: f32 ? "sumChunksF32" : "sumChunksF64",
        args: [ptr, n, size, out, 0, 0],
        step: [0, 0, 0, 0, 1, 0],
        countArg: 5,
        items: parts,
        schedule: "dynamic",
        chunk: Math.max(1, Math.ceil(parts / (4 * Math.max(1, threads)))),
        label: "parallelSum",
      },
      threads,
    );
    return mod.sumF64(out, parts);
  } finally {
    mem.free(out);
    if (copy !== undefined) mem.free(copy);
  }
}
