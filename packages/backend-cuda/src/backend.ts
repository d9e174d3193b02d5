/**
 * The two backends this package registers: "cuda" (backends.cuda: devices, memory, kernels,
 * the cuFFT plan cache, library preferences) and "cusparselt" (backends.cusparselt: version
 * and availability of cuSPARSELt).
 */

import { ArgumentError, getFlag, setFlag } from "@backplane/core";
import {
  type Availability,
  type BackendDefinition,
  type DeviceMemory,
  defineBackend,
} from "@backplane/core/backend";
import type { AllocatorStats, CachingAllocator } from "./allocator.ts";
import type { DeviceInfo } from "./driver.ts";
import { attentionKernels } from "./kernels/attention/kernels.ts";
import { matmulKernels } from "./kernels/blas/matmul.ts";
import { fftKernels } from "./kernels/fft/fft.ts";
import type { PlanCacheRegistry } from "./kernels/fft/plan-cache.ts";
import { PlanCache, planCacheRegistry } from "./kernels/fft/plan-cache.ts";
import { linalgKernels } from "./kernels/linalg/solver.ts";
import { createCudaMemory, deviceIndex } from "./memory.ts";
import { cudaVersionString } from "./native/load.ts";
import { ptxManifest, ptxStatus } from "./ptx.ts";
import type { FftPlan } from "./runtime.ts";
import type { CudaStatus } from "./state.ts";
import { cudaStatus, currentRuntime, loadLibraries, maybeRuntime, reprobe } from "./state.ts";
import { VERSION } from "./version.ts";

export const CUDA_BACKEND = "cuda";
export const CUSPARSELT_BACKEND = "cusparselt";
const PACKAGE = "@backplane/backend-cuda";

// Typed opaquely in the public API: a handle is the runtime's business.
export const cudaMemory: DeviceMemory<unknown> = createCudaMemory(currentRuntime);

const detachedCaches = new Map<number, PlanCache<FftPlan>>();

/** backends.cuda.cufftPlanCache: the runtime's per-device caches (empty ones without CUDA). */
export const cufftPlanCache: PlanCacheRegistry<FftPlan> = planCacheRegistry<FftPlan>(
  (d) => {
    const rt = maybeRuntime();
    if (rt) return rt.planCache(d);
    let c = detachedCaches.get(d);
    if (!c) detachedCaches.set(d, (c = new PlanCache<FftPlan>(d, () => undefined)));
    return c;
  },
  () => maybeRuntime()?.driver.currentDevice() ?? 0,
  () => cudaStatus().devices.length,
);

/**
 * The device an API call means: the current one when none is named. With a runtime, an index
 * past the last device is a DeviceError naming the device count (as torch raises), not an
 * empty allocator made for a device that does not exist.
 */
function device(index: number | string | undefined): number {
  const rt = maybeRuntime();
  if (index === undefined) return rt?.driver.currentDevice() ?? 0;
  const i = typeof index === "string" ? deviceIndex(index) : index;
  if (!Number.isInteger(i) || i < 0)
    throw new ArgumentError(`CUDA device index must be an integer >= 0, got ${String(index)}`);
  rt?.driver.device(i);
  return i;
}

function info(index?: number | string): DeviceInfo {
  return currentRuntime().driver.device(device(index));
}

export interface LibraryStatus {
  library: string;
  available: boolean;
  reason?: string;
  path?: string;
  version?: string;
}

/** Whether a linalg library can serve cuda.preferredLinalgLibrary (default: the flag's value). */
export function linalgLibraryStatus(lib?: "default" | "cusolver" | "magma"): LibraryStatus {
  const which = lib ?? (getFlag("cuda.preferredLinalgLibrary") as "default" | "cusolver" | "magma");
  const st = cudaStatus();
  if (which === "magma") {
    if (!st.magma.path)
      return {
        library: "magma",
        available: false,
        reason: `MAGMA is unavailable: ${st.magma.reason ?? "libmagma not found"}`,
      };
    return {
      library: "magma",
      available: true,
      path: st.magma.path,
      version: st.magma.version,
      reason: "libmagma is found, but Backplane has no MAGMA kernels: linalg runs on cuSOLVER",
    };
  }
  const rt = maybeRuntime();
  const solver = rt?.layer.info.cusolver;
  if (!st.available)
    return { library: "cusolver", available: false, reason: `CUDA is not available: ${st.reason}` };
  if (!rt?.layer.libs.cusolver)
    return {
      library: "cusolver",
      available: false,
      reason: solver?.reason ?? "cuSOLVER loads on first use (await backends.ready())",
    };
  return { library: "cusolver", available: true, path: solver?.path, version: solver?.version };
}

