/**
 * Walks the API we owe (shared/design/API.md; docs/design/API.md is its copy in the repo)
 * and checks that every name it lists exists on `backends`, with its default.
 */

import * as core from "@backplane/core";
import { backends, flagSpec, type NamespaceBase } from "@backplane/core";
import { builtinModule, host } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { envNames } from "../src/flags/spec.ts";

const g = host;
function readText(rel: string): string | undefined {
  const url = new URL(rel, import.meta.url);
  try {
    if (g.Deno) return g.Deno.readTextFileSync(url);
    return builtinModule<typeof import("node:fs")>("node:fs")?.readFileSync(url, "utf8");
  } catch {
    return undefined;
  }
}

const vendored = readText("../../../docs/design/API.md")!;
const shared = readText("../../../../shared/design/API.md");
const api = shared ?? vendored;

const camel = (s: string) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

/** Rows of the per-namespace table: [namespace cell, items cell]. */
function namespaceRows(text: string): [string, string][] {
  const section = text.slice(
    text.indexOf("## Per backend namespace"),
    text.indexOf("## Scoped override"),
  );
  return section
    .split("\n")
    .filter((l) => l.startsWith("| `"))
    .map((l) => {
      const cells = l.split("|").map((c) => c.trim());
      return [cells[1], cells[2]];
    });
}

// Tokens that name a member of the previous object rather than of the namespace.
const NESTED: Record<string, string> = {
  size: "cufftPlanCache.size",
  maxSize: "cufftPlanCache.maxSize",
  clear: "cufftPlanCache.clear",
};

function resolve(root: unknown, path: string): { found: boolean; value: unknown } {
  let cur = root;
  for (const part of path.split(".")) {
    if (cur === undefined || cur === null || !(part in Object(cur)))
      return { found: false, value: undefined };
    cur = (cur as Record<string, unknown>)[part];
  }
  return { found: true, value: cur };
}

describe("the API we owe", () => {
  it("the repo's copy of API.md matches shared/design/API.md", () => {
    if (shared !== undefined) expect(vendored).toBe(shared);
    expect(vendored).toContain("## Per backend namespace");
  });

  const rows = namespaceRows(api);
  it("lists every namespace of the table", () => {
    expect(rows.length).toBeGreaterThanOrEqual(14);
  });

  for (const [nsCell, items] of rows) {
    const namespaces = [...nsCell.matchAll(/`([^`]+)`/g)].map((m) => camel(m[1]));
    it(`backends.${namespaces.join(", ")}: every name exists with its default`, () => {
      const ns = namespaces[0];
      const base = (
        ns.includes(".") ? resolve(backends, ns).value : backends.namespace(ns)
      ) as NamespaceBase;
      expect(typeof base).toBe("object"); // a namespace, or nn.attention
      const checked: string[] = [];
      for (const m of items.matchAll(/`([^`]+)`(?:\s*\((true|false|\d+|'[^']*')[;)\s])?/g)) {
        let token = m[1].trim();
        if (/^['"]/.test(token) || /^[A-Z0-9_]+$/.test(token)) {
          // A quoted value, or an environment variable / constant: constants must exist, env must be wired.
          if (/^TORCH_/.test(token)) {
            const wired = core
              .allFlagKeys()
              .some((k) => envNames(flagSpec(k) as core.FlagSpec).includes(token));
            expect(wired, `environment ${token} initialises a flag`).toBe(true);
          } else if (/^VERBOSE_/.test(token)) {
            expect(typeof Reflect.get(base, token), `${ns}.${token}`).toBe("number");
          }
          continue;
        }
        token = token.replace(/\(.*$/s, "");
        token = NESTED[token] ?? token;
        // "`quantized.engine`" inside a row shared by two namespaces names its own namespace.
        let root: unknown = base;
        const head = token.split(".")[0];
        if (namespaces.includes(head) && head !== ns) {
          root = backends.namespace(head);
          token = token.slice(head.length + 1);
        } else if (head === ns && token.includes(".")) token = token.slice(head.length + 1);
        token = camel(token);
        const { found, value } = resolve(root, token);
        expect(found, `backends.${ns}.${token} exists`).toBe(true);
        const dflt = m[2];
        if (dflt !== undefined) {
          const want =
            dflt === "true"
              ? true
              : dflt === "false"
                ? false
                : /^\d+$/.test(dflt)
                  ? Number(dflt)
                  : dflt.slice(1, -1);
          const got =
            typeof value === "function" && !/^[A-Z]/.test(token)
              ? (value as () => unknown)()
              : value;
          // "(true when available)": the default holds where the plugin is registered (as in torch).
          const rest = items.slice((m.index ?? 0) + m[0].length);
          const expected = /^\s*when available/.test(rest) ? want && base.isAvailable() : want;
          expect(got, `default of backends.${ns}.${token}`).toBe(expected);
        }
        checked.push(token);
      }
      expect(checked.length).toBeGreaterThan(0);
    });
  }

  it("the global switches exist (camelCase of torch's names)", () => {
    const section = api.slice(
      api.indexOf("## Global switches"),
      api.indexOf("## Per backend namespace"),
    );
    const names = [...section.matchAll(/`(?:torch\.)?([a-z_]+)\(/g)].map((m) => camel(m[1]));
    expect(names).toContain("useDeterministicAlgorithms");
    for (const n of [...names, "getFloat32MatmulPrecision"])
      expect(typeof Reflect.get(core, n), n).toBe("function");
  });

  it("scoped overrides and the dispatcher surface exist", () => {
    expect(typeof backends.cudnn.flags).toBe("function");
    expect(typeof backends.withFlags).toBe("function");
    expect(typeof core.explain).toBe("function");
    expect(typeof backends.has).toBe("function");
    expect(() => Reflect.get(backends, "mtia")).toThrow(/known namespaces/);
  });
});
