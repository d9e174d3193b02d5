/**
 * A library that does not load is reported in the same words on Node (koffi), Bun and Deno:
 * `PATH: the OS loader's message`. Each FFI used to wrap dlerror() its own way (koffi:
 * "Failed to load shared library: ...", without the path; bun:ffi: 'Failed to open library
 * "x": /cwd/x: ...', a bare name shown under the working directory; Deno: "Could not open
 * library: Could not open library: ..."), so status().detail differed by runtime.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineLibrary, openLibrary } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { loaderError } from "../src/runtime/ffi/load-error.ts";

const g = globalThis as { process?: { platform?: string }; Deno?: { build: { os: string } } };
const onLinux = (g.Deno?.build.os ?? g.process?.platform) === "linux";
const DECL = defineLibrary({ strlen: { args: ["buffer"], returns: "usize" } });

/** openLibrary's reason for one candidate, searched nowhere else. */
async function reasonFor(candidate: string): Promise<string> {
  const r = await openLibrary({ name: "hunt4", candidates: [candidate] }, DECL, {
    searchPaths: [],
  });
  expect(r.ok).toBe(false);
  return r.ok ? "" : r.reason;
}

describe("loader errors read the same on every runtime", () => {
  it("each runtime's wrapping of dlerror() becomes PATH: message", () => {
    const junk = "/tmp/x/libjunk.so";
    const said = `${junk}: invalid ELF header`;
    for (const raw of [
      "Failed to load shared library: invalid ELF header", // koffi
      `Failed to open library "${junk}": ${said}`, // bun:ffi
      `Could not open library: Could not open library: ${said}`, // Deno
      said,
    ])
      expect(loaderError(junk, raw)).toBe(said);
    // A bare name that bun:ffi looked for under the working directory first.
    const bare = "libnope.so.9";
    const missing = "cannot open shared object file: No such file or directory";
    expect(loaderError(bare, `Failed to open library "${bare}": /work/${bare}: ${missing}`)).toBe(
      `${bare}: ${missing}`,
    );
    // Text of another shape keeps every word, behind the path.
    expect(loaderError("x.dll", "The specified module could not be found.")).toBe(
      "x.dll: The specified module could not be found.",
    );
  });

  it.skipIf(!onLinux)("a file that is not a library, and a name found nowhere", async () => {
    const dir = mkdtempSync(join(tmpdir(), "backplane-hunt4-"));
    try {
      const junk = join(dir, "libjunk.so");
      writeFileSync(
        junk,
        new Uint8Array(4096).map((_, i) => (i * 131 + 7) & 255),
      );
      expect(await reasonFor(junk)).toBe(
        `${junk} not found (tried: ${junk}); loader error: ${junk}: invalid ELF header`,
      );
      const bare = "libbackplane-hunt4-absent.so.3";
      expect(await reasonFor(bare)).toBe(
        `${bare} not found (tried: ${bare}); loader error: ${bare}: cannot open shared object file: No such file or directory`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
