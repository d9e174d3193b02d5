/**
 * The cuBLAS, cuBLASLt, cuFFT, cuSOLVER and cuSPARSELt declarations against the libraries'
 * own headers, and the libraries themselves loaded, from NVIDIA's pip wheels
 * (nvidia-cublas, -cufft, -cusolver, -cusparse, -nvjitlink, -cusparselt-cu13; .ci/run
 * installs them). library-api.ts was transcribed from the documentation before these were
 * installable; here every row is held to the real prototype (argument count, size class of
 * each argument and of the result, handles as usize), every enumerator and status name to
 * the header's value, every declared symbol to an export of the real .so, and each library's
 * version query (no GPU needed) to its header's version macros. MAGMA has no wheel: its one
 * row stays checked against its documentation only.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { hostInfo, openLibrary, pythonSitePackages, readEnv } from "@backplane/core/cpu";
import {
  declarationProblems,
  enumerators,
  functionRenames,
  stripComments,
  typedefs,
} from "@backplane/testkit/c-header";
import { describe, expect, it } from "vitest";
import { librarySpec } from "../src/internals.ts";
import {
  CUBLAS_DECL,
  CUBLAS_STATUS_NAMES,
  CUBLASLT_DECL,
  CUFFT_DECL,
  CUFFT_RESULT_NAMES,
  CUSOLVER_DECL,
  CUSOLVER_STATUS_NAMES,
  CUSPARSE_STATUS_NAMES,
  CUSPARSELT_DECL,
  HEURISTIC_RESULT,
  HEURISTIC_RESULT_BYTES,
  LIBRARY_API,
  LIBRARY_ENUMS,
} from "../src/native/library-api.ts";

/** The wheels' include directories: nvidia/cu13/include and nvidia/cusparselt/include. */
function findIncludes(): { cu13: string; cusparselt: string } | undefined {
  const roots = [readEnv("BACKPLANE_NVIDIA_PIP"), ...pythonSitePackages(hostInfo())].filter(
    (r): r is string => !!r,
  );
  for (const r of roots) {
    const cu13 = `${r}/nvidia/cu13/include`;
    const cusparselt = `${r}/nvidia/cusparselt/include`;
    if (existsSync(`${cu13}/cublas_api.h`) && existsSync(`${cusparselt}/cusparseLt.h`))
      return { cu13, cusparselt };
  }
  return undefined;
}

const inc = findIncludes();
const EXPECT = readEnv("BACKPLANE_EXPECT_NVIDIA_LIBS") === "1";
if (!inc && EXPECT)
  throw new Error(
    "BACKPLANE_EXPECT_NVIDIA_LIBS=1 but no nvidia/cu13/include with cublas_api.h was found",
  );
if (!inc)
  console.log(
    "[backend-cuda] library header tests skipped: NVIDIA's pip wheels not found; pip install nvidia-cublas nvidia-cufft nvidia-cusolver nvidia-cusparse nvidia-nvjitlink nvidia-cusparselt-cu13 and put their site-packages on PYTHONPATH",
  );
const itWheels = inc ? it : it.skip;

const read = (dir: string | undefined, f: string) =>
  dir && existsSync(`${dir}/${f}`) ? readFileSync(`${dir}/${f}`, "utf8") : "";
const TOOLKIT = readEnv("BACKPLANE_CUDA_INCLUDE") ?? "/usr/local/cuda/include";
const H = {
  cublas: read(inc?.cu13, "cublas_api.h"),
  cublasV2: read(inc?.cu13, "cublas_v2.h"),
  cublasLt: read(inc?.cu13, "cublasLt.h"),
  cufft: read(inc?.cu13, "cufft.h"),
  cusolver: read(inc?.cu13, "cusolverDn.h"),
  cusolverCommon: read(inc?.cu13, "cusolver_common.h"),
  cusparse: read(inc?.cu13, "cusparse.h"),
  cusparseLt: read(inc?.cusparselt, "cusparseLt.h"),
};

