/**
 * src/native/abi.ts held to native/bp_mps.h: every exported prototype has exactly one FFI
 * declaration of matching types (testkit's C-header checker), and every status code and
 * enumeration the package uses has the header's value.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { declarationProblems, typedefs } from "@backplane/testkit/c-header";
import { describe, expect, it } from "vitest";
import {
  ABI_VERSION,
  DTYPE,
  ELEMENTWISE,
  MASK,
  MAX_RANK,
  MPS_DECL,
  STATUS,
  statusName,
} from "../src/native/abi.ts";

const native = join(dirname(fileURLToPath(import.meta.url)), "..", "native");
// BP_MPS_API is the visibility attribute: not part of a prototype's types.
const header = readFileSync(join(native, "bp_mps.h"), "utf8").replace(/\bBP_MPS_API\b/g, "");
const defs = typedefs(header);

function defines(prefix: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of header.matchAll(/^#define (BP_MPS_\w+) (-?\d+)\s*$/gm))
    if (m[1]!.startsWith(prefix)) out.set(m[1]!, Number(m[2]));
  return out;
}

describe("the helper's C ABI", () => {
  it("every FFI declaration matches its prototype in bp_mps.h", () => {
    const problems = Object.entries(MPS_DECL).flatMap(([name, decl]) =>
      declarationProblems(header, defs, name, decl),
    );
    expect(problems).toEqual([]);
  });

  it("every function the header exports is declared", () => {
    const exported = [...header.matchAll(/\b(bp_mps_\w+)\s*\(/g)].map((m) => m[1]);
    expect(new Set(exported)).toEqual(new Set(Object.keys(MPS_DECL)));
  });

  it("status codes, dtypes, ops, masks and limits have the header's values", () => {
    const expectSame = (prefix: string, table: Record<string, number>, name = (k: string) => k) =>
      expect(new Map(Object.entries(table).map(([k, v]) => [`${prefix}${name(k)}`, v]))).toEqual(
        new Map([...defines(prefix)].filter(([k]) => k !== "BP_MPS_ABI_VERSION")),
      );
    expectSame(
      "BP_MPS_E_",
      Object.fromEntries(Object.entries(STATUS).filter(([k]) => k !== "OK")),
      (k) => k.slice(2),
    );
    expect(defines("BP_MPS_OK").get("BP_MPS_OK")).toBe(STATUS.OK);
    const dtypeNames: Record<string, string> = { float32: "F32", float16: "F16", bfloat16: "BF16" };
    for (const [k, v] of Object.entries(DTYPE))
      expect(defines("BP_MPS_").get(`BP_MPS_${dtypeNames[k]}`), k).toBe(v);
    for (const [k, v] of Object.entries(ELEMENTWISE))
      expect(defines("BP_MPS_").get(`BP_MPS_${k}`), k).toBe(v);
    expectSame("BP_MPS_MASK_", MASK);
    expect(defines("BP_MPS_MAX_RANK").get("BP_MPS_MAX_RANK")).toBe(MAX_RANK);
    expect(defines("BP_MPS_ABI_VERSION").get("BP_MPS_ABI_VERSION")).toBe(ABI_VERSION);
    expect(statusName(2)).toBe("BP_MPS_E_FREED_BUFFER");
    expect(statusName(42)).toBe("status 42");
  });
});
