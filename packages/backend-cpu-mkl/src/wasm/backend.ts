/**
 * The WASM family: SIMD kernels that run wherever WebAssembly SIMD does, browsers
 * included. It answers for `backends.mkldnn` (torch's own CPU kernels, as oneDNN is for
 * torch): `mkldnn.enabled` gates these kernels and `mkldnn.verbose` traces them.
 */
import { type BackendDefinition, cpuMemory, defineBackend, runtime } from "@backplane/core";
import { loadWasm, loadWasmSync } from "../wasm-loader.ts";
import { type AttentionModule, attentionModule } from "./attention.ts";
import type { GemmModule, KernelsModule } from "./exports.ts";
import { modules, wasmKernels } from "./kernels.ts";

export const WASM_BACKEND = "cpu-wasm";

function available(): { available: boolean; reason?: string } {
  const rt = runtime();
  if (!rt.wasm) return { available: false, reason: "this runtime has no WebAssembly" };
  if (!rt.wasmSimd)
    return {
      available: false,
      reason: "this runtime's WebAssembly has no SIMD (fixed-width SIMD128 is required)",
    };
  try {
    cpuMemory();
  } catch (e) {
    return { available: false, reason: (e as Error).message };
  }
  return { available: true };
}

export const wasmBackend: BackendDefinition = defineBackend({
  name: WASM_BACKEND,
  namespaces: ["mkldnn"],
  packageName: "@backplane/backend-cpu-mkl",
  devices: ["cpu"],
  version: () => "0.1.0",
  isAvailable: available,
  init() {
    const gemm = loadWasmSync<GemmModule>("gemm");
    const kernels = loadWasmSync<KernelsModule>("kernels");
    const attention = loadWasmSync<AttentionModule>("attention");
    if (gemm && kernels && attention) {
      modules.gemm = gemm;
      modules.kernels = kernels;
      attentionModule.current = attention;
      return;
    }
    return Promise.all([
      loadWasm<GemmModule>("gemm"),
      loadWasm<KernelsModule>("kernels"),
      loadWasm<AttentionModule>("attention"),
    ]).then(([g, k, a]) => {
      modules.gemm = g;
      modules.kernels = k;
      attentionModule.current = a;
    });
  },
  capability: () => ({
    isa: "WASM_SIMD128",
    sharedMemory: cpuMemory().shared,
    memory: cpuMemory().stats(),
  }),
  kernels: wasmKernels(),
});
