/**
 * @backplane/backend-cudnn: torch.backends.cudnn for Backplane. Importing it opens
 * libcudnn.so.9 (a pip install of nvidia-cudnn-cu13, the system path, or
 * BACKPLANE_CUDNN_PATH) and registers the "cudnn" backend: conv2d and
 * scaledDotProductAttention (CUDNN_ATTENTION) kernels on "cuda", built as cuDNN operation
 * graphs, with cudnn.enabled, benchmark, benchmarkLimit, deterministic and allowTf32
 * steering the plan. It runs on @backplane/backend-cuda's devices through core's device
 * contract; without a GPU, backends.cudnn.status().reason says why.
 */
import { registerBackend } from "@backplane/core/backend";
import { cudnnBackend } from "./backend.ts";

registerBackend(cudnnBackend);

export { CUDNN_BACKEND, type CudnnApi, cudnnApi } from "./backend.ts";
export { CudnnError } from "./errors.ts";
export type { PlanSummary } from "./plan/cache.ts";
export { type LibraryStatus, libraryStatus } from "./state.ts";
export { VERSION } from "./version.ts";
