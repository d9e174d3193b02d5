/**
 * Every FFI declaration and constant of this package, held to what a C++ compiler makes of
 * the real headers (cuda.h, cuda_runtime_api.h, and the pip wheels' cublas_v2.h, cublasLt.h,
 * cufft.h, cusolverDn.h, cusparseLt.h). headers.test.ts and library-headers.test.ts read the
 * headers with a regex parser; this is an independent oracle: a generated program takes
 * `decltype(&symbol)` of each bound symbol (so the preprocessor's renames, typedef chains and
 * enum widths are the compiler's), prints the size class of the result and of every argument,
 * the name each API macro expands to, every enumerator's value and the heuristic result's
 * layout, and the test compares all of it with the tables.
 */
import { existsSync } from "node:fs";
import { hostInfo, pythonSitePackages, readEnv } from "@backplane/core/cpu";
import {
  type AbiDecl,
  compilerAvailable,
  enumBody,
  enumProblems,
  introspect,
  signatureBody,
  signatureProblems,
} from "@backplane/testkit/abi";
import { describe, expect, it } from "vitest";
import { CU, CUDART, CUDART_DECL, DRIVER_DECL } from "../src/native/driver-api.ts";
import {
  CUBLAS_DECL,
  CUBLASLT_DECL,
  CUFFT_DECL,
  CUSOLVER_DECL,
  CUSPARSELT_DECL,
  HEURISTIC_RESULT,
  HEURISTIC_RESULT_BYTES,
  LIBRARY_ENUMS,
} from "../src/native/library-api.ts";

const TOOLKIT = readEnv("BACKPLANE_CUDA_INCLUDE") ?? "/usr/local/cuda/include";

/** nvidia/cu13/include and nvidia/cusparselt/include of the pip wheels, if installed. */
function wheelIncludes(): string[] | undefined {
  const roots = [readEnv("BACKPLANE_NVIDIA_PIP"), ...pythonSitePackages(hostInfo())];
  for (const r of roots.filter((x): x is string => !!x)) {
    const dirs = [`${r}/nvidia/cu13/include`, `${r}/nvidia/cusparselt/include`];
    if (existsSync(`${dirs[0]}/cublasLt.h`) && existsSync(`${dirs[1]}/cusparseLt.h`)) return dirs;
  }
  return undefined;
}

const wheels = wheelIncludes();
const have = compilerAvailable() && existsSync(`${TOOLKIT}/cuda.h`) && wheels !== undefined;
if (!have && readEnv("BACKPLANE_EXPECT_NVIDIA_LIBS") === "1")
  throw new Error(
    "BACKPLANE_EXPECT_NVIDIA_LIBS=1 but gcc/g++, cuda.h or the NVIDIA wheels are missing",
  );
if (!have)
  console.warn(
    `[backend-cuda] ABI tests skipped: they need gcc/g++, ${TOOLKIT}/cuda.h and NVIDIA's pip wheels (pip install nvidia-cublas nvidia-cufft nvidia-cusolver nvidia-cusparselt-cu13 and put their site-packages on PYTHONPATH)`,
  );
const itCompiler = have ? it : it.skip;

/** The API name a bound symbol comes from: cuMemAlloc_v2 <- cuMemAlloc (cuda.h's #define). */
const apiOf = (symbol: string) => symbol.replace(/_v\d+$/, "");

describe("FFI declarations against the C++ compiler's reading of the headers", () => {
  const includes = [TOOLKIT, ...(wheels ?? [])];
  const LIBRARIES: [string, string[], AbiDecl][] = [
    ["libcuda", ["cuda.h"], DRIVER_DECL],
    ["libcudart", ["cuda_runtime_api.h"], CUDART_DECL],
    ["cuBLAS", ["cublas_v2.h"], CUBLAS_DECL],
    ["cuBLASLt", ["cublasLt.h"], CUBLASLT_DECL],
    ["cuFFT", ["cufft.h"], CUFFT_DECL],
    ["cuSOLVER", ["cusolverDn.h"], CUSOLVER_DECL],
    ["cuSPARSELt", ["cusparseLt.h"], CUSPARSELT_DECL],
  ];
  for (const [lib, headers, decl] of LIBRARIES) {
    itCompiler(`every ${lib} symbol: exported name, result and argument classes`, () => {
      const lines = introspect(headers, includes, signatureBody(decl, apiOf));
      expect(signatureProblems(decl, lines, apiOf)).toEqual([]);
    });
  }

  itCompiler("every enumerator and #define the package passes has the header's value", () => {
    const headers = ["cuda.h", "cuda_runtime_api.h", "cublasLt.h", "cufft.h", "cusolverDn.h"];
    const tables = [CU, CUDART, LIBRARY_ENUMS];
    const lines = introspect(headers, includes, tables.flatMap(enumBody));
    expect(tables.flatMap((t) => enumProblems(t, lines))).toEqual([]);
  });

  itCompiler("cublasLtMatmulHeuristicResult_t: size and offsets, the algo 64 bytes", () => {
    const t = "cublasLtMatmulHeuristicResult_t";
    const lines = introspect(["cublasLt.h"], includes, [
      `  std::printf("%zu %zu %zu %zu %zu %zu", sizeof(${t}), offsetof(${t}, algo), offsetof(${t}, workspaceSize), offsetof(${t}, state), offsetof(${t}, wavesCount), sizeof(cublasLtMatmulAlgo_t));`,
    ]);
    expect(lines[0]!.split(" ").map(Number)).toEqual([
      HEURISTIC_RESULT_BYTES,
      HEURISTIC_RESULT.algo,
      HEURISTIC_RESULT.workspaceSize,
      HEURISTIC_RESULT.state,
      HEURISTIC_RESULT.wavesCount,
      HEURISTIC_RESULT.workspaceSize - HEURISTIC_RESULT.algo,
    ]);
  });

  itCompiler("a declaration changed by hand is caught (the oracle can fail)", () => {
    const wrong: AbiDecl = {
      cuMemAlloc_v2: { args: ["buffer", "u32"], returns: "i32" },
      cuStreamDestroy: { args: ["usize"], returns: "i32" },
      cuLaunchKernel: { args: ["usize"], returns: "i32" },
    };
    const lines = introspect(["cuda.h"], includes, signatureBody(wrong, apiOf));
    expect(signatureProblems(wrong, lines, apiOf)).toEqual([
      "cuMemAlloc_v2: argument 1 is u64 in the header, declared u32",
      "cuStreamDestroy: the header maps cuStreamDestroy to cuStreamDestroy_v2",
      "cuLaunchKernel: 1 arguments declared, the header has 11",
    ]);
    expect(
      enumProblems(
        { CUDA_ERROR_NOT_READY: 601 },
        introspect(["cuda.h"], includes, enumBody({ CUDA_ERROR_NOT_READY: 0 })),
      ),
    ).toEqual(["CUDA_ERROR_NOT_READY: ours 601, header 600"]);
  });
});
