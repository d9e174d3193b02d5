#!/usr/bin/env node
// Runs the bun or deno binary that the npm packages `bun` / `deno` install, repairing the
// install first when npm skipped its postinstall (the binary is then a placeholder).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const [tool, ...args] = process.argv.slice(2);
const installers = { bun: "install.js", deno: "install.cjs" };
if (!(tool in installers)) {
  console.error("usage: node scripts/runtime.mjs <bun|deno> [args...]");
  process.exit(2);
}
const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve(`${tool}/package.json`));
const bin = join(process.cwd(), "node_modules", ".bin", tool);

function works() {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  return r.status === 0 && /\d+\.\d+/.test(r.stdout);
}

if (!existsSync(bin) || !works()) {
  console.error(`[runtime] ${tool}'s postinstall did not run; running it now`);
  const r = spawnSync(process.execPath, [join(pkgDir, installers[tool])], {
    cwd: pkgDir,
    stdio: "inherit",
  });
  if (r.status !== 0 || !works()) {
    console.error(`[runtime] could not install the ${tool} binary`);
    process.exit(1);
  }
}
const r = spawnSync(bin, args, { stdio: "inherit" });
// A signal (an abort from glibc's heap checks, a crash) is named, not hidden behind exit 1.
if (r.signal) console.error(`[runtime] ${tool} was ended by ${r.signal}`);
process.exit(r.status ?? 1);
