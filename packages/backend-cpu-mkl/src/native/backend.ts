/**
 * The native family: the best BLAS/LAPACK on the machine, loaded over FFI when the
 * backend first initialises. It answers for `backends.mkl`, which is available only when
 * the library loaded is really MKL (as in torch).
 */
import {
  getFlag,
  type NamespaceStatus,
  NotInstalledError,
  onFlagChange,
  runtime,
} from "@backplane/core";
import {
  type BackendDefinition,
  defineBackend,
  getBackend,
  restartInit,
  statusOf,
} from "@backplane/core/backend";
import { initFfi, readEnv } from "@backplane/core/cpu";
import { nativeKernels, state } from "../kernels/blas-lapack.ts";
import { flashBlasKernels } from "../kernels/flash-blas.ts";
import { ffiFailure } from "./ffi-failure.ts";
import { type BlasName, loadBlas, type SearchOptions } from "./library.ts";
import { limitNativeSpinning } from "./spin-env.ts";

export const NATIVE_BACKEND = "cpu-blas";
const PACKAGE = "@backplane/backend-cpu-mkl";

let search: SearchOptions = {};
const envPath = readEnv("BACKPLANE_BLAS_SEARCH_PATH");
if (envPath !== undefined)
  search = { searchPaths: envPath.split(/[:;]/).filter(Boolean), systemSearch: envPath !== "" };

/**
 * Where to look for the native library: directories replacing the defaults, and whether
 * the OS loader may search too. `{ searchPaths: [], systemSearch: false }` looks nowhere.
 * Takes effect at the next use (await backends.ready()).
 */
export function configureNativeSearch(opts: SearchOptions): void {
  search = { ...opts };
  state.lib = undefined;
  restartInit(NATIVE_BACKEND);
}

function preferred(): BlasName | "auto" {
  const p = getFlag("cpu.preferredBlasLibrary") as string;
  return p === "wasm" || p === "auto" ? "auto" : (p as BlasName);
}

function applyThreads(): void {
  const n = (getFlag("openmp.numThreads") as number) || runtime().hardwareConcurrency;
  state.lib?.setThreads(n);
}

onFlagChange("openmp.numThreads", applyThreads);
onFlagChange("cpu.preferredBlasLibrary", (v) => {
  // A specific library asked for that is not the one loaded: load again.
  if (v !== "wasm" && v !== "auto" && state.lib?.name !== v) configureNativeSearch(search);
});

/** No BLAS loads: what is missing and how to add it; status().detail lists every path tried. */
const NO_BLAS = {
  what: "a BLAS library (OpenBLAS or MKL)",
  fix: "apt install libopenblas0-pthread / brew install openblas, or set BACKPLANE_OPENBLAS_PATH=/path/to/libopenblas.so",
};

function formatMeasured(m: Record<string, number>): string {
  const parts = Object.entries(m).map(([core, gf]) => `${core} ${gf.toFixed(1)}`);
  return parts.length ? ` (sgemm 256, 1 thread, GFLOP/s: ${parts.join(", ")})` : "";
}

/** Whether this runtime can open native libraries (the native and oneDNN families need it). */
export const hasFfi = (): boolean => ["bun", "deno", "node"].includes(runtime().name);

function mklStatus(): NamespaceStatus {
  const s = statusOf("mkl");
  if (!s.available) return s;
  if (state.lib?.name === "mkl") return { ...s, version: state.lib.version };
  const b = getBackend(NATIVE_BACKEND);
  if (b?.initState === "failed")
    return { ...s, available: false, reason: b.initError, detail: b.initDetail };
  const reason = state.lib
    ? `the native library loaded is ${state.lib.version} (${state.lib.path}), not MKL`
    : "no native BLAS has loaded yet (await backends.ready())";
  return { ...s, available: false, reason };
}

export const nativeBackend: BackendDefinition = defineBackend({
  name: NATIVE_BACKEND,
  namespaces: ["mkl"],
  packageName: PACKAGE,
  devices: ["cpu"],
  version: () => state.lib?.version,
  isAvailable: () =>
    hasFfi()
      ? { available: true }
      : {
          available: false,
          reason: `no FFI in ${runtime().name} (native libraries need Bun, Deno or Node)`,
        },
  async init() {
    const ffi = await initFfi();
    if (!ffi.ok) throw ffiFailure(ffi); // koffi not installed on Node: "npm install koffi"
    await limitNativeSpinning(); // before the library starts its threads
    const r = await loadBlas(preferred(), search);
    // detail: every path tried and its error
    if (typeof r === "string") throw new NotInstalledError(NO_BLAS.what, NO_BLAS.fix, r);
    state.lib = r;
    applyThreads();
  },
  performanceKey: () =>
    state.lib
      ? `${state.lib.name} ${state.lib.path} ${state.lib.version}${state.lib.core ? ` core ${state.lib.core.name}` : ""}`
      : "not loaded",
  capability: () =>
    state.lib && {
      library: state.lib.name,
      version: state.lib.version,
      path: state.lib.path,
      lapack: state.lib.lapackPath ?? null,
      threads: state.lib.getThreads(),
      // OpenBLAS: the core it runs, and the one it picked itself when that was below the CPU.
      ...(state.lib.core && {
        corename: state.lib.core.name,
        coreCheck: `${state.lib.core.summary}; ${state.lib.core.how}${formatMeasured(state.lib.core.measured)}`,
      }),
    },
  kernels: [...nativeKernels(), ...flashBlasKernels()].map((k) => ({
    ...k,
    enabled: (flag: (key: string) => unknown) =>
      flag("cpu.preferredBlasLibrary") === "wasm" ? 'cpu.preferredBlasLibrary is "wasm"' : true,
  })),
  api: {
    mkl: {
      isAvailable: () => mklStatus().available,
      status: mklStatus,
      isEnabled: () => mklStatus().available && getFlag("cpu.preferredBlasLibrary") !== "wasm",
    },
  },
});
