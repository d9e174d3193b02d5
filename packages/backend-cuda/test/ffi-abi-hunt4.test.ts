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
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { hostInfo, pythonSitePackages, readEnv } from "@backplane/core/cpu";
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

type Decl = Readonly<
  Record<string, { readonly args: readonly string[]; readonly returns: string }>
>;

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

const cxx = spawnSync("g++", ["--version"]).status === 0;
const wheels = wheelIncludes();
const have = cxx && existsSync(`${TOOLKIT}/cuda.h`) && wheels !== undefined;
if (!have && readEnv("BACKPLANE_EXPECT_NVIDIA_LIBS") === "1")
  throw new Error(
    "BACKPLANE_EXPECT_NVIDIA_LIBS=1 but g++, cuda.h or the NVIDIA wheels are missing",
  );
if (!have)
  console.warn(
    `[backend-cuda] ABI tests skipped: they need g++, ${TOOLKIT}/cuda.h and NVIDIA's pip wheels (pip install nvidia-cublas nvidia-cufft nvidia-cusolver nvidia-cusparselt-cu13 and put their site-packages on PYTHONPATH)`,
  );
const itCompiler = have ? it : it.skip;

/** Prints, per symbol: "fn <bound> <what the API macro expands to> <result> <args...>". */
const INTROSPECT = String.raw`
#include <cstdio>
#include <cstddef>
#include <type_traits>
template <class T> void cls() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_void_v<U>) std::printf(" void");
  else if constexpr (std::is_pointer_v<U>)
    std::printf(std::is_same_v<std::remove_cv_t<std::remove_pointer_t<U>>, char> ? " cstr" : " ptr");
  else if constexpr (std::is_enum_v<U>) std::printf(" enum%zu", sizeof(U));
  else if constexpr (std::is_floating_point_v<U>) std::printf(" f%zu", sizeof(U) * 8);
  else if constexpr (std::is_integral_v<U>)
    std::printf(" %c%zu", std::is_signed_v<U> ? 'i' : 'u', sizeof(U) * 8);
  else std::printf(" struct%zu", sizeof(U));
}
template <class R, class... A> void sig(const char* bound, const char* api, R (*)(A...)) {
  std::printf("fn %s %s", bound, api);
  cls<R>();
  (cls<A>(), ...);
  std::printf("\n");
}
#define STR_(x) #x
#define STR(x) STR_(x)
#define SIG(bound, api) sig(#bound, STR(api), static_cast<decltype(&bound)>(nullptr))
#define ENUM(name) std::printf("enum %s %lld\n", #name, (long long)(name))
`;

/** The C classes an FFI type may stand for (x86-64 / aarch64 LP64; size_t is u64 there). */
const ACCEPT: Record<string, readonly string[]> = {
  void: ["void"],
  i8: ["i8"],
  u8: ["u8"],
  i16: ["i16"],
  u16: ["u16"],
  i32: ["i32", "enum4"],
  u32: ["u32", "enum4"],
  i64: ["i64"],
  u64: ["u64"],
  usize: ["u64", "ptr"], // size_t, or a handle / device pointer carried as an address
  f32: ["f32"],
  f64: ["f64"],
  buffer: ["ptr", "cstr"],
  pointer: ["ptr", "cstr"],
  cstring: ["cstr"],
};

/** The API name a bound symbol comes from: cuMemAlloc_v2 <- cuMemAlloc (cuda.h's #define). */
const apiOf = (symbol: string) => symbol.replace(/_v\d+$/, "");

/**
 * The headers as a C compiler sees them: preprocessed in C mode (cublas_api.h adds C++-only
 * overloads of cublasGemmEx... under __cplusplus), keeping #defines (-dD) and only the lines
 * of non-system headers (line-marker flag 3 marks system headers, included normally instead).
 */
function cView(headers: string[], includes: string[]): string {
  const pre = spawnSync(
    "gcc",
    ["-E", "-dD", "-x", "c", "-std=gnu99", ...includes.map((i) => `-I${i}`), "-"],
    { input: headers.map((h) => `#include <${h}>`).join("\n"), encoding: "utf8" },
  );
  if (pre.status !== 0) throw new Error(`gcc -E failed:\n${pre.stderr}`);
  let keep = false;
  const out: string[] = [];
  for (const line of pre.stdout.split("\n")) {
    const marker = /^# \d+ "([^"]*)"(.*)$/.exec(line);
    if (marker) keep = !marker[1]!.startsWith("<") && !/\b3\b/.test(marker[2]!);
    else if (keep) out.push(line);
  }
  return out.join("\n");
}

