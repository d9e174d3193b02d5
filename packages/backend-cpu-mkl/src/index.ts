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
import { ready, registerBackend } from "@backplane/core";
import { NATIVE_BACKEND, nativeBackend } from "./native/backend.ts";

registerBackend(nativeBackend);
// Start loading the native library now, so it is usually ready by first use.
void ready(NATIVE_BACKEND).catch(() => {});

export { configureNativeSearch, NATIVE_BACKEND } from "./native/backend.ts";
export { BLAS_ORDER, type BlasName, type LoadedBlas, loadBlas } from "./native/library.ts";