/** Typedefs of every header involved, plus the toolkit's (cudaStream_t, cudaDataType_t). */
function definitions(): Map<string, string> {
  const defs = new Map<string, string>([
    ["cudaStream_t", "struct CUstream_st *"],
    ["cudaDataType", "enum"],
    ["cudaDataType_t", "enum"],
    ["libraryPropertyType", "enum"],
    ["libraryPropertyType_t", "enum"],
  ]);
  for (const text of [
    ...Object.values(H),
    read(TOOLKIT, "library_types.h"),
    read(TOOLKIT, "driver_types.h"),
  ])
    for (const [k, v] of typedefs(text)) if (!defs.has(k)) defs.set(k, v);
  return defs;
}

const HEADER_OF = {
  cublas: () => H.cublas,
  cublasLt: () => H.cublasLt,
  cufft: () => H.cufft,
  cusolver: () => `${H.cusolverCommon}\n${H.cusolver}`,
  cusparseLt: () => H.cusparseLt,
} as const;

describe("the library table against NVIDIA's headers (pip wheels)", () => {
  itWheels("every cuBLAS/cuBLASLt/cuFFT/cuSOLVER/cuSPARSELt row matches the real prototype", () => {
    const defs = definitions();
    // cublas_v2.h maps cublasCreate -> cublasCreate_v2: the bound symbols are the _v2 exports.
    const renames = functionRenames(H.cublasV2);
    const problems: string[] = [];
    let checked = 0;
    for (const [symbol, row] of Object.entries(LIBRARY_API)) {
      if (row.lib === "magma") continue;
      const header = HEADER_OF[row.lib]();
      // Device pointers are void * in these headers and carried as addresses (usize).
      problems.push(
        ...declarationProblems(header, defs, symbol, row, {
          renames: row.lib === "cublas" ? renames : undefined,
          explicitPointersAreHost: false,
        }),
      );
      checked++;
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(55);
  });

  itWheels("every enumerator the package uses has the header's value", () => {
    const all = [
      H.cublas,
      H.cublasLt,
      H.cufft,
      H.cusolverCommon,
      H.cusolver,
      read(TOOLKIT, "library_types.h"),
    ];
    const headerValue = (name: string): number | undefined => {
      for (const raw of all) {
        const text = stripComments(raw);
        const define = new RegExp(`^\\s*#define\\s+${name}\\s+\\(?(-?\\d+)\\)?`, "m").exec(text);
        if (define) return Number(define[1]);
        const m = new RegExp(
          `typedef\\s+enum\\s*\\w*\\s*\\{[^}]*\\b${name}\\b[^}]*\\}\\s*(\\w+)\\s*;`,
        ).exec(text);
        if (m) return enumerators(text, m[1]!).get(name);
      }
      return undefined;
    };
    const problems = Object.entries(LIBRARY_ENUMS)
      .map(([name, v]) => [name, v, headerValue(name)] as const)
      .filter(([, v, h]) => v !== h)
      .map(([name, v, h]) => `${name}: ours ${v}, header ${h}`);
    expect(problems).toEqual([]);
  });

  itWheels("the status name tables are the headers' enums, every code named", () => {
    const absent: string[] = [];
    const check = (table: Readonly<Record<number, string>>, text: string, cEnum: string) => {
      const e = enumerators(text, cEnum);
      const problems: string[] = [];
      for (const [code, name] of Object.entries(table)) {
        if (!e.has(name)) absent.push(name);
        else if (e.get(name) !== Number(code))
          problems.push(`${cEnum}: ${name} is ${e.get(name)} in the header, ${code} in the table`);
      }
      for (const [name, value] of e)
        if (table[value] !== name)
          problems.push(`${cEnum}: ${name} = ${value} is not in the table`);
      return problems;
    };
    expect([
      ...check(CUBLAS_STATUS_NAMES, H.cublas, "cublasStatus_t"),
      ...check(CUFFT_RESULT_NAMES, H.cufft, "cufftResult"),
      ...check(CUSOLVER_STATUS_NAMES, H.cusolverCommon, "cusolverStatus_t"),
      ...check(CUSPARSE_STATUS_NAMES, H.cusparse, "cusparseStatus_t"),
    ]).toEqual([]);
    // cuFFT 12 removed these codes; the table keeps their names for older libraries.
    expect(absent).toEqual([
      "CUFFT_INCOMPLETE_PARAMETER_LIST",
      "CUFFT_PARSE_ERROR",
      "CUFFT_LICENSE_ERROR",
    ]);
  });
});

describe("cublasLtMatmulHeuristicResult_t, as a C compiler lays it out", () => {
  const cc = spawnSync("cc", ["--version"]).status === 0;
  const itCc = inc && cc && existsSync(`${TOOLKIT}/cuda_fp16.h`) ? it : it.skip;
  itCc("size and field offsets equal the package's byte layout", () => {
    const dir = mkdtempSync(`${tmpdir()}/bp-lt-`);
    const f = "cublasLtMatmulHeuristicResult_t";
    writeFileSync(
      `${dir}/lt.c`,
      `#include <stdio.h>\n#include <stddef.h>\n#include <cublasLt.h>\nint main(void){printf("%zu %zu %zu %zu %zu", sizeof(${f}), offsetof(${f}, algo), offsetof(${f}, workspaceSize), offsetof(${f}, state), offsetof(${f}, wavesCount));return 0;}\n`,
    );
    const build = spawnSync(
      "cc",
      [`-I${inc!.cu13}`, `-I${TOOLKIT}`, `${dir}/lt.c`, "-o", `${dir}/lt`],
      { encoding: "utf8" },
    );
    expect(build.stderr).toBe("");
    const run = spawnSync(`${dir}/lt`, [], { encoding: "utf8" });
    expect(run.stdout.split(" ").map(Number)).toEqual([
      HEURISTIC_RESULT_BYTES,
      HEURISTIC_RESULT.algo,
      HEURISTIC_RESULT.workspaceSize,
      HEURISTIC_RESULT.state,
      HEURISTIC_RESULT.wavesCount,
    ]);
  });
});

describe("the real libraries load through the package's own search (no GPU needed)", () => {
  const macro = (text: string, name: string) =>
    Number(new RegExp(`#define\\s+${name}\\s+(\\d+)`).exec(text)?.[1]);
  const version = (text: string, prefix: string) =>
    ["MAJOR", "MINOR", "PATCH"].map((p) => macro(text, `${prefix}_VER_${p}`)).join(".");
  const property = (get: (t: number, out: Int32Array) => number) =>
    [0, 1, 2]
      .map((t) => {
        const out = new Int32Array(1);
        expect(get(t, out)).toBe(0);
        return out[0];
      })
      .join(".");

  itWheels("cuBLAS and cuBLASLt: every symbol exported, versions equal the header's", async () => {
    const blas = await openLibrary(librarySpec("cublas"), CUBLAS_DECL);
    const lt = await openLibrary(librarySpec("cublasLt"), CUBLASLT_DECL);
    if (!blas.ok || !lt.ok)
      throw new Error(`${blas.ok ? "" : blas.reason} ${lt.ok ? "" : lt.reason}`);
    expect(blas.missing).toEqual([]);
    expect(property(blas.lib.symbols.cublasGetProperty)).toBe(version(H.cublas, "CUBLAS"));
    const v = Number(lt.lib.symbols.cublasLtGetVersion());
    expect(`${Math.floor(v / 10000)}.${Math.floor((v % 10000) / 100)}.${v % 100}`).toBe(
      version(H.cublas, "CUBLAS"),
    );
  });

  itWheels(
    "cuFFT, cuSOLVER, cuSPARSELt: every symbol exported, versions equal the header's",
    async () => {
      const fft = await openLibrary(librarySpec("cufft"), CUFFT_DECL);
      const solver = await openLibrary(librarySpec("cusolver"), CUSOLVER_DECL);
      const sparse = await openLibrary(librarySpec("cusparseLt"), CUSPARSELT_DECL);
      for (const r of [fft, solver, sparse]) if (!r.ok) throw new Error(r.reason);
      if (!fft.ok || !solver.ok || !sparse.ok) return;
      const out = new Int32Array(1);
      expect(fft.lib.symbols.cufftGetVersion(out)).toBe(0);
      expect(out[0]).toBe(macro(H.cufft, "CUFFT_VERSION"));
      expect(property(solver.lib.symbols.cusolverGetProperty)).toBe(
        version(H.cusolverCommon, "CUSOLVER"),
      );
      expect(property(sparse.lib.symbols.cusparseLtGetProperty)).toBe(
        version(H.cusparseLt, "CUSPARSELT"),
      );
      expect([fft.missing, solver.missing, sparse.missing]).toEqual([[], [], []]);
    },
  );
});
