/**
 * Loads the "conv" WASM module (wasm/conv.wasm: shared memory, threads; conv.nothreads.wasm:
 * plain memory) into the CPU device's memory and registers it with the core, so parallel
 * tasks (backend-openmp's workers) can call it too. Servers read and compile the file
 * synchronously, so the kernels are ready at import; browsers fetch it.
 */
import { cpuMemory, registerWasmModule, runtime, wasmKernelImports } from "@backplane/core";

/** The id parallel tasks name the module by. */
export const MODULE_ID = "backend-nnpack/conv";

type Ptr = number;
type Fn = (...args: number[]) => void;

/** The exports of assembly/conv.ts (pointers are byte offsets into the CPU memory). */
export interface ConvModule {
  pack_c4: Fn;
  wt8_input: Fn;
  wt8_kernel: Fn;
  wt8_output: Fn;
  wt6_input: Fn;
  wt6_kernel: Fn;
  wt6_output: Fn;
  ft_input: Fn;
  ft_kernel: Fn;
  ft_output: Fn;
  im2col_f32: Fn;
  im2col_f64: Fn;
  bias_f32: Fn;
  bias_f64: Fn;
  dw_f32: Fn;
  dw_f64: Fn;
  dw_work_bytes(
    outH: number,
    outW: number,
    kh: number,
    kw: number,
    sh: number,
    sw: number,
    dh: number,
    dw: number,
  ): number;
  equal_bytes(a: Ptr, b: Ptr, n: number): number;
}

/** Per-thread work of the FFT transforms (assembly/conv.ts FT_WORK_BYTES). */
export const FT_WORK_BYTES = 13440;

export const loaded: { conv?: ConvModule } = {};

const g = globalThis as any;

function fileUrl(): URL {
  const file = `conv${cpuMemory().shared ? "" : ".nothreads"}.wasm`;
  return new URL(`../wasm/${file}`, import.meta.url);
}

function readSync(url: URL): Uint8Array | undefined {
  if (url.protocol !== "file:") return undefined;
  if (g.Deno) return g.Deno.readFileSync(url);
  const fs = g.process?.getBuiltinModule?.("node:fs");
  const path = g.process?.getBuiltinModule?.("node:url")?.fileURLToPath(url);
  return fs && path ? fs.readFileSync(path) : undefined;
}

function register(module: WebAssembly.Module, instance: WebAssembly.Instance): ConvModule {
  registerWasmModule(MODULE_ID, module, instance);
  loaded.conv = instance.exports as unknown as ConvModule;
  return loaded.conv;
}

/** Instantiates the module synchronously where the runtime allows it, else undefined. */
export function loadConvSync(): ConvModule | undefined {
  if (runtime().name === "browser") return undefined;
  const bytes = readSync(fileUrl());
  if (!bytes) return undefined;
  const module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  return register(module, new WebAssembly.Instance(module, wasmKernelImports(MODULE_ID)));
}

export async function loadConv(): Promise<ConvModule> {
  const sync = loadConvSync();
  if (sync) return sync;
  const url = fileUrl();
  const response = await fetch(url);
  if (!response.ok) throw new Error(`could not fetch ${url.href}: HTTP ${response.status}`);
  const { module, instance } = await WebAssembly.instantiate(
    await response.arrayBuffer(),
    wasmKernelImports(MODULE_ID),
  );
  return register(module, instance);
}

/** The loaded module (kernels run only after the backend initialised). */
export function conv(): ConvModule {
  if (!loaded.conv) throw new Error("backend-nnpack: a kernel ran before the WASM module loaded");
  return loaded.conv;
}
