/**
 * @backplane/backend-cpu-mkl: fast CPU linear algebra everywhere. Importing it registers
 * three kernel families for device cpu:
 * - "cpu-blas": the best native BLAS/LAPACK on the machine over FFI (Bun, Deno, Node);
 *   answers for backends.mkl;
 * - "cpu-wasm": WASM SIMD kernels that run in every runtime, browsers included;
 * - "cpu-dnnl": oneDNN over FFI where libdnnl.so.2 is installed (conv2d, matmul, fused
 *   attention, the onednn quantized engine); answers for backends.mkldnn.
 * The dispatcher prefers the native families (BLAS, oneDNN), then WASM, then the core's
 * reference kernels, and the core's calibration reorders them by what they measure on the
 * machine.
 * Native loading is asynchronous: `await backends.ready()` before timing anything.
 */
import { initBackends, registerBackend } from "@backplane/core/backend";
import { DNNL_BACKEND, dnnlBackend } from "./dnnl/backend.ts";
import { NATIVE_BACKEND, nativeBackend } from "./native/backend.ts";
import { WASM_BACKEND, wasmBackend } from "./wasm/backend.ts";

registerBackend(wasmBackend);
registerBackend(nativeBackend);
registerBackend(dnnlBackend);
// Start initialising now (WASM is ready at once on servers; the native libraries load in
// the background), so all three are usually ready by first use.
void initBackends(WASM_BACKEND, NATIVE_BACKEND, DNNL_BACKEND).catch(() => {});

export { configureDnnlSearch, DNNL_BACKEND } from "./dnnl/backend.ts";

export { configureNativeSearch, NATIVE_BACKEND } from "./native/backend.ts";
export { WASM_BACKEND } from "./wasm/backend.ts";
