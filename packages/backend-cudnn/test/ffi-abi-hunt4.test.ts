/**
 * The cuDNN declarations, constants and attribute encodings against what a C++ compiler and
 * the header's own documentation say (headers.test.ts reads cudnn_graph.h with a regex
 * parser; this is an independent oracle):
 * - each bound symbol's result and argument classes, from `decltype(&symbol)` of the header
 *   preprocessed as C;
 * - every enumerator of api.ts, printed by the compiler;
 * - the bytes encode() writes per element of each cudnnBackendAttributeType_t, against
 *   sizeof the C type the header names for it (CUDNN_TYPE_BOOLEAN is C++'s one-byte bool);
 * - the attribute type of every cudnnBackendSetAttribute / GetAttribute call the kernels make
 *   (conv2d, attention: graphs, heuristics, plans, variant packs), against the type the
 *   header's attribute list documents for that attribute.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import "../src/index.ts";
import {
  conv2d,
  randn,
  refreshAvailability,
  scaledDotProductAttention,
  type Tensor,
} from "@backplane/core";
import { readEnv } from "@backplane/core/cpu";
import { afterAll, describe, expect, it } from "vitest";
import { type AttrValue, encode } from "../src/graph/descriptor.ts";
import { ATTR, CUDNN_DECL, ENUMS, TYPE } from "../src/native/api.ts";
import { RecordingLayer } from "../src/recording.ts";
import { CUBLASLT_VERSION_DECL, installLayer } from "../src/state.ts";
import { fakeContext, hostCudaMemory, includeDir, skipLine } from "./helpers.ts";

type Decl = Readonly<
  Record<string, { readonly args: readonly string[]; readonly returns: string }>
>;

const TOOLKIT = readEnv("BACKPLANE_CUDA_INCLUDE") ?? "/usr/local/cuda/include";
const graphH = includeDir ? `${includeDir}/cudnn_graph.h` : "";
const cu13 = includeDir ? `${includeDir}/../../cu13/include` : "";
const cxx = spawnSync("g++", ["--version"]).status === 0;
const have = cxx && existsSync(graphH) && existsSync(`${TOOLKIT}/cuda_runtime_api.h`);
if (!have) skipLine();
const itCompiler = have && existsSync(`${cu13}/cublasLt.h`) ? it : it.skip;
const itHeader = existsSync(graphH) ? it : it.skip;

const INTROSPECT = String.raw`
#include <cstdio>
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
#define SIG(name) sig(#name, STR(name), static_cast<decltype(&name)>(nullptr))
#define ENUM(name) std::printf("enum %s %lld\n", #name, (long long)(name))
#define SIZE(key, type) std::printf("size %s %zu\n", #key, sizeof(type))
`;

/** The C classes each FFI type may stand for (LP64: size_t is u64). */
const ACCEPT: Record<string, readonly string[]> = {
  void: ["void"],
  i32: ["i32", "enum4"],
  u32: ["u32", "enum4"],
  i64: ["i64"],
  u64: ["u64"],
  usize: ["u64", "ptr"],
  buffer: ["ptr", "cstr"],
  pointer: ["ptr", "cstr"],
  cstring: ["cstr"],
};

/** The headers preprocessed as C (-dD keeps #defines), without the system headers' lines. */
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

