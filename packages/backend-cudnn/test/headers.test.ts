/**
 * Every FFI declaration and every enumerator this package uses, checked against the
 * installed cudnn_graph.h: the prototype exists, the argument count matches, each argument
 * and the result have the FFI type of their C size class (handles as usize, host pointers
 * as buffer), and each enumerator has the header's value (cuDNN 9's status numbering too).
 */
import { existsSync, readFileSync } from "node:fs";
import { declarationProblems, enumerators, typedefs } from "@backplane/testkit/c-header";
import { describe, expect, it } from "vitest";
import { CUDNN_DECL, ENUMS } from "../src/native/api.ts";
import { CUBLASLT_VERSION_DECL } from "../src/state.ts";
import { includeDir, skipLine } from "./helpers.ts";

const header =
  includeDir && existsSync(`${includeDir}/cudnn_graph.h`)
    ? readFileSync(`${includeDir}/cudnn_graph.h`, "utf8")
    : "";
const itHeader = header ? it : it.skip;
if (!header) skipLine();

/** Types of other CUDA headers that cudnn_graph.h uses, plus the header's own. */
function definitions(): Map<string, string> {
  const defs = typedefs(header);
  defs.set("cudaStream_t", "struct CUstream_st *");
  defs.set("libraryPropertyType", "enum");
  return defs;
}

const problemsOf = (name: string, decl: { args: readonly string[]; returns: string }) =>
  declarationProblems(header, definitions(), name, decl);

describe("cuDNN declarations against the installed cudnn_graph.h", () => {
  itHeader(
    "every function: name, argument count, size class of each argument and of the result",
    () => {
      const problems = Object.entries(CUDNN_DECL).flatMap(([name, d]) => problemsOf(name, d));
      expect(problems).toEqual([]);
      expect(Object.keys(CUDNN_DECL).length).toBeGreaterThanOrEqual(14);
    },
  );

  itHeader(
    "the cuBLASLt version query opened beside cuDNN matches cublasLt.h (pip's nvidia/cu13)",
    () => {
      const lt = `${includeDir}/../../cu13/include/cublasLt.h`;
      expect(existsSync(lt), lt).toBe(true);
      const text = readFileSync(lt, "utf8");
      const problems = Object.entries(CUBLASLT_VERSION_DECL).flatMap(([name, d]) =>
        declarationProblems(text, typedefs(text), name, d),
      );
      expect(problems).toEqual([]);
      expect(
        declarationProblems(text, typedefs(text), "cublasLtGetVersion", {
          args: [],
          returns: "i32",
        }),
      ).not.toEqual([]);
    },
  );

  itHeader("a declaration changed by hand is caught", () => {
    const wrongCount = { args: ["usize", "i32", "i32", "i64"], returns: "i32" };
    expect(problemsOf("cudnnBackendSetAttribute", wrongCount)[0]).toMatch(
      /4 arguments declared, the prototype has 5/,
    );
    const wrongWidth = { args: ["usize", "i32", "i32", "i32", "buffer"], returns: "i32" };
    expect(problemsOf("cudnnBackendSetAttribute", wrongWidth)[0]).toMatch(
      /argument 3 \(int64_t elementCount\) is i64, declared i32/,
    );
    const handleAsBuffer = { args: ["buffer"], returns: "i32" };
    expect(problemsOf("cudnnDestroy", handleAsBuffer)[0]).toMatch(
      /opaque handle: declare it usize/,
    );
    expect(problemsOf("cudnnGetVersion", { args: [], returns: "i32" })[0]).toMatch(
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
