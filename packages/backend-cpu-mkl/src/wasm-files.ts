/**
 * This package's WASM modules, each as a literal `new URL("../wasm/x.wasm",
 * import.meta.url)` pair (threads and plain builds) so bundlers see and emit every file.
 * The core's loader (loadWasmModule) picks the build, claims the static data and
 * instantiates the module on the CPU memory. This file sits directly under src/ so the
 * relative path is the same from src/ and from the bundled dist/.
 */
import type { WasmModuleFiles } from "@backplane/core/cpu";

export const GEMM_WASM: WasmModuleFiles = {
  id: "backend-cpu-mkl/gemm",
  threads: new URL("../wasm/gemm.wasm", import.meta.url),
  plain: new URL("../wasm/gemm.nothreads.wasm", import.meta.url),
  relaxed: {
    threads: new URL("../wasm/gemm.relaxed.wasm", import.meta.url),
    plain: new URL("../wasm/gemm.relaxed.nothreads.wasm", import.meta.url),
  },
};
export const KERNELS_WASM: WasmModuleFiles = {
  id: "backend-cpu-mkl/kernels",
  threads: new URL("../wasm/kernels.wasm", import.meta.url),
  plain: new URL("../wasm/kernels.nothreads.wasm", import.meta.url),
};
export const ATTENTION_WASM: WasmModuleFiles = {
  id: "backend-cpu-mkl/attention",
  threads: new URL("../wasm/attention.wasm", import.meta.url),
  plain: new URL("../wasm/attention.nothreads.wasm", import.meta.url),
};