function introspect(headers: string[], body: string[]): string[] {
  const dir = mkdtempSync(`${tmpdir()}/bp-cudnn-abi-`);
  const system = ["stdint.h", "stddef.h", "stdbool.h", "stdio.h", "stdlib.h", "math.h"];
  const src = [
    ...system.map((h) => `#include <${h}>`),
    `extern "C" {\n${cView(headers, [TOOLKIT, includeDir!, cu13])}\n}`,
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

function signatureProblems(decl: Decl, lines: string[]): string[] {
  const problems: string[] = [];
  for (const line of lines.filter((l) => l.startsWith("fn "))) {
    const [, bound, api, ret, ...args] = line.split(" ") as [string, string, string, string];
    const d = decl[bound]!;
    if (api !== bound) problems.push(`${bound}: the header maps it to ${api}`);
    if (!ACCEPT[d.returns]?.includes(ret))
      problems.push(`${bound}: returns ${ret}, declared ${d.returns}`);
    if (args.length !== d.args.length)
      problems.push(`${bound}: ${d.args.length} arguments declared, the header has ${args.length}`);
    args.forEach((c, i) => {
      if (d.args[i] !== undefined && !ACCEPT[d.args[i]!]?.includes(c))
        problems.push(`${bound}: argument ${i} is ${c} in the header, declared ${d.args[i]}`);
    });
  }
  return problems;
}

const valuesOf = (lines: string[], kind: string) =>
  new Map(
    lines
      .filter((l) => l.startsWith(`${kind} `))
      .map((l) => [l.split(" ")[1]!, Number(l.split(" ")[2])] as const),
  );

/** "CUDNN_TYPE_HANDLE = 0, /**< cudnnHandle_t value." -> the C type of each attribute type. */
function attributeCTypes(header: string): Map<string, string> {
  const named: Record<string, string> = {
    "Boolean value": "bool",
    "64-bit signed integer value": "int64_t",
    "32-bit float value": "float",
    "64-bit double value": "double",
    "Void pointer value": "void *",
  };
  const out = new Map<string, string>();
  for (const m of header.matchAll(/\b(CUDNN_TYPE_\w+)\s*=\s*\d+,\s*\/\*\*<\s*([^.@]+?)\.?\s*@/g)) {
    const what = m[2]!.trim();
    const t = named[what] ?? /^(\w+) value$/.exec(what)?.[1];
    if (t) out.set(m[1]!, t);
  }
  return out;
}

/**
 * The attribute types the header's attribute lists document: "- CUDNN_ATTR_X (CUDNN_TYPE_Y,
 * ...)" or "(CUDNN_TYPE_FLOAT or CUDNN_TYPE_DOUBLE, ...)". Those it describes in words only
 * (the pointwise operation's tensors, "descriptor"; the by-value flag, "flag"; CONV_MODE,
 * listed as CUDNN_ATTR_CONVOLUTION_MODE) take the type its prose gives.
 */
function documentedTypes(header: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const re = /^\s*\*\s*- (CUDNN_ATTR_\w+) \((CUDNN_TYPE_\w+)((?:\s*(?:\/|or)\s*CUDNN_TYPE_\w+)*)/gm;
  for (const m of header.matchAll(re))
    if (!out.has(m[1]!)) out.set(m[1]!, [m[2]!, ...(m[3]!.match(/CUDNN_TYPE_\w+/g) ?? [])]);
  const desc = ["CUDNN_TYPE_BACKEND_DESCRIPTOR"];
  for (const k of ["PW_DESCRIPTOR", "XDESC", "BDESC", "YDESC", "TDESC"])
    if (!out.has(`CUDNN_ATTR_OPERATION_POINTWISE_${k}`))
      out.set(`CUDNN_ATTR_OPERATION_POINTWISE_${k}`, desc);
  if (!out.has("CUDNN_ATTR_CONVOLUTION_CONV_MODE"))
    out.set("CUDNN_ATTR_CONVOLUTION_CONV_MODE", out.get("CUDNN_ATTR_CONVOLUTION_MODE") ?? []);
  if (!out.has("CUDNN_ATTR_TENSOR_IS_BY_VALUE"))
    out.set("CUDNN_ATTR_TENSOR_IS_BY_VALUE", ["CUDNN_TYPE_BOOLEAN"]);
  return out;
}

const header = existsSync(graphH) ? readFileSync(graphH, "utf8") : "";

describe("cuDNN's FFI against the C++ compiler's reading of cudnn_graph.h", () => {
  itCompiler("every symbol: exported name, result and argument classes", () => {
    const body = Object.keys(CUDNN_DECL).map((s) => `  SIG(${s});`);
    expect(signatureProblems(CUDNN_DECL, introspect(["cudnn_graph.h"], body))).toEqual([]);
    const lt = introspect(["cublasLt.h"], ["  SIG(cublasLtGetVersion);"]);
    expect(signatureProblems(CUBLASLT_VERSION_DECL, lt)).toEqual([]);
  });

  itCompiler("every enumerator of api.ts has the compiler's value", () => {
    const tables = Object.values(ENUMS) as Readonly<Record<string, number>>[];
    const body = tables.flatMap((t) => Object.keys(t).map((n) => `  ENUM(${n});`));
    const values = valuesOf(introspect(["cudnn_graph.h"], body), "enum");
    const problems = tables.flatMap((t) =>
      Object.entries(t)
        .filter(([n, v]) => values.get(n) !== v)
        .map(([n, v]) => `${n}: ours ${v}, header ${values.get(n)}`),
    );
    expect(problems).toEqual([]);
  });

  itCompiler("encode() writes each attribute type's elements at sizeof its C type", () => {
    const cTypes = attributeCTypes(header);
    // Every attribute type the package names is described in the header.
    expect(Object.keys(TYPE).filter((t) => !cTypes.has(t))).toEqual([]);
    const body = Object.keys(TYPE).map((t) => `  SIZE(${t}, ${cTypes.get(t)});`);
    const sizes = valuesOf(introspect(["cudnn_graph.h"], body), "size");
    const problems: string[] = [];
    for (const t of Object.keys(TYPE) as (keyof typeof TYPE)[]) {
      const sample = (t === "CUDNN_TYPE_BOOLEAN" ? [true] : [1]) as never[];
      const value = { type: t, values: t.endsWith("PTR") || t.endsWith("HANDLE") ? [1n] : sample };
      const bytes =
        t === "CUDNN_TYPE_BACKEND_DESCRIPTOR" ? 8 : encode(value as AttrValue).byteLength;
      if (bytes !== sizes.get(t))
        problems.push(`${t} (${cTypes.get(t)}): sizeof ${sizes.get(t)}, encode() writes ${bytes}`);
    }
    expect(problems).toEqual([]);
  });
});

describe("the attribute type of every call the kernels make, against cudnn_graph.h's lists", () => {
  const memory = hostCudaMemory();
  afterAll(() => memory.restore());
  itHeader("conv2d (bias) and attention (causal; additive mask)", () => {
    const layer = new RecordingLayer([{ index: 2, numericalNotes: [], workspaceBytes: 256 }]);
    const used = new Map<string, Set<string>>();
    const names = new Map<number, string>(Object.entries(ATTR).map(([k, v]) => [v, k]));
    const typeNames = new Map<number, string>(Object.entries(TYPE).map(([k, v]) => [v, k]));
    const note = (attr: number, type: number) => {
      const key = names.get(attr) ?? `attribute ${attr}`;
      if (!used.has(key)) used.set(key, new Set());
      used.get(key)!.add(typeNames.get(type) ?? `type ${type}`);
    };
    const s = layer.symbols as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const fn of ["cudnnBackendSetAttribute", "cudnnBackendGetAttribute"]) {
      const real = s[fn]!;
      s[fn] = (...a: unknown[]) => {
        note(a[1] as number, a[2] as number);
        return real(...a);
      };
    }
    const undo = installLayer(layer);
    const device = fakeContext();
    refreshAvailability();
    try {
      const cuda = (shape: number[], dtype: "float32" | "float16" = "float32"): Tensor =>
        randn(shape, { dtype }).to("cuda");
      conv2d(cuda([2, 8, 9, 9]), cuda([4, 8, 3, 3]), { bias: cuda([4]), padding: 1 });
      const q = cuda([1, 2, 16, 64], "float16");
      scaledDotProductAttention(q, q, q, { isCausal: true });
      scaledDotProductAttention(q, q, q, { attnMask: cuda([16, 16], "float16") });
    } finally {
      device.restore();
      undo();
      refreshAvailability();
    }
    const documented = documentedTypes(header);
    const problems: string[] = [];
    for (const [attr, types] of used)
      for (const t of types)
        if (!documented.get(attr)?.includes(t))
          problems.push(`${attr}: set as ${t}, the header documents ${documented.get(attr)}`);
    expect(problems).toEqual([]);
    expect(used.size).toBeGreaterThan(30);
  });
});
