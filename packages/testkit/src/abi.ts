/**
 * A C/C++ compiler as the oracle for a backend's FFI tables: `@backplane/testkit/abi`.
 * A generated program includes the installed headers, takes `decltype(&symbol)` of each bound
 * symbol (so the preprocessor's renames, typedef chains and enum widths are the compiler's),
 * and prints the size class of its result and of every argument, the name its API macro
 * expands to, enumerator values and sizeof of C types; the helpers compare that with the
 * tables. Node only (Bun and Deno too): it runs gcc and g++ through node:child_process.
 *
 * Lines the program prints, one per SIG / ENUM / SIZE of the body:
 * - `fn <bound> <what the API name expands to> <result class> <argument classes...>`;
 * - `enum <name> <value>`;
 * - `size <key> <bytes>`.
 * A class is void, ptr, cstr (a char pointer), enum<bytes>, f<bits>, i<bits>, u<bits> or
 * struct<bytes>.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";

/** Symbol name -> FFI argument and result types (the shape of a core FFI declaration). */
export type AbiDecl = Readonly<
  Record<string, { readonly args: readonly string[]; readonly returns: string }>
>;

/**
 * The prelude of the program: cls<T>() prints T's class, SIG(bound, api) a symbol's line
 * (api is the name the header's macros may rename: SIG(cuMemAlloc_v2, cuMemAlloc)),
 * ENUM(name) an enumerator's or #define's value, SIZE(key, type) sizeof(type).
 */
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
#define SIZE(key, type) std::printf("size %s %zu\n", #key, sizeof(type))
`;

/** The C classes an FFI type may stand for (x86-64 / aarch64 LP64; size_t is u64 there). */
export const ACCEPT: Readonly<Record<string, readonly string[]>> = {
  void: ["void"],
  bool: ["u8"],
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

/** System headers the program includes itself (cView leaves their lines out). */
const SYSTEM = [
  "stdint.h",
  "stddef.h",
  "stdbool.h",
  "stdio.h",
  "stdlib.h",
  "string.h",
  "math.h",
  "limits.h",
];

/** Whether gcc and g++ run: the tests that need them skip (or throw) where they do not. */
export function compilerAvailable(): boolean {
  return ["gcc", "g++"].every((c) => spawnSync(c, ["--version"]).status === 0);
}

/**
 * The headers as a C compiler sees them: preprocessed in C mode (cublas_api.h adds C++-only
 * overloads of cublasGemmEx... under __cplusplus), keeping #defines (-dD) and only the lines
 * of non-system headers (line-marker flag 3 marks system headers, included normally instead).
 */
function cView(headers: readonly string[], includes: readonly string[]): string {
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

/**
 * Compiles `headers` (found in `includes`) with `body` (statements: SIG, ENUM, SIZE or any
 * C++) as main's, runs the program, and returns its stdout lines. Throws where gcc, g++ or
 * the program fails.
 */
export function introspect(
  headers: readonly string[],
  includes: readonly string[],
  body: readonly string[],
): string[] {
  const dir = mkdtempSync(`${tmpdir()}/bp-abi-`);
  try {
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
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A SIG line for each symbol of `decl`; `apiOf` names the API a bound symbol comes from where
 * the header #defines it to the symbol (cuMemAlloc for cuMemAlloc_v2), the symbol by default.
 */
export function signatureBody(
  decl: AbiDecl,
  apiOf: (symbol: string) => string = (s) => s,
): string[] {
  return Object.keys(decl).map((s) => `  SIG(${s}, ${apiOf(s)});`);
}

/**
 * What is wrong with each declaration of `decl` against the compiler's view of its
 * prototype (`lines` of a program over signatureBody(decl, apiOf), with the same apiOf):
 * the API name expanding to another symbol, the result or an argument of another class, a
 * different argument count, a symbol not introspected.
 */
export function signatureProblems(
  decl: AbiDecl,
  lines: readonly string[],
  apiOf: (symbol: string) => string = (s) => s,
): string[] {
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

/** The `kind` lines ("enum", "size") of a program's output: name -> number. */
export function valuesOf(lines: readonly string[], kind: string): Map<string, number> {
  return new Map(
    lines
      .filter((l) => l.startsWith(`${kind} `))
      .map((l) => [l.split(" ")[1]!, Number(l.split(" ")[2])] as const),
  );
}

/** An ENUM line for each name of `table`. */
export function enumBody(table: Readonly<Record<string, number>>): string[] {
  return Object.keys(table).map((n) => `  ENUM(${n});`);
}

/** The enumerators of `table` whose value differs from the compiler's (`lines` of enumBody). */
export function enumProblems(
  table: Readonly<Record<string, number>>,
  lines: readonly string[],
): string[] {
  const values = valuesOf(lines, "enum");
  return Object.entries(table)
    .filter(([name, v]) => values.get(name) !== v)
    .map(([name, v]) => `${name}: ours ${v}, header ${values.get(name)}`);
}
