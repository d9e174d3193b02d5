/**
 * The helper's C code under the memory checkers: test/native/helper_check.c calls every
 * entry point of the C ABI with good and bad arguments, built with the CPU stand-in and
 * run twice: compiled with AddressSanitizer and UBSan, and plain under Valgrind. An
 * overrun, a use after free, a leak of a freed buffer's memory or an integer overflow in
 * an argument check fails here. Skipped with one line where the tools are missing;
 * .ci/run installs them and sets BACKPLANE_EXPECT_SANITIZERS=1, so there it fails instead.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readEnv } from "@backplane/core/cpu";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script, untyped
import { STANDIN_SOURCES } from "../scripts/build-helper.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const EXPECT_TOOLS = readEnv("BACKPLANE_EXPECT_SANITIZERS") === "1";
const sources = [
  join(root, "test", "native", "helper_check.c"),
  ...(STANDIN_SOURCES as string[]).map((f) => join(root, "native", f)),
];
const dir = mkdtempSync(join(tmpdir(), "backplane-mps-sanitize-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function compile(out: string, flags: string[]): { ok: true } | { ok: false; why: string } {
  const r = spawnSync(
    "cc",
    [
      "-std=c11",
      "-g",
      "-O1",
      "-Wall",
      "-Wextra",
      "-Werror",
      ...flags,
      "-I",
      join(root, "native"),
      "-o",
      out,
      ...sources,
      "-lm",
      "-lpthread",
    ],
    { encoding: "utf8" },
  );
  if (r.error) return { ok: false, why: `no C compiler (cc): ${r.error.message}` };
  return r.status === 0 ? { ok: true } : { ok: false, why: `cc failed:\n${r.stderr}` };
}

const has = (cmd: string) => spawnSync(cmd, ["--version"], { stdio: "ignore" }).status === 0;
const asanBinary = join(dir, "helper_check_asan");
const asan = has("cc")
  ? compile(asanBinary, [
      "-fsanitize=address,undefined",
      "-fno-sanitize-recover=all",
      "-fno-omit-frame-pointer",
    ])
  : { ok: false as const, why: "no C compiler (cc)" };
const valgrind = has("valgrind");
const missing = [
  ...(asan.ok ? [] : [`AddressSanitizer build: ${asan.why.split("\n")[0]}`]),
  ...(valgrind ? [] : ["valgrind is not installed"]),
];
if (missing.length > 0) {
  if (EXPECT_TOOLS) throw new Error(`BACKPLANE_EXPECT_SANITIZERS=1 but ${missing.join("; ")}`);
  console.log(
    `[backend-mps] C helper memory checks skipped in part: ${missing.join("; ")} (apt-get install gcc valgrind)`,
  );
}

// The checkers bring their own allocator: none preloaded from outside (CI runs the suite
// under glibc's checking allocator, which AddressSanitizer refuses to start beside). Set
// empty rather than left out: Deno's spawn adds the parent's environment to the one given.
const cleanEnv = { ...process.env, LD_PRELOAD: "", GLIBC_TUNABLES: "" };

describe("the helper's C ABI under the memory checkers", () => {
  (asan.ok ? it : it.skip)(
    "every entry point, good and bad arguments, under ASan and UBSan",
    () => {
      const r = spawnSync(asanBinary, [], {
        encoding: "utf8",
        // Leaks count too; UBSan stops at the first report.
        env: {
          ...cleanEnv,
          ASAN_OPTIONS: "detect_leaks=1:abort_on_error=0",
          UBSAN_OPTIONS: "halt_on_error=1:print_stacktrace=1",
        },
      });
      expect(`${r.stdout}${r.stderr}`).toContain("every check held");
      expect(r.status).toBe(0);
    },
  );

  (valgrind ? it : it.skip)("the same under Valgrind (no sanitizer in the build)", () => {
    const plain = join(dir, "helper_check");
    const built = compile(plain, []);
    if (!built.ok) throw new Error(built.why);
    const r = spawnSync(
      "valgrind",
      ["--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite", "-q", plain],
      { encoding: "utf8", env: cleanEnv },
    );
    expect(`${r.stdout}${r.stderr}`).toContain("every check held");
    expect(r.stderr).not.toMatch(/==\d+== (Invalid|Conditional|Mismatched|.*definitely lost)/);
    expect(r.status).toBe(0);
  });
});
