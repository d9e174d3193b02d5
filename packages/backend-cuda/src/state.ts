/**
 * What this machine offers, found once when the package is imported (a cheap probe: dlopen,
 * cuInit, device queries; no context is created), and the CUDA runtime kernels use.
 * The math libraries load later, in the backend's asynchronous init.
 */
import { DeviceError, runtime as jsRuntime, refreshAvailability } from "@backplane/core";
import type { DeviceInfo } from "./driver.ts";
import { CudaError } from "./errors.ts";
import type { CudaLayer } from "./layer.ts";
import {
  cudaVersionString,
  FfiLayer,
  loadMathLibraries,
  type OptionalLibrary,
  openDriverLayer,
  probeCusparseLt,
  probeMagma,
  probeRuntime,
  type RuntimeProbe,
} from "./native/load.ts";
import { CudaRuntime } from "./runtime.ts";

export interface CudaStatus {
  available: boolean;
  /** Why CUDA cannot be used here (when not available). */
  reason?: string;
  /** The full search report behind the reason. */
  detail?: string;
  driverPath?: string;
  /** cuDriverGetVersion, e.g. 13000. */
  driverVersion?: number;
  /** What libcudart says, or why it did not load. */
  runtime?: RuntimeProbe | string;
  devices: DeviceInfo[];
  cusparseLt: OptionalLibrary;
  magma: OptionalLibrary;
  /** Set when a test installed a RecordingLayer. */
  recording?: boolean;
}

let status: CudaStatus = {
  available: false,
  reason: "not probed yet",
  devices: [],
  cusparseLt: {},
  magma: {},
};
let runtime: CudaRuntime | undefined;
let librariesLoaded: Promise<void> | undefined;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function noDriverReason(driverReason: string, rt: RuntimeProbe | string): string {
  const driver = /not found$/.test(driverReason)
    ? `${driverReason}: the NVIDIA driver is not installed`
    : driverReason;
  if (typeof rt === "string") return driver;
  const file = rt.path.split(/[\\/]/).pop();
  const said =
    rt.deviceCountStatus === 0
      ? "cudaGetDeviceCount succeeds"
      : `${rt.deviceCountName} (${rt.deviceCountStatus}): ${rt.deviceCountText}`;
  return `${said} (${file}, CUDA runtime ${cudaVersionString(rt.version)}, loads; ${driver})`;
}

/** Probes the machine (called once at import; again by reprobe()). Never throws. */
export async function probe(): Promise<CudaStatus> {
  const [cusparseLt, magma] = await Promise.all([
    probeCusparseLt().catch((e) => ({ reason: message(e) })),
    probeMagma().catch((e) => ({ reason: message(e) })),
  ]);
  const base = { devices: [] as DeviceInfo[], cusparseLt, magma };
  const js = jsRuntime();
  if (js.platform === "darwin") {
    return { ...base, available: false, reason: "CUDA is not supported on macOS" };
  }
  const opened = await openDriverLayer().catch((e) => ({
    ok: false as const,
    reason: message(e),
    detail: message(e),
  }));
  if (!opened.ok) {
    const rt = await probeRuntime().catch((e) => message(e));
    return {
      ...base,
      available: false,
      reason: noDriverReason(opened.reason, rt),
      detail: opened.detail,
      runtime: rt,
    };
  }
  const layer = opened.layer;
  const rt = new CudaRuntime(layer);
  try {
    const count = rt.driver.deviceCount();
    const driverVersion = rt.driver.driverVersion();
    if (count === 0) {
      return {
        ...base,
        available: false,
        reason: `no CUDA device: cuDeviceGetCount found 0 (driver ${layer.path}, CUDA ${cudaVersionString(driverVersion)})`,
        driverPath: layer.path,
        driverVersion,
      };
    }
    runtime = rt;
    return {
      ...base,
      available: true,
      driverPath: layer.path,
      driverVersion,
      devices: rt.driver.devices(),
    };
  } catch (e) {
    const reason = e instanceof CudaError ? e.message : `CUDA driver probe failed: ${message(e)}`;
    return { ...base, available: false, reason, driverPath: layer.path };
  }
}

/** Runs the probe and makes its answer current. */
export async function reprobe(): Promise<CudaStatus> {
  runtime?.release();
  runtime = undefined;
  librariesLoaded = undefined;
  status = await probe();
  refreshAvailability();
  return status;
}

export function cudaStatus(): CudaStatus {
  return status;
}

/** The runtime kernels and the "cuda" memory use; a DeviceError with the reason when there is none. */
export function currentRuntime(): CudaRuntime {
  if (runtime) return runtime;
  throw new DeviceError(`CUDA is not available: ${status.reason ?? "unknown reason"}`);
}

export function maybeRuntime(): CudaRuntime | undefined {
  return runtime;
}

/** Loads cuBLAS, cuBLASLt, cuFFT and cuSOLVER (once). */
export function loadLibraries(): Promise<void> {
  if (!runtime || !(runtime.layer instanceof FfiLayer)) return Promise.resolve();
  librariesLoaded ??= loadMathLibraries(runtime.layer);
  return librariesLoaded;
}

/**
 * Replaces the runtime with one over `layer` (a RecordingLayer in tests): CUDA reads as
 * available with the layer's devices. Returns the function that restores the previous state.
 */
export function installLayer(layer: CudaLayer): () => void {
  const saved = { status, runtime, librariesLoaded };
  const rt = new CudaRuntime(layer);
  runtime = rt;
  librariesLoaded = Promise.resolve();
  status = {
    available: true,
    devices: rt.driver.devices(),
    driverVersion: rt.driver.driverVersion(),
    driverPath: "(recording layer)",
    cusparseLt: status.cusparseLt,
    magma: status.magma,
    recording: true,
  };
  refreshAvailability();
  return () => {
    status = saved.status;
    runtime = saved.runtime;
    librariesLoaded = saved.librariesLoaded;
    refreshAvailability();
  };
}

status = await probe();
