/**
 * Finding and opening the CUDA libraries: the driver (libcuda.so.1 / nvcuda.dll), the runtime
 * (only to explain an unusable setup), and the math libraries with the sonames each CUDA
 * major version ships (cuBLAS 13 and 12; cuFFT and cuSOLVER 12 for CUDA 13, 11 for CUDA 12).
 * Each library may be pointed at with an environment variable (a file or a directory); pip's
 * NVIDIA wheels (nvidia-cublas, nvidia-cufft... : nvidia/cu13/lib, or nvidia/<lib>/lib for
 * CUDA 12) are found in every Python environment.
 */
import {
  hostInfo,
  type LibraryDecl,
  type LibrarySpec,
  type NativeLibrary,
  type OpenResult,
  openLibrary,
  ptrAddress,
  ptrFromAddress,
  ptrOf,
  readCString,
} from "@backplane/core/cpu";
import type { CudaLayer, LibraryInfo, MathLibraries } from "../layer.ts";
import { CUDART_DECL, type CudartSymbols, DRIVER_DECL } from "./driver-api.ts";
import {
  CUBLAS_DECL,
  CUBLASLT_DECL,
  CUFFT_DECL,
  CUSOLVER_DECL,
  CUSPARSELT_DECL,
  LIBRARY_ENUMS,
  type LibraryName,
  MAGMA_DECL,
} from "./library-api.ts";

/** Where each library is looked for. */
export function librarySpec(
  name: "cuda" | "cudart" | LibraryName,
  platform = hostInfo().platform,
): LibrarySpec {
  const win = platform === "win32";
  switch (name) {
    case "cuda":
      return {
        name: "cuda driver",
        candidates: win ? ["nvcuda.dll"] : ["libcuda.so.1", "libcuda.so"],
        env: "BACKPLANE_CUDA_DRIVER_PATH",
      };
    case "cudart":
      return {
        name: "cudart",
        candidates: ["cudart"],
        versions: ["13", "12"],
        env: "BACKPLANE_CUDART_PATH",
        pip: ["nvidia/cu13/lib", "nvidia/cuda_runtime/lib"],
      };
    case "cublas":
      return {
        name: "cublas",
        candidates: ["cublas"],
        versions: ["13", "12"],
        env: "BACKPLANE_CUBLAS_PATH",
        pip: ["nvidia/cu13/lib", "nvidia/cublas/lib"],
      };
    case "cublasLt":
      return {
        name: "cublasLt",
        candidates: ["cublasLt"],
        versions: ["13", "12"],
        env: "BACKPLANE_CUBLASLT_PATH",
        pip: ["nvidia/cu13/lib", "nvidia/cublas/lib"],
      };
    case "cufft":
      return {
        name: "cufft",
        candidates: ["cufft"],
        versions: ["12", "11"],
        env: "BACKPLANE_CUFFT_PATH",
        pip: ["nvidia/cu13/lib", "nvidia/cufft/lib"],
      };
    case "cusolver":
      return {
        name: "cusolver",
        candidates: ["cusolver"],
        versions: ["12", "11"],
        env: "BACKPLANE_CUSOLVER_PATH",
        pip: ["nvidia/cu13/lib", "nvidia/cusolver/lib"],
      };
    case "cusparseLt":
      return {
        name: "cusparseLt",
        candidates: ["cusparseLt"],
        versions: ["0"],
        env: "BACKPLANE_CUSPARSELT_PATH",
        pip: ["nvidia/cusparselt/lib"],
      };
    case "magma":
      return { name: "magma", candidates: ["magma"], versions: ["2"], env: "BACKPLANE_MAGMA_PATH" };
  }
}