const SYSTEM = ["stdint.h", "stddef.h", "stdio.h", "stdlib.h", "string.h", "math.h", "limits.h"];

/** Compiles and runs the introspection program over `headers`; its stdout lines. */
function introspect(headers: string[], includes: string[], body: string[]): string[] {
  const dir = mkdtempSync(`${tmpdir()}/bp-abi-`);
  const src = [
    ...SYSTEM.map((h) => `#include <${h}>`),
    `extern "C" {\n${cView(headers, includes)}\n}`,
    INTROSPECT,
    `int main() {\n${body.join("\n")}\n  return 0;\n}\n`,
  ].join("\n");
  writeFileSync(`${dir}/abi.cpp`, src);
  const build = spawnSync("g++", ["-std=c++17", "-w", `${dir}/abi.cpp`, "-o", `${dir}/abi`], {
    encoding: "utf8",
  });
  if (build.status !== 0) throw new Error(`g++ failed:\n${build.stderr.slice(0, 4000)}`);
  const run = spawnSync(`${dir}/abi`, [], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`introspection program failed: ${run.stderr}`);
  return run.stdout.trim().split("\n");
}

/** Each symbol's signature lines; the API is the unversioned name where the symbol is _vN. */
function signatureBody(decl: Decl): string[] {
  return Object.keys(decl).map((s) => `  SIG(${s}, ${apiOf(s) === s ? s : apiOf(s)});`);
}

/** What is wrong with each declaration against the compiler's view of its prototype. */
function signatureProblems(decl: Decl, lines: string[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const line of lines.filter((l) => l.startsWith("fn "))) {
    const [, bound, api, ret, ...args] = line.split(" ") as [string, string, string, string];
    seen.add(bound);
    const d = decl[bound]!;
    if (api !== bound) problems.push(`${bound}: the header maps ${apiOf(bound)} to ${api}`);
    if (!ACCEPT[d.returns]?.includes(ret))
      problems.push(`${bound}: returns ${ret}, declared ${d.returns}`);
    if (args.length !== d.args.length)
      problems.push(`${bound}: ${d.args.length} arguments declared, the header has ${args.length}`);
    args.forEach((c, i) => {
      const t = d.args[i];
      if (t !== undefined && !ACCEPT[t]?.includes(c))
        problems.push(`${bound}: argument ${i} is ${c} in the header, declared ${t}`);
    });
  }
  for (const s of Object.keys(decl)) if (!seen.has(s)) problems.push(`${s}: not introspected`);
  return problems;
}

/** Enumerators whose value differs from the compiler's. */
function enumProblems(table: Readonly<Record<string, number>>, lines: string[]): string[] {
  const values = new Map(
    lines
      .filter((l) => l.startsWith("enum "))
      .map((l) => [l.split(" ")[1]!, Number(l.split(" ")[2])]),
  );
  return Object.entries(table)
    .filter(([name, v]) => values.get(name) !== v)
    .map(([name, v]) => `${name}: ours ${v}, header ${values.get(name)}`);
}

const enumBody = (table: Readonly<Record<string, number>>) =>
  Object.keys(table).map((n) => `  ENUM(${n});`);

describe("FFI declarations against the C++ compiler's reading of the headers", () => {
  const includes = [TOOLKIT, ...(wheels ?? [])];
  const LIBRARIES: [string, string[], Decl][] = [
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
      const lines = introspect(headers, includes, signatureBody(decl));
      expect(signatureProblems(decl, lines)).toEqual([]);
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
    const wrong: Decl = {
      cuMemAlloc_v2: { args: ["buffer", "u32"], returns: "i32" },
      cuStreamDestroy: { args: ["usize"], returns: "i32" },
      cuLaunchKernel: { args: ["usize"], returns: "i32" },
    };
    const lines = introspect(["cuda.h"], includes, signatureBody(wrong));
    expect(signatureProblems(wrong, lines)).toEqual([
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