let warnedMagma = false;

function statsOf(index?: number | string): AllocatorStats {
  return currentRuntime().allocator(device(index)).stats();
}

/** Members added to backends.cuda (torch.backends.cuda and torch.cuda's device functions). */
export interface CudaApi {
  cufftPlanCache: PlanCacheRegistry<FftPlan>;
  preferredLinalgLibrary(b?: "default" | "cusolver" | "magma"): "default" | "cusolver" | "magma";
  linalgLibraryStatus: typeof linalgLibraryStatus;
  deviceCount(): number;
  getDeviceCapability(i?: number | string): [number, number];
  getDeviceName(i?: number | string): string;
  getDeviceProperties(i?: number | string): DeviceInfo;
  currentDevice(): number;
  setDevice(i: number | string): void;
  synchronize(i?: number | string): Promise<void>;
  memoryStats(i?: number | string): AllocatorStats;
  memoryAllocated(i?: number | string): number;
  memoryReserved(i?: number | string): number;
  maxMemoryAllocated(i?: number | string): number;
  resetPeakMemoryStats(i?: number | string): void;
  emptyCache(): void;
  memorySnapshot(i?: number | string): ReturnType<CachingAllocator["snapshot"]>;
  memGetInfo(i?: number | string): { free: number; total: number };
  diagnostics(): CudaStatus & {
    libraries: Record<string, unknown>;
    ptx: { built: boolean; reason?: string; nvcc?: string; modules?: string[] };
  };
  reprobe(): Promise<CudaStatus>;
}

/** Members added to backends.cuda. */
export const cudaApi: CudaApi = {
  cufftPlanCache,
  /** torch.backends.cuda.preferred_linalg_library; warns once when MAGMA cannot serve it. */
  preferredLinalgLibrary: (b?: "default" | "cusolver" | "magma") => {
    if (b !== undefined) setFlag("cuda.preferredLinalgLibrary", b);
    const cur = getFlag("cuda.preferredLinalgLibrary") as "default" | "cusolver" | "magma";
    if (cur === "magma" && !warnedMagma) {
      const s = linalgLibraryStatus("magma");
      if (!s.available) {
        warnedMagma = true;
        console.warn(`[backplane] preferredLinalgLibrary("magma"): ${s.reason}`);
      }
    }
    return cur;
  },
  linalgLibraryStatus,
  /** torch.cuda.device_count() */
  deviceCount: () => cudaStatus().devices.length,
  /** torch.cuda.get_device_capability(i): [major, minor]. */
  getDeviceCapability: (i?: number | string): [number, number] => {
    const d = info(i);
    return [d.major, d.minor];
  },
  getDeviceName: (i?: number | string) => info(i).name,
  getDeviceProperties: (i?: number | string) => ({ ...info(i) }),
  currentDevice: () => maybeRuntime()?.driver.currentDevice() ?? 0,
  setDevice: (i: number | string) => currentRuntime().driver.select(info(i).index),
  /** Waits for every enqueued copy and kernel on the device (a bad device rejects). */
  synchronize: async (i?: number | string) => currentRuntime().driver.synchronizeAsync(device(i)),
  /** torch.cuda.memory_stats() of the caching allocator. */
  memoryStats: statsOf,
  memoryAllocated: (i?: number | string) => statsOf(i).allocatedBytes.current,
  memoryReserved: (i?: number | string) => statsOf(i).reservedBytes.current,
  maxMemoryAllocated: (i?: number | string) => statsOf(i).allocatedBytes.peak,
  resetPeakMemoryStats: (i?: number | string) =>
    currentRuntime().allocator(device(i)).resetPeakStats(),
  /** torch.cuda.empty_cache(): gives unused cached segments back to the driver. */
  emptyCache: () => {
    const rt = maybeRuntime();
    for (const d of rt?.allocatorDevices() ?? []) rt!.allocator(d).emptyCache();
  },
  memorySnapshot: (i?: number | string) => currentRuntime().allocator(device(i)).snapshot(),
  /** Free and total memory of the device (cuMemGetInfo). */
  memGetInfo: (i?: number | string) => currentRuntime().driver.memGetInfo(device(i)),
  /** Everything the probe found: driver, runtime, devices, libraries, PTX. */
  diagnostics: () => {
    const st = cudaStatus();
    const rt = maybeRuntime();
    const m = ptxManifest();
    return {
      ...st,
      libraries: rt?.layer.info ?? {},
      ptx:
        typeof m === "string"
          ? { built: false, reason: m }
          : { built: ptxStatus().built, nvcc: m.nvcc, modules: Object.keys(m.modules) },
    };
  },
  /** Probes again (after installing a driver or changing a library path). */
  reprobe: () => reprobe(),
};

