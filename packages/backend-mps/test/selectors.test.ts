/**
 * The Metal half checked as far as Linux allows: every class and selector it sends is in
 * native/bp_mps_selectors.h, every one of those is a documented method (test/apple-api.json,
 * with its Apple documentation page), each is used, and each direct objc_msgSend cast
 * passes as many arguments as the selector has colons (a wrong count is undefined
 * behaviour on arm64, not a compile error).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
const table = readFileSync(join(here, "..", "native", "bp_mps_selectors.h"), "utf8");
const metal = readFileSync(join(here, "..", "native", "bp_mps_metal.c"), "utf8");
const api = JSON.parse(readFileSync(join(here, "apple-api.json"), "utf8")) as {
  classes: string[];
  methods: { selector: string; on: string; kind: "class" | "instance"; doc: string }[];
};

const body = (macro: string) => {
  const start = table.indexOf(`#define ${macro}(X)`);
  const end = table.indexOf("\n\n", start);
  return table
    .slice(start, end < 0 ? undefined : end)
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/\\\n/g, " "); // line continuations
};
const selectors = new Map(
  [...body("BP_MPS_SELECTORS").matchAll(/X\((\w+),\s*((?:"[^"]*"\s*)+)\)/g)].map((m) => [
    m[1]!,
    [...m[2]!.matchAll(/"([^"]*)"/g)].map((s) => s[1]).join(""),
  ]),
);
const classes = [...body("BP_MPS_CLASSES").matchAll(/X\((\w+)\)/g)].map((m) => m[1]!);
const documented = new Map(api.methods.map((m) => [m.selector, m]));
const colons = (s: string) => (s.match(/:/g) ?? []).length;
// The Metal file without the table-expanding macros' own lines.
const code = metal.replace(/\/\*[\s\S]*?\*\//g, "");

describe("the Metal half's selectors", () => {
  it("the table parses", () => {
    expect(selectors.size).toBeGreaterThan(50);
    expect(classes.length).toBe(8);
  });

  it("every selector in the table is a documented method, and the list has nothing stale", () => {
    const undocumented = [...selectors.values()].filter((s) => !documented.has(s));
    expect(undocumented).toEqual([]);
    expect(new Set(api.methods.map((m) => m.selector))).toEqual(new Set(selectors.values()));
    for (const m of api.methods)
      expect(m.doc, m.selector).toMatch(
        /^https:\/\/developer\.apple\.com\/documentation\/[a-z0-9/]+\?language=objc$/,
      );
  });

  it("every class looked up is documented, and only the table registers selectors", () => {
    expect(new Set(classes)).toEqual(new Set(api.classes));
    // One call site each: the LOAD_SEL and LOAD_CLASS macros that walk the table.
    expect(code.match(/register_sel\(/g)?.length).toBe(1);
    expect(code.match(/get_class\(/g)?.length).toBe(1);
    expect(code).not.toMatch(/sel_registerName\("|objc_getClass\("/);
  });

  it("every selector in the table is sent somewhere", () => {
    const unused = [...selectors.keys()].filter(
      (name) => !new RegExp(`\\bsel_${name}\\b`).test(code.replace(/BP_MPS_SELECTORS\(\w+\)/g, "")),
    );
    expect(unused).toEqual([]);
  });

  it("each direct send passes one argument per colon, to a class or an instance as documented", () => {
    const sends = [
      ...code.matchAll(/MSG\(([^()]*(?:\([^()]*\)[^()]*)*)\)\(\s*([^,]+?),\s*sel_(\w+)/g),
    ];
    expect(sends.length).toBeGreaterThan(30);
    for (const [, types, receiver, name] of sends) {
      const selector = selectors.get(name!);
      expect(selector, name).toBeDefined();
      const args = types!.split(",").length - 1; // the first type is the return type
      expect(args, `${selector}: ${types}`).toBe(colons(selector!));
      const kind = documented.get(selector!)!.kind;
      const toClass = receiver!.trim().startsWith("cls_");
      if (selector !== "alloc")
        expect(toClass, `${selector} sent to ${receiver}`).toBe(kind === "class");
    }
  });

  it("the wrappers binary() and unary() take selectors of 3 and 2 arguments", () => {
    for (const [, name] of code.matchAll(/\bbinary\(e, sel_(\w+)/g))
      expect(colons(selectors.get(name!)!), name).toBe(3);
    for (const [, name] of code.matchAll(/\bunary\(e, sel_(\w+)/g))
      expect(colons(selectors.get(name!)!), name).toBe(2);
  });
});