/** "libcuda.so.1 not found (tried: ...)" -> "libcuda.so.1 not found"; other reasons unchanged. */
export function shortReason(reason: string): string {
  const m = /^(\S+ not found) \(tried: /.exec(reason);
  return m ? m[1]! : reason;
}

function open<D extends LibraryDecl>(
  name: "cuda" | "cudart" | LibraryName,
  decl: D,
): Promise<OpenResult<D>> {
  return openLibrary(librarySpec(name), decl);
}

export interface RuntimeProbe {
  path: string;
  /** cudaRuntimeGetVersion, e.g. 13000. */
  version: number;
  /** What cudaGetDeviceCount returned, named and described. */
  deviceCountStatus: number;
  deviceCountName: string;
  deviceCountText: string;
}

/** Opens libcudart and asks it what it thinks of this machine (it knows the driver it needs). */
export async function probeRuntime(): Promise<RuntimeProbe | string> {
  const r = await open("cudart", CUDART_DECL);
  if (!r.ok) return shortReason(r.reason);
  const s: CudartSymbols = r.lib.symbols;
  const v = new Int32Array(1);
  s.cudaRuntimeGetVersion(v);
  const n = new Int32Array(1);
  const status = s.cudaGetDeviceCount(n);
  return {
    path: r.path,
    version: v[0]!,
    deviceCountStatus: status,
    deviceCountName: s.cudaGetErrorName(status) ?? `cudaError ${status}`,
    deviceCountText: s.cudaGetErrorString(status) ?? "",
  };
}

/** Formats 13000 as "13.0", 12040 as "12.4". */
export function cudaVersionString(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** Opens the driver library; the FFI layer without its math libraries (see loadMathLibraries). */
export async function openDriverLayer(): Promise<
  { ok: true; layer: FfiLayer } | { ok: false; reason: string; detail: string }
> {
  const r = await open("cuda", DRIVER_DECL);
  if (!r.ok) return { ok: false, reason: shortReason(r.reason), detail: r.reason };
  return { ok: true, layer: new FfiLayer(r.lib) };
}

/** The FFI implementation of the driver layer. */
export class FfiLayer implements CudaLayer {
  readonly kind = "ffi" as const;
  readonly cu: NativeLibrary<typeof DRIVER_DECL>["symbols"];
  readonly libs: MathLibraries = {};
  readonly info: CudaLayer["info"] = {};
  readonly path: string;
  private readonly strOut = new BigUint64Array(1);
  constructor(lib: NativeLibrary<typeof DRIVER_DECL>) {
    this.cu = lib.symbols;
    this.path = lib.path;
  }
  addressOf(view: ArrayBufferView): bigint {
    return ptrAddress(ptrOf(view));
  }
  describe(code: number): string | undefined {
    try {
      if (this.cu.cuGetErrorString(code, this.strOut) !== 0 || this.strOut[0] === 0n)
        return undefined;
      return readCString(ptrFromAddress(this.strOut[0]!));
    } catch {
      return undefined;
    }
  }
}

function property(get: (type: number, out: Int32Array) => number): string | undefined {
  const out = new Int32Array(1);
  const parts: number[] = [];
  for (const t of [
    LIBRARY_ENUMS.MAJOR_VERSION,
    LIBRARY_ENUMS.MINOR_VERSION,
    LIBRARY_ENUMS.PATCH_LEVEL,
  ]) {
    if (get(t, out) !== 0) return undefined;
    parts.push(out[0]!);
  }
  return parts.join(".");
}

/** CUFFT_VERSION style: major * 1000 + minor * 100 + patch (11300 -> "11.3.0"). */
function packedVersion(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 100)}.${v % 100}`;
}

/** Opens cuBLAS, cuBLASLt, cuFFT and cuSOLVER into the layer; a missing one gets its reason. */
export async function loadMathLibraries(layer: FfiLayer): Promise<void> {
  const [cublas, lt, fft, solver] = await Promise.all([
    open("cublas", CUBLAS_DECL),
    open("cublasLt", CUBLASLT_DECL),
    open("cufft", CUFFT_DECL),
    open("cusolver", CUSOLVER_DECL),
  ]);
  const note = (
    name: LibraryName,
    r: { ok: true; path: string } | { ok: false; reason: string },
    version?: () => string,
  ) => {
    const info: LibraryInfo = r.ok ? { path: r.path } : { reason: shortReason(r.reason) };
    if (r.ok && version) {
      try {
        info.version = version();
      } catch {
        // A version query failing does not make the library unusable.
      }
    }
    layer.info[name] = info;
  };
  if (cublas.ok) layer.libs.cublas = cublas.lib.symbols;
  note(
    "cublas",
    cublas,
    () => property(cublas.ok ? cublas.lib.symbols.cublasGetProperty : () => 1) ?? "?",
  );
  if (lt.ok) layer.libs.cublasLt = lt.lib.symbols;
  note("cublasLt", lt, () => {
    // CUBLASLT_VERSION is major * 10000 + minor * 100 + patch.
    const v = lt.ok ? Number(lt.lib.symbols.cublasLtGetVersion()) : 0;
    return `${Math.floor(v / 10000)}.${Math.floor((v % 10000) / 100)}.${v % 100}`;
  });
  if (fft.ok) layer.libs.cufft = fft.lib.symbols;
  note("cufft", fft, () => {
    const v = new Int32Array(1);
    return fft.ok && fft.lib.symbols.cufftGetVersion(v) === 0 ? packedVersion(v[0]!) : "?";
  });
  if (solver.ok) layer.libs.cusolver = solver.lib.symbols;
  note(
    "cusolver",
    solver,
    () => property(solver.ok ? solver.lib.symbols.cusolverGetProperty : () => 1) ?? "?",
  );
}

export interface OptionalLibrary {
  path?: string;
  version?: string;
  reason?: string;
  /** The search report behind `reason`: every path tried. */
  detail?: string;
}

/** libcusparseLt: found or not, and its version (cusparseLtGetProperty needs no GPU). */
export async function probeCusparseLt(): Promise<OptionalLibrary> {
  const r = await open("cusparseLt", CUSPARSELT_DECL);
  if (!r.ok) return { reason: shortReason(r.reason), detail: r.reason };
  const v = property(r.lib.symbols.cusparseLtGetProperty);
  return { path: r.path, version: v };
}

/** libmagma: found or not, and its version (magma_version needs no GPU). */
export async function probeMagma(): Promise<OptionalLibrary> {
  const r = await open("magma", MAGMA_DECL);
  if (!r.ok) return { reason: shortReason(r.reason), detail: r.reason };
  // magma_int_t is 4 or 8 bytes (ILP64 builds): give each out-parameter 8 zeroed bytes.
  const parts = [new BigInt64Array(1), new BigInt64Array(1), new BigInt64Array(1)];
  r.lib.symbols.magma_version(parts[0]!, parts[1]!, parts[2]!);
  const read = (p: BigInt64Array) => Number(BigInt.asIntN(32, p[0]!));
  return { path: r.path, version: parts.map(read).join(".") };
}
