import { type BackendDefinition, defineBackend } from "@backplane/core/backend";
import {
  cpuMemory,
  loadWasmModule,
  loadWasmModuleSync,
  wasmSimdAvailability,
} from "@backplane/core/cpu";
import { modules, wasmKernels } from "../kernels/wasm.ts";
import { type AttentionModule, attentionModule } from "../kernels/wasm-attention.ts";
import { ATTENTION_WASM, GEMM_WASM, KERNELS_WASM } from "../wasm-files.ts";
import type { GemmModule, KernelsModule } from "./exports.ts";

export const WASM_BACKEND = "cpu-wasm";

export const wasmBackend: BackendDefinition = defineBackend({
  name: WASM_BACKEND,
  packageName: "@backplane/backend-cpu-mkl",
  devices: ["cpu"],
  version: () => "0.1.0",
  isAvailable: wasmSimdAvailability,
  init() {
    const gemm = loadWasmModuleSync<GemmModule>(GEMM_WASM);
    const kernels = loadWasmModuleSync<KernelsModule>(KERNELS_WASM);
    const attention = loadWasmModuleSync<AttentionModule>(ATTENTION_WASM);
    if (gemm && kernels && attention) {
      modules.gemm = gemm;
      modules.kernels = kernels;
      attentionModule.current = attention;
      return;
    }
    return Promise.all([
      loadWasmModule<GemmModule>(GEMM_WASM),
      loadWasmModule<KernelsModule>(KERNELS_WASM),
      loadWasmModule<AttentionModule>(ATTENTION_WASM),
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
