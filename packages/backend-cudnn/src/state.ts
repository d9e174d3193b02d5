/**
 * What this machine offers cuDNN, found once at import: the library (path, version, the
 * CUDA runtime it was built for) and libcublasLt beside it (cuDNN's engine code calls into
 * cuBLASLt and aborts the process when it is missing, so no engine query runs without it).
 * Availability adds what only holds at run time: a "cuda" device context (backend-cuda),
 * a driver and a device, and a cuDNN handle.
 */
import { refreshAvailability } from "@backplane/core";
import { type CudnnLibraryStatus, deviceContext } from "@backplane/core/backend";
import { defaultSearchDirs, hostInfo, openLibrary } from "@backplane/core/cpu";
import { FfiLayer } from "./ffi-layer.ts";
import type { CudnnLayer } from "./layer.ts";
import { CUDNN_ENV, openCudnn } from "./native/load.ts";
import { CudnnRuntime } from "./runtime.ts";

/** cuDNN 9 is the graph API this package speaks. */
export const MIN_VERSION = 90000;

/** Where libcudnn was found, its version, or why not (the core's type: backends.cudnn.diagnostics()). */
export type LibraryStatus = CudnnLibraryStatus;

let library: LibraryStatus = { reason: "not probed yet" };
let runtime: CudnnRuntime | undefined;

/** "9.24.0" from 92400. */
export function versionText(v: number): string {
  return `${Math.floor(v / 10000)}.${Math.floor((v % 10000) / 100)}.${v % 100}`;
}

const INSTALL = `pip install nvidia-cudnn-cu13 (or -cu12), or set ${CUDNN_ENV} to libcudnn.so.9`;

/** size_t cublasLtGetVersion(void): the one cuBLASLt symbol opened here (test/headers.test.ts checks it). */
export const CUBLASLT_VERSION_DECL = {
  cublasLtGetVersion: { args: [], returns: "usize" },
} as const;

/** libcublasLt where cuDNN's RUNPATH finds it (pip's layout beside nvidia/cudnn), pip, or the system. */
async function findCublasLt(cudnnPath: string): Promise<{ path?: string; reason?: string }> {
  const root = cudnnPath.replace(/\/cudnn\/lib\/[^/]*$/, "");
  const beside = root === cudnnPath ? [] : [`${root}/cu13/lib`, `${root}/cublas/lib`];
  const r = await openLibrary(
    {
      name: "cublasLt",
      candidates: ["cublasLt"],
      versions: ["13", "12"],
      env: "BACKPLANE_CUBLASLT_PATH",
      pip: ["nvidia/cu13/lib", "nvidia/cublas/lib"],
    },
    CUBLASLT_VERSION_DECL,
    { searchPaths: [...beside, ...defaultSearchDirs(hostInfo())] },
  );
  // The loader's report names every path tried.
  return r.ok ? { path: r.path } : { reason: r.reason };
}

/** Opens libcudnn and reads its versions (never throws). */
export async function probe(): Promise<LibraryStatus> {
  if (hostInfo().platform === "darwin") return { reason: "cuDNN does not exist for macOS" };
  const r = await openCudnn().catch((e: unknown) => ({
    ok: false as const,
    reason: String(e),
    tried: [],
  }));
  if (!r.ok) {
    const short = /^(\S+ not found)/.exec(r.reason)?.[1] ?? r.reason;
    return { reason: `${short}: cuDNN is not installed; ${INSTALL}`, detail: r.reason };
  }
  const s = r.lib.symbols;
  const version = Number(s.cudnnGetVersion());
  const cudartVersion = Number(s.cudnnGetCudartVersion());
  const cublasLt: { path?: string; reason?: string } = await findCublasLt(r.path).catch(
    (e: unknown) => ({ reason: String(e) }),
  );
  const status: LibraryStatus = { path: r.path, version, cudartVersion, cublasLt };
  if (version < MIN_VERSION)
    status.reason = `cuDNN ${versionText(version)} at ${r.path} is older than 9.0, the graph API this package uses; ${INSTALL}`;
  else if (!cublasLt.path) {
    status.reason = `cuDNN ${versionText(version)} needs libcublasLt.so.13 beside it or on the library path; pip install nvidia-cublas (or the CUDA toolkit)`;
    status.detail = cublasLt.reason;
  } else runtime = new CudnnRuntime(new FfiLayer(r.lib));
  return status;
}

export function libraryStatus(): LibraryStatus {
  return library;
}

/** The runtime over the loaded library (or a test's recording layer), if any. */
export function maybeRuntime(): CudnnRuntime | undefined {
  return runtime;
}

/**
 * Why no cuDNN kernel can run here, or undefined: the library, then the device context
 * backend-cuda provides, then the driver and device it reports.
 */
export function unavailableReason(): string | undefined {
  if (!runtime) return library.reason ?? "cuDNN is not loaded";
  const ctx = deviceContext("cuda");
  if (!ctx)
    return "no CUDA device context: import @backplane/backend-cuda (cuDNN runs on its devices, streams and memory)";
  const why = ctx.unavailableReason();
  return why ? `CUDA is not available: ${why}` : undefined;
}

/** Replaces the runtime with one over `layer` (a RecordingLayer in tests); returns the undo. */
export function installLayer(layer: CudnnLayer): () => void {
  const saved = { runtime, library };
  runtime = new CudnnRuntime(layer);
  library = {
    path: layer.path,
    version: 92400,
    cudartVersion: 13000,
    cublasLt: { path: "(recording)" },
  };
  refreshAvailability();
  return () => {
    runtime?.release();
    ({ runtime, library } = saved);
    refreshAvailability();
  };
}

library = await probe();
