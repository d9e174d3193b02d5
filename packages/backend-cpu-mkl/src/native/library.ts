/**
 * Finds and opens the best BLAS/LAPACK on the machine: MKL (libmkl_rt) -> OpenBLAS ->
 * BLIS -> reference BLAS/LAPACK, with the names each has on Linux, macOS and Windows.
 * LAPACK is called through its Fortran symbols (dpotrf_, ...), which every one of them
 * exports; BLIS has none, so with BLIS the linalg ops stay on WASM (and say so).
 */
import {
  defaultSearchDirs,
  defineLibrary,
  type FfiType,
  hostInfo,
  type NativeLibrary,
  openLibrary,
} from "@backplane/core/cpu";
import { chooseCore } from "./core-choice.ts";

export type BlasName = "mkl" | "openblas" | "blis" | "reference";
export const BLAS_ORDER: readonly BlasName[] = ["mkl", "openblas", "blis", "reference"];

const f = <const A extends readonly FfiType[], const R extends FfiType = "void">(
  args: A,
  returns?: R,
  optional = false,
) => ({
  args,
  returns: (returns ?? "void") as R,
  optional,
});
const GEMM = ["i32", "i32", "i32", "i32", "i32", "i32"] as const;

export const BLAS_DECL = defineLibrary({
  cblas_sgemm: f([...GEMM, "f32", "buffer", "i32", "buffer", "i32", "f32", "buffer", "i32"]),
  cblas_dgemm: f([...GEMM, "f64", "buffer", "i32", "buffer", "i32", "f64", "buffer", "i32"]),
  // Thread control and version strings: each library has its own, all optional.
  openblas_set_num_threads: f(["i32"], "void", true),
  openblas_get_num_threads: f([], "i32", true),
  openblas_get_config: f([], "cstring", true),
  openblas_get_corename: f([], "cstring", true),
  MKL_Set_Num_Threads: f(["i32"], "void", true),
  MKL_Get_Max_Threads: f([], "i32", true),
  MKL_Get_Version_String: f(["buffer", "i32"], "void", true),
  bli_thread_set_num_threads: f(["i64"], "void", true),
  bli_info_get_version_str: f([], "cstring", true),
});

// Fortran LAPACK: every argument by pointer; a trailing hidden length per character
// argument (gfortran ABI), which libraries that do not expect it ignore.
const P = "buffer" as const;
const LEN = "usize" as const;
export const LAPACK_DECL = defineLibrary({
  dpotrf_: f([P, P, P, P, P, LEN]), // uplo, n, a, lda, info
  dgetrf_: f([P, P, P, P, P, P]), // m, n, a, lda, ipiv, info
  dgetrs_: f([P, P, P, P, P, P, P, P, P, LEN]), // trans, n, nrhs, a, lda, ipiv, b, ldb, info
  dgetri_: f([P, P, P, P, P, P, P]), // n, a, lda, ipiv, work, lwork, info
  dgeqrf_: f([P, P, P, P, P, P, P, P]), // m, n, a, lda, tau, work, lwork, info
  dorgqr_: f([P, P, P, P, P, P, P, P, P]), // m, n, k, a, lda, tau, work, lwork, info
  dsyevd_: f([P, P, P, P, P, P, P, P, P, P, P, LEN, LEN]), // jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info
  dgesdd_: f([P, P, P, P, P, P, P, P, P, P, P, P, P, P, LEN]), // jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork, info
});

export type BlasSymbols = NativeLibrary<typeof BLAS_DECL>["symbols"];
export type LapackSymbols = NativeLibrary<typeof LAPACK_DECL>["symbols"];

export interface LoadedBlas {
  name: BlasName;
  path: string;
  lapackPath: string | undefined;
  blas: BlasSymbols;
  lapack: LapackSymbols | undefined;
  version: string;
  /** Sets the library's own thread count (no-op when it has no such call). */
  setThreads(n: number): void;
  /** The library's thread count, where it can tell. */
  getThreads(): number | undefined;
  /** OpenBLAS: the core it runs, and how it was chosen (openblas-core.ts, core-choice.ts). */
  core?: {
    name: string;
    loaded: string;
    summary: string;
    how: string;
    measured: Record<string, number>;
  };
}

/** Where each library is looked for: base names (expanded per OS) and sonames versions. */
const SPECS: Record<
  BlasName,
  {
    blas: { candidates: string[]; versions: string[] };
    lapack?: { candidates: string[]; versions: string[] };
  }
