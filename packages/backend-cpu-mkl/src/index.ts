/**
 * @backplane/backend-cpu-mkl: fast CPU linear algebra everywhere. Importing it registers
 * two kernel families for device cpu:
 * - "cpu-blas": the best native BLAS/LAPACK on the machine over FFI (Bun, Deno, Node);
 *   answers for backends.mkl;
 * - "cpu-wasm": WASM SIMD kernels that run in every runtime, browsers included; answers
 *   for backends.mkldnn.
 * The dispatcher prefers native, then WASM, then the core's reference kernels.
 * Native loading is asynchronous: `await backends.ready()` before timing anything.
 */
import { initBackends, registerBackend } from "@backplane/core/backend";
import { NATIVE_BACKEND, nativeBackend } from "./native/backend.ts";
import { WASM_BACKEND, wasmBackend } from "./wasm/backend.ts";

registerBackend(wasmBackend);
registerBackend(nativeBackend);
// Start initialising now (WASM is ready at once on servers; the native library loads in
// the background), so both are usually ready by first use.
void initBackends(WASM_BACKEND, NATIVE_BACKEND).catch(() => {});

export { configureNativeSearch, NATIVE_BACKEND } from "./native/backend.ts";
export { WASM_BACKEND } from "./wasm/backend.ts";
