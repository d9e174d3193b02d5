/**
 * Loads this package's WASM modules into the CPU device's memory. Next to dist/ (and src/)
 * sits wasm/, with a threads build of each module (shared memory) and a plain one.
 * Servers read and compile the file synchronously, so the kernels are ready at import;
 * browsers fetch and instantiate asynchronously. Every module is registered with the core,
 * so parallel tasks (backend-openmp's workers) can call it too.
 */
import { cpuMemory, registerWasmModule, runtime, wasmKernelImports } from "@backplane/core";

const g = globalThis as any;

// Literal `new URL("...", import.meta.url)` per file, so bundlers (Vite, esbuild, webpack)
// see each .wasm file and emit it with the app.
const FILES: Record<string, () => [threads: URL, plain: URL]> = {
  gemm: () => [
    new URL("../wasm/gemm.wasm", import.meta.url),
    new URL("../wasm/gemm.nothreads.wasm", import.meta.url),
  ],
  kernels: () => [
    new URL("../wasm/kernels.wasm", import.meta.url),
    new URL("../wasm/kernels.nothreads.wasm", import.meta.url),
  ],
  attention: () => [
    new URL("../wasm/attention.wasm", import.meta.url),
    new URL("../wasm/attention.nothreads.wasm", import.meta.url),
  ],
};

export function wasmFileUrl(name: string): URL {
  const urls = FILES[name];
  if (!urls) throw new Error(`backend-cpu-mkl: no WASM module named ${name}`);
  const [threads, plain] = urls();
  return cpuMemory().shared ? threads : plain;
}

function readSync(url: URL): Uint8Array | undefined {
  if (url.protocol !== "file:") return undefined;
  if (g.Deno) return g.Deno.readFileSync(url);
  const fs = g.process?.getBuiltinModule?.("node:fs");
  const path = g.process?.getBuiltinModule?.("node:url")?.fileURLToPath(url);
  return fs && path ? fs.readFileSync(path) : undefined;
}

function register<T>(name: string, module: WebAssembly.Module, instance: WebAssembly.Instance): T {
  registerWasmModule(`backend-cpu-mkl/${name}`, module, instance);
  return instance.exports as T;
}

/** Instantiates module `name` synchronously where the runtime allows it, else undefined. */
export function loadWasmSync<T>(name: string): T | undefined {
  if (runtime().name === "browser") return undefined;
  const bytes = readSync(wasmFileUrl(name));
  if (!bytes) return undefined;
  const module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  return register<T>(
    name,
    module,
    new WebAssembly.Instance(module, wasmKernelImports(`backend-cpu-mkl/${name}`)),
  );
}

export async function loadWasm<T>(name: string): Promise<T> {
  const sync = loadWasmSync<T>(name);
  if (sync) return sync;
  const url = wasmFileUrl(name);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`could not fetch ${url.href}: HTTP ${response.status}`);
  const { module, instance } = await WebAssembly.instantiate(
    await response.arrayBuffer(),
    wasmKernelImports(`backend-cpu-mkl/${name}`),
  );
  return register<T>(name, module, instance);
}
