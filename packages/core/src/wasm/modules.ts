/**
 * The WASM kernel modules loaded into the CPU memory, by id ("backend-nnpack/conv"): the
 * compiled module, so every worker thread can instantiate it on the same memory, and this
 * thread's instance, so a parallel-for without workers can run it here.
 */
import type { WasmInstance, WasmModule } from "./types.ts";

/** A WASM module every thread can instantiate: its compiled form and this thread's instance. */
export interface WasmModuleEntry {
  id: string;
  module: WasmModule;
  instance: WasmInstance;
}

const modules = new Map<string, WasmModuleEntry>();
const moduleListeners = new Set<(e: WasmModuleEntry) => void>();

/** Makes a module's exports callable by parallel tasks (every WASM kernel package does this). */
export function registerWasmModule(id: string, module: WasmModule, instance: WasmInstance): void {
  const entry = { id, module, instance };
  modules.set(id, entry);
  for (const l of moduleListeners) l(entry);
}
/** A registered module by id (undefined when none is). */
export function wasmModule(id: string): WasmModuleEntry | undefined {
  return modules.get(id);
}
export function wasmModules(): WasmModuleEntry[] {
  return [...modules.values()];
}
/** Called for every module registered from now on (the pool forwards them to its workers). */
export function onWasmModule(listener: (e: WasmModuleEntry) => void): () => void {
  moduleListeners.add(listener);
  return () => moduleListeners.delete(listener);
}
