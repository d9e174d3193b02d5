/**
 * @backplane/backend-mps: torch.backends.mps for Backplane, Apple GPUs through a native
 * helper (libbackplane_mps.dylib, prebuilt for darwin-arm64 and darwin-x64) that drives
 * Metal and MPSGraph. Importing it finds and opens the helper and registers the "mps"
 * backend: device "mps" memory, matmul, conv2d, softmax, logSoftmax,
 * scaledDotProductAttention, add, mul, relu and gelu on MPSGraph, and backends.mps.fallback
 * (PYTORCH_ENABLE_MPS_FALLBACK) for the rest. Off macOS every answer is a reason:
 * backends.mps.status().reason says why.
 */
import { registerBackend } from "@backplane/core/backend";
import { mpsBackend } from "./backend.ts";

registerBackend(mpsBackend);

export { MPS_BACKEND, type MpsApi, mpsApi, mpsBackend, mpsKernels } from "./backend.ts";
export { MpsError, MpsFreedBufferError, MpsOutOfMemoryError } from "./errors.ts";
export type { DeviceFacts, HelperMemoryStats } from "./helper.ts";
export { HELPER_ENV } from "./locate.ts";
export { type MpsHandle, mpsMemory } from "./memory.ts";
export { isMacosOrNewer, macosVersion } from "./os.ts";
export { currentState as mpsState, loadHelper, type MpsState } from "./state.ts";
export { VERSION } from "./version.ts";
