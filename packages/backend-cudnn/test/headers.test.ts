/**
 * Every FFI declaration and every enumerator this package uses, checked against the
 * installed cudnn_graph.h: the prototype exists, the argument count matches, each argument
 * and the result have the FFI type of their C size class (handles as usize, host pointers
 * as buffer), and each enumerator has the header's value (cuDNN 9's status numbering too).
 */
import { existsSync, readFileSync } from "node:fs";
import {
  ACCEPTS,
  classify,
  enumerators,
  pointerKind,
  prototype,
  typedefs,
} from "@backplane/testkit/c-header";
import { describe, expect, it } from "vitest";
import { CUDNN_DECL, ENUMS } from "../src/native/api.ts";
import { includeDir, skipLine } from "./helpers.ts";

const header =
  includeDir && existsSync(`${includeDir}/cudnn_graph.h`)
    ? readFileSync(`${includeDir}/cudnn_graph.h`, "utf8")
    : "";
const itHeader = header ? it : it.skip;
if (!header) skipLine();

/** Problems of one declaration against the header's prototype (empty: it matches). */
export function declarationProblems(
  text: string,
  name: string,
  decl: { args: readonly string[]; returns: string },
): string[] {
  const defs = typedefs(text);
  // Types of other CUDA headers that cudnn_graph.h uses.
  defs.set("cudaStream_t", "struct CUstream_st *");
  defs.set("libraryPropertyType", "enum");
  const proto = prototype(text, name);
  if (!proto) return [`${name}: no prototype in cudnn_graph.h`];
  const problems: string[] = [];
  if (proto.params.length !== decl.args.length)
    problems.push(
      `${name}: ${decl.args.length} arguments declared, the header has ${proto.params.length}`,
    );
  proto.params.forEach((p, i) => {
    const t = decl.args[i];
    if (t === undefined) return;
    const cls = classify(p.type, defs);
    if (!ACCEPTS[cls].includes(t))
      problems.push(`${name}: argument ${i} (${p.type}) is ${cls}, declared ${t}`);
    const kind = pointerKind(p.type, defs);
    if (kind === "handle" && t !== "usize")
      problems.push(`${name}: argument ${i} (${p.type}) is a handle: declare usize`);
    if (kind === "explicit" && t === "usize")
      problems.push(`${name}: argument ${i} (${p.type}) is a host pointer: declare buffer`);
  });
  const rc = classify(proto.returns, defs);
  const ok =
    decl.returns === "cstring"
      ? /char\s*\*$/.test(proto.returns)
      : ACCEPTS[rc].includes(decl.returns);
  if (!ok) problems.push(`${name}: returns ${proto.returns} (${rc}), declared ${decl.returns}`);
  return problems;
}

describe("cuDNN declarations against the installed cudnn_graph.h", () => {
  itHeader(
    "every function: name, argument count, size class of each argument and of the result",
    () => {
      const problems = Object.entries(CUDNN_DECL).flatMap(([name, d]) =>
        declarationProblems(header, name, d),
      );
      expect(problems).toEqual([]);
      expect(Object.keys(CUDNN_DECL).length).toBeGreaterThanOrEqual(14);
    },
  );

  itHeader("a declaration changed by hand is caught", () => {
    const wrongCount = { args: ["usize", "i32", "i32", "i64"], returns: "i32" };
    expect(declarationProblems(header, "cudnnBackendSetAttribute", wrongCount)[0]).toMatch(
      /4 arguments declared, the header has 5/,
    );
    const wrongWidth = { args: ["usize", "i32", "i32", "i32", "buffer"], returns: "i32" };
    expect(declarationProblems(header, "cudnnBackendSetAttribute", wrongWidth)[0]).toMatch(
      /argument 3 \(int64_t\) is i64, declared i32/,
    );
    const handleAsBuffer = { args: ["buffer"], returns: "i32" };
    expect(declarationProblems(header, "cudnnDestroy", handleAsBuffer)[0]).toMatch(
      /handle: declare usize/,
    );
    expect(declarationProblems(header, "cudnnGetVersion", { args: [], returns: "i32" })[0]).toMatch(
      /returns size_t/,
    );
  });

  itHeader("every enumerator has the header's value (cuDNN 9 status codes included)", () => {
    const problems: string[] = [];
    for (const [cEnum, table] of Object.entries(ENUMS)) {
      const values = enumerators(header, cEnum);
      for (const [name, value] of Object.entries(table)) {
        const h = values.get(name);
        if (h !== value) problems.push(`${cEnum}.${name}: ours ${value}, header ${h}`);
      }
    }
    expect(problems).toEqual([]);
    expect(enumerators(header, "cudnnStatus_t").get("CUDNN_STATUS_BAD_PARAM")).toBe(2000);
  });
});
