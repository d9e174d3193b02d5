/**
 * The "cudnn" backend (backends.cudnn): cuDNN's version and availability, the conv2d and
 * attention kernels on "cuda", and the plan cache. It reads cudnn.enabled (through the
 * kernels' flags), benchmark, benchmarkLimit, deterministic and allowTf32 (plan choice).
 */
import { type BackendDefinition, type CudnnMembers, defineBackend } from "@backplane/core/backend";
import { convKernels } from "./kernels/conv2d.ts";
import { sdpaKernels } from "./kernels/sdpa.ts";
import { libraryStatus, maybeRuntime, unavailableReason, versionText } from "./state.ts";
import { VERSION } from "./version.ts";

export const CUDNN_BACKEND = "cudnn";

/** Members added to backends.cudnn: the core's CudnnMembers, so backends.cudnn is typed with them. */
export type CudnnApi = CudnnMembers;

export const cudnnApi: CudnnApi = {
  diagnostics: () => ({ ...libraryStatus(), planCacheSize: maybeRuntime()?.plans.size ?? 0 }),
  clearPlanCache: () => maybeRuntime()?.plans.clear(),
  plans: () => maybeRuntime()?.plans.summaries() ?? [],
};

export const cudnnBackend: BackendDefinition = defineBackend({
  name: CUDNN_BACKEND,
  namespaces: ["cudnn"],
  packageName: "@backplane/backend-cudnn",
  devices: ["cuda"],
  /** torch.backends.cudnn.version(): the library's, 92400 for 9.24.0 (undefined when absent). */
  version: () => {
    const v = libraryStatus().version;
    return v === undefined ? undefined : versionText(v);
  },
  versionNumber: () => libraryStatus().version,
  reads: [
    "cudnn.benchmark",
    "cudnn.benchmarkLimit",
    "cudnn.deterministic",
    "cudnn.allowTf32",
    "cudnn.enabled",
  ],
  isBuilt: () => ({ available: true }),
  isAvailable: () => {
    const why = unavailableReason();
    if (!why) return { available: true };
    // Without the library, detail is its search report (every path tried).
    return maybeRuntime()
      ? { available: false, reason: why }
      : { available: false, reason: why, detail: libraryStatus().detail };
  },
  capability: () => {
    const s = libraryStatus();
    return {
      library: s.path,
      version: s.version === undefined ? undefined : versionText(s.version),
      cudart: s.cudartVersion,
      cublasLt: s.cublasLt?.path ?? s.cublasLt?.reason,
      package: VERSION,
    };
  },
  kernels: [...convKernels(), ...sdpaKernels()],
  api: { cudnn: { ...cudnnApi } },
});