function runtimeVersion(): string | undefined {
  const st = cudaStatus();
  if (st.runtime && typeof st.runtime !== "string") return cudaVersionString(st.runtime.version);
  if (st.driverVersion) return cudaVersionString(st.driverVersion);
  return undefined;
}

export const cudaBackend: BackendDefinition = defineBackend({
  name: CUDA_BACKEND,
  namespaces: ["cuda"],
  packageName: PACKAGE,
  devices: ["cuda"],
  version: runtimeVersion,
  isBuilt: (): Availability => {
    const p = ptxStatus();
    return p.built ? { available: true } : { available: false, reason: p.reason };
  },
  isAvailable: (): Availability => {
    const st = cudaStatus();
    // detail carries the search report (every path tried) behind the short reason.
    return st.available
      ? { available: true }
      : { available: false, reason: st.reason, detail: st.detail };
  },
  capability: () => {
    const st = cudaStatus();
    const rt = maybeRuntime();
    return {
      devices: st.devices.map(
        (d) =>
          `cuda:${d.index} ${d.name} (sm_${d.major}${d.minor}, ${Math.round(d.totalMemory / 2 ** 30)} GiB)`,
      ),
      driver: st.driverVersion ? `CUDA ${cudaVersionString(st.driverVersion)}` : undefined,
      libraries: Object.fromEntries(
        Object.entries(rt?.layer.info ?? {}).map(([k, v]) => [k, v.version ?? v.reason ?? v.path]),
      ),
      package: VERSION,
    };
  },
  kernels: [...matmulKernels(), ...attentionKernels(), ...fftKernels(), ...linalgKernels()],
  memories: [cudaMemory],
  init: () => loadLibraries(),
  api: { cuda: { ...cudaApi } },
});

function cusparseltAvailability(): Availability {
  const st = cudaStatus();
  const lib = st.cusparseLt;
  const reasons: string[] = [];
  if (!lib.path)
    reasons.push(`${lib.reason ?? "libcusparseLt.so.0 not found"} (cuSPARSELt is not installed)`);
  if (!st.available) reasons.push(`CUDA is not available: ${st.reason}`);
  if (!reasons.length) return { available: true };
  // detail: the search reports behind the short reasons (every path tried).
  const detail = [lib.path ? undefined : lib.detail, st.available ? undefined : st.detail]
    .filter((d) => d !== undefined)
    .join("\n");
  return { available: false, reason: reasons.join("; "), ...(detail ? { detail } : {}) };
}

export const cusparseltBackend: BackendDefinition = defineBackend({
  name: CUSPARSELT_BACKEND,
  namespaces: ["cusparselt"],
  packageName: PACKAGE,
  devices: ["cuda"],
  /** torch.backends.cusparselt.version(): the library's version, undefined when absent. */
  version: () => cudaStatus().cusparseLt.version,
  isAvailable: cusparseltAvailability,
  capability: () => ({
    path: cudaStatus().cusparseLt.path,
    version: cudaStatus().cusparseLt.version,
  }),
});
