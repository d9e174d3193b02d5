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
import { existsSync, readFileSync } from "node:fs";
import "../src/index.ts";
import {
  conv2d,
  randn,
  refreshAvailability,
  scaledDotProductAttention,
  type Tensor,
} from "@backplane/core";
import { readEnv } from "@backplane/core/cpu";
import * as abi from "@backplane/testkit/abi";
import { afterAll, describe, expect, it } from "vitest";
import { type AttrValue, encode } from "../src/graph/descriptor.ts";
import { ATTR, CUDNN_DECL, ENUMS, TYPE } from "../src/native/api.ts";
import { RecordingLayer } from "../src/recording.ts";
import { CUBLASLT_VERSION_DECL, installLayer } from "../src/state.ts";
import { fakeContext, hostCudaMemory, includeDir, skipLine } from "./helpers.ts";

const TOOLKIT = readEnv("BACKPLANE_CUDA_INCLUDE") ?? "/usr/local/cuda/include";
const graphH = includeDir ? `${includeDir}/cudnn_graph.h` : "";
const cu13 = includeDir ? `${includeDir}/../../cu13/include` : "";
const have =
  abi.compilerAvailable() && existsSync(graphH) && existsSync(`${TOOLKIT}/cuda_runtime_api.h`);
if (!have) skipLine();
const itCompiler = have && existsSync(`${cu13}/cublasLt.h`) ? it : it.skip;
const itHeader = existsSync(graphH) ? it : it.skip;
const includes = includeDir ? [TOOLKIT, includeDir, cu13] : [];

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
    const lines = abi.introspect(["cudnn_graph.h"], includes, abi.signatureBody(CUDNN_DECL));
    expect(abi.signatureProblems(CUDNN_DECL, lines)).toEqual([]);
    const lt = abi.introspect(["cublasLt.h"], includes, abi.signatureBody(CUBLASLT_VERSION_DECL));
    expect(abi.signatureProblems(CUBLASLT_VERSION_DECL, lt)).toEqual([]);
  });

  itCompiler("every enumerator of api.ts has the compiler's value", () => {
    const tables = Object.values(ENUMS) as Readonly<Record<string, number>>[];
    const lines = abi.introspect(["cudnn_graph.h"], includes, tables.flatMap(abi.enumBody));
    expect(tables.flatMap((t) => abi.enumProblems(t, lines))).toEqual([]);
  });

  itCompiler("encode() writes each attribute type's elements at sizeof its C type", () => {
    const cTypes = attributeCTypes(header);
    // Every attribute type the package names is described in the header.
    expect(Object.keys(TYPE).filter((t) => !cTypes.has(t))).toEqual([]);
    const body = Object.keys(TYPE).map((t) => `  SIZE(${t}, ${cTypes.get(t)});`);
    const sizes = abi.valuesOf(abi.introspect(["cudnn_graph.h"], includes, body), "size");
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
