#!/usr/bin/env node
// Checks every publishable workspace package as npm would ship it: publint (package.json
// fields, files, exports) and arethetypeswrong with the ESM-only profile (types resolve
// for every entry under node16 ESM and bundlers). Needs the packages built. Exit 1 on
// any problem.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { workspaces } from "./workspaces.mjs";

const repo = join(new URL(".", import.meta.url).pathname, "..");
const bin = (name) => join(repo, "node_modules", ".bin", name);
let failed = 0;
for (const w of workspaces().filter((x) => !x.private)) {
  const cwd = join(repo, w.dir);
  for (const [tool, args] of [
    ["publint", ["--strict"]],
    ["attw", ["--pack", ".", "--profile", "esm-only"]],
  ]) {
    const r = spawnSync(bin(tool), args, { cwd, encoding: "utf8" });
    const ok = r.status === 0;
    console.log(`${ok ? "ok  " : "FAIL"} ${tool} ${w.name}`);
    if (!ok) {
      failed++;
      console.log(r.stdout, r.stderr);
    }
  }
}
process.exit(failed ? 1 : 0);
