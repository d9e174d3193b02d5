#!/usr/bin/env node
// Runs `bun test` once per package (every one, or those named as arguments). bun test
// loads every file it is given into one process, so a backend imported by one package's
// tests would otherwise be registered while another package's tests run (vitest keeps
// files apart; deno runs them all in one process, which the suite allows for).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

// Every package with tests, or the package directories named on the command line.
const named = process.argv.slice(2);
const dirs =
  named.length > 0
    ? named
    : ["packages", "apps"].flatMap((root) =>
        existsSync(root)
          ? readdirSync(root)
              .map((d) => join(root, d))
              .filter((d) => existsSync(join(d, "test")))
          : [],
      );
const failed = [];
for (const dir of dirs) {
  if (dir.startsWith("apps/")) continue; // browser tests run under vitest with Chromium
  console.log(`\n== bun test ${dir}`);
  const r = spawnSync(
    process.execPath,
    ["scripts/runtime.mjs", "bun", "test", "--timeout", "120000", dir],
    { stdio: "inherit" },
  );
  if (r.status !== 0) failed.push(dir);
}
if (failed.length) {
  console.error(`\nbun test failed in: ${failed.join(", ")}`);
  process.exit(1);
}
console.log(`\nbun test passed in ${dirs.filter((d) => !d.startsWith("apps/")).length} packages`);
