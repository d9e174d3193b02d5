#!/usr/bin/env node
// Runs each `*.alone.test.ts` file on its own under Bun and under Deno, with
// BACKPLANE_FILE_ALONE=1. Such a file changes the process before the core loads (the
// plain-memory tests hide SharedArrayBuffer, so the CPU memory is a plain one, as in a page
// that is not cross-origin isolated); bun test and deno test load a package's files into one
// process, where those files skip. vitest keeps files apart and runs them with the rest.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

const files = readdirSync("packages")
  .map((d) => join("packages", d, "test"))
  .filter((d) => existsSync(d))
  .flatMap((d) =>
    readdirSync(d)
      .filter((f) => f.endsWith(".alone.test.ts"))
      .map((f) => join(d, f)),
  );
const runners = {
  bun: (f) => ["bun", "test", "--timeout", "120000", f],
  deno: (f) => ["deno", "test", "-A", "--no-check", "--config", "deno.json", f],
};
const failed = [];
for (const [name, args] of Object.entries(runners))
  for (const file of files) {
    console.log(`\n== ${name} test ${file} (alone)`);
    const r = spawnSync(process.execPath, ["scripts/runtime.mjs", ...args(file)], {
      stdio: "inherit",
      env: { ...process.env, BACKPLANE_FILE_ALONE: "1" },
    });
    if (r.status !== 0) failed.push(`${name} ${file}`);
  }
if (failed.length) {
  console.error(`\nfailed alone: ${failed.join(", ")}`);
  process.exit(1);
}
console.log(`\n${files.length} files passed alone on Bun and Deno`);
