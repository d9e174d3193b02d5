/**
 * Every oneDNN declaration and enumerator this package uses, checked against the
 * installed headers (libdnnl-dev: oneapi/dnnl/dnnl.h, dnnl_types.h): the prototype exists,
 * the argument count matches, each argument and the result have the FFI type of their C
 * size class (handles as usize), each enumerator has the header's value, and (where a C
 * compiler is installed) the struct sizes the kernels allocate are the header's.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtinModule, readEnv } from "@backplane/core/cpu";
import { declarationProblems, enumerators, typedefs } from "@backplane/testkit/c-header";
import { describe, expect, it } from "vitest";
import {
  ARG,
  BINARY_DESC_BYTES,
  CONV_DESC_BYTES,
  DNNL_DECL,
  ENUMS,
  EXEC_ARG_BYTES,
  MATMUL_DESC_BYTES,
  MEMORY_DESC_BYTES,
  REDUCTION_DESC_BYTES,
} from "../src/dnnl/library.ts";

const DIR = "/usr/include/oneapi/dnnl";
const present = existsSync(`${DIR}/dnnl.h`) && existsSync(`${DIR}/dnnl_types.h`);
if (!present && readEnv("BACKPLANE_EXPECT_DNNL") !== "1")
  console.log(
    "[backend-cpu-mkl] oneDNN header tests skipped: no oneapi/dnnl/dnnl.h (apt install libdnnl-dev)",
  );
const itHeader = (
  present || readEnv("BACKPLANE_EXPECT_DNNL") === "1" ? it : it.skip
) as typeof it.skip;

// What the testkit's reader does not know, spelled out: a dnnl_dims_t parameter is an
// int64_t array (a pointer to int64_t as a parameter), DNNL_API is an export attribute,
// and unsigned literals (0x1U) are plain numbers.
const read = (f: string) =>
  readFileSync(`${DIR}/${f}`, "utf8")
    .replace(/\bconst dnnl_dims_t\b/g, "const int64_t *")
    .replace(/\bDNNL_API\b/g, "")
    .replace(/\b(0x[0-9a-fA-F]+|\d+)[uU]\b/g, "$1");
const header = present ? `${read("dnnl_types.h")}\n${read("dnnl.h")}` : "";

describe("oneDNN declarations against the installed headers", () => {
  itHeader(
    "every function: name, argument count, size class of each argument and of the result",
    () => {
      const defs = typedefs(header);
      const problems = Object.entries(DNNL_DECL).flatMap(([name, d]) =>
        declarationProblems(header, defs, name, d),
      );
      expect(problems).toEqual([]);
      expect(Object.keys(DNNL_DECL).length).toBeGreaterThanOrEqual(25);
    },
  );

  itHeader("a declaration changed by hand is caught", () => {
    const defs = typedefs(header);
    const wrong = { args: ["buffer", "i32"], returns: "i32" };
    expect(declarationProblems(header, defs, "dnnl_engine_create", wrong)[0]).toMatch(
      /2 arguments declared, the prototype has 3/,
    );
    const handle = { args: ["buffer"], returns: "i32" };
    expect(declarationProblems(header, defs, "dnnl_stream_wait", handle)[0]).toMatch(
      /opaque handle: declare it usize/,
    );
  });

  itHeader("every enumerator and DNNL_ARG_* has the header's value", () => {
    const problems: string[] = [];
    for (const [cEnum, table] of Object.entries(ENUMS)) {
      const values = enumerators(header, cEnum);
      for (const [name, value] of Object.entries(table)) {
        const h = values.get(name);
        if (h !== value) problems.push(`${cEnum}.${name}: ours ${value}, header ${h}`);
      }
    }
    const define = (name: string): number | undefined => {
      const m = new RegExp(`#define\\s+${name}\\s+(\\w+)`).exec(header)?.[1];
      return m === undefined ? undefined : /^\d+$/.test(m) ? Number(m) : define(m);
    };
    // DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) is (BASE * ((idx) + 1)): spelled out for idx 0.
    const postOp0 = (arg: string) =>
      (define("DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE") ?? Number.NaN) | (define(arg) ?? Number.NaN);
    const args: Record<keyof typeof ARG, [string, number | undefined]> = {
      SRC: ["DNNL_ARG_SRC", define("DNNL_ARG_SRC")],
      SRC_1: ["DNNL_ARG_SRC_1", define("DNNL_ARG_SRC_1")],
      DST: ["DNNL_ARG_DST", define("DNNL_ARG_DST")],
      WEIGHTS: ["DNNL_ARG_WEIGHTS", define("DNNL_ARG_WEIGHTS")],
      BIAS: ["DNNL_ARG_BIAS", define("DNNL_ARG_BIAS")],
      SCRATCHPAD: ["DNNL_ARG_SCRATCHPAD", define("DNNL_ARG_SCRATCHPAD")],
      POST_OP_0_SRC_1: [
        "DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1",
        postOp0("DNNL_ARG_SRC_1"),
      ],
      FROM: ["DNNL_ARG_FROM", define("DNNL_ARG_FROM")],
      TO: ["DNNL_ARG_TO", define("DNNL_ARG_TO")],
    };
    for (const [k, [name, value]] of Object.entries(args))
      if (value !== ARG[k as keyof typeof ARG])
        problems.push(`${name}: ours ${ARG[k as keyof typeof ARG]}, header ${value}`);
    expect(problems).toEqual([]);
  });

  itHeader(
    "the struct sizes the kernels allocate are the header's (compiled, where cc exists)",
    () => {
      const cp = builtinModule<typeof import("node:child_process")>("node:child_process");
      const cc = cp?.spawnSync("cc", ["--version"], { encoding: "utf8" });
      if (!cp || cc?.status !== 0) {
        console.log("[backend-cpu-mkl] struct sizes not compiled: no C compiler");
        return;
      }
      const dir = mkdtempSync(join(tmpdir(), "bp-dnnl-"));
      try {
        writeFileSync(
          join(dir, "s.c"),
          `#include <stdio.h>\n#include <oneapi/dnnl/dnnl.h>\nint main(void){printf("%zu %zu %zu %zu %zu %zu", sizeof(dnnl_memory_desc_t), sizeof(dnnl_convolution_desc_t), sizeof(dnnl_exec_arg_t), sizeof(dnnl_matmul_desc_t), sizeof(dnnl_binary_desc_t), sizeof(dnnl_reduction_desc_t));return 0;}\n`,
        );
        const c = cp.spawnSync("cc", [join(dir, "s.c"), "-o", join(dir, "s")], {
          encoding: "utf8",
        });
        expect(c.status, c.stderr).toBe(0);
        const r = cp.spawnSync(join(dir, "s"), [], { encoding: "utf8" });
        expect(r.stdout.trim()).toBe(
          `${MEMORY_DESC_BYTES} ${CONV_DESC_BYTES} ${EXEC_ARG_BYTES} ${MATMUL_DESC_BYTES} ${BINARY_DESC_BYTES} ${REDUCTION_DESC_BYTES}`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