> = {
  mkl: { blas: { candidates: ["mkl_rt"], versions: ["2", "1"] } },
  openblas: {
    blas: {
      candidates: ["openblas", "openblas64_", "libopenblas.dll"],
      versions: ["0"],
    },
  },
  blis: { blas: { candidates: ["blis", "blis-mt"], versions: ["4", "3", "2"] } },
  reference: {
    blas: { candidates: ["cblas", "blas"], versions: ["3"] },
    lapack: { candidates: ["lapack"], versions: ["3"] },
  },
};

/** Where the libraries install themselves outside the usual directories (Debian, Homebrew, oneAPI). */
const EXTRA_DIRS = [
  "/usr/lib/x86_64-linux-gnu/openblas-pthread",
  "/usr/lib/aarch64-linux-gnu/openblas-pthread",
  "/opt/intel/oneapi/mkl/latest/lib",
  "/opt/intel/oneapi/mkl/latest/lib/intel64",
  "/opt/homebrew/opt/openblas/lib",
  "/usr/local/opt/openblas/lib",
];

export interface SearchOptions {
  /** Replace the search directories (tests: [] searches nowhere). */
  searchPaths?: readonly string[];
  /** Also let the OS loader search bare names (default true). */
  systemSearch?: boolean;
}

async function tryLoad(name: BlasName, given: SearchOptions): Promise<LoadedBlas | string> {
  const spec = SPECS[name];
  // The defaults plus the libraries' own directories, unless the caller chose the directories.
  const opts = given.searchPaths
    ? given
    : { ...given, searchPaths: [...defaultSearchDirs(hostInfo()), ...EXTRA_DIRS] };
  const env = `BACKPLANE_${name.toUpperCase()}_PATH`;
  const b = await openLibrary(
    { name, candidates: spec.blas.candidates, versions: spec.blas.versions, env },
    BLAS_DECL,
    opts,
  );
  if (!b.ok) return b.reason;
  let blasLib = b.lib;
  let blasPath = b.path;
  let core: LoadedBlas["core"];
  if (name === "openblas") {
    const choice = await chooseCore(b.path, b.lib, async (path) => {
      const r = await openLibrary({ name, candidates: [path] }, BLAS_DECL, { systemSearch: false });
      return r.ok ? r.lib : undefined;
    });
    blasLib = choice.lib;
    blasPath = choice.path;
    core = {
      name: choice.core,
      loaded: choice.check.loaded,
      summary: choice.check.summary,
      how: choice.how,
      measured: choice.measured,
    };
  }
  let lapack: LapackSymbols | undefined;
  let lapackPath: string | undefined;
  if (name !== "blis") {
    const lspec = spec.lapack;
    const l = lspec
      ? await openLibrary(
          { name: `${name}-lapack`, candidates: lspec.candidates, versions: lspec.versions },
          LAPACK_DECL,
          opts,
        )
      : await openLibrary({ name, candidates: [blasPath] }, LAPACK_DECL, opts);
    if (l.ok) {
      lapack = l.lib.symbols;
      lapackPath = l.path;
    }
  }
  const s = blasLib.symbols;
  let version = "";
  if (name === "openblas") version = s.openblas_get_config?.() ?? "OpenBLAS";
  else if (name === "mkl" && s.MKL_Get_Version_String) {
    const buf = new Uint8Array(256);
    s.MKL_Get_Version_String(buf, 256);
    version = new TextDecoder()
      .decode(buf.subarray(0, buf.indexOf(0) < 0 ? 256 : buf.indexOf(0)))
      .trim();
  } else if (name === "blis") version = `BLIS ${s.bli_info_get_version_str?.() ?? ""}`.trim();
  else version = "reference BLAS/LAPACK";
  return {
    name,
    path: blasPath,
    core,
    lapackPath,
    blas: s,
    lapack,
    version,
    getThreads: () => s.openblas_get_num_threads?.() ?? s.MKL_Get_Max_Threads?.() ?? undefined,
    setThreads(n: number) {
      s.openblas_set_num_threads?.(n);
      s.MKL_Set_Num_Threads?.(n);
      s.bli_thread_set_num_threads?.(n);
    },
  };
}

/**
 * Loads the preferred library, or the first of MKL -> OpenBLAS -> BLIS -> reference that is
 * present. The reason when none loads lists why each was not taken.
 */
export async function loadBlas(
  prefer: BlasName | "auto",
  opts: SearchOptions = {},
): Promise<LoadedBlas | string> {
  const order = prefer === "auto" ? BLAS_ORDER : [prefer];
  const reasons: string[] = [];
  for (const name of order) {
    const r = await tryLoad(name, opts);
    if (typeof r !== "string") return r;
    reasons.push(`${name}: ${r}`);
  }
  return `no BLAS library found (${reasons.join("; ")})`;
}
