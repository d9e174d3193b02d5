/**
 * The WASM family: SIMD kernels that run wherever WebAssembly SIMD does, browsers
 * included. It answers for `backends.mkldnn` (torch's own CPU kernels, as oneDNN is for
 * torch): `mkldnn.enabled` gates these kernels and `mkldnn.verbose` traces them.
 */
import { type BackendDefinition, cpuMemory, defineBackend, runtime } from "@backplane/core";
import { loadWasm, loadWasmSync } from "../wasm-loader.ts";
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
    if (gemm && kernels) {
      modules.gemm = gemm;
      modules.kernels = kernels;
      return;
    }
    return Promise.all([loadWasm<GemmModule>("gemm"), loadWasm<KernelsModule>("kernels")]).then(
      ([g, k]) => {
        modules.gemm = g;
        modules.kernels = k;
      },
    );
  },
  capability: () => ({
    isa: "WASM_SIMD128",
    sharedMemory: cpuMemory().shared,
    memory: cpuMemory().stats(),
  }),
  kernels: wasmKernels(),
});
