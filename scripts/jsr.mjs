#!/usr/bin/env node
// jsr.json for every publishable package, derived from its package.json (name, version,
// license, and each export "./dist/x.js" as "./src/x.ts": JSR publishes the TypeScript).
// --write writes them, --check fails when one is stale (in npm run lint), --dry-run runs
// `deno publish --dry-run` in each package (in .ci/run).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { workspaces } from "./workspaces.mjs";

const repo = join(new URL(".", import.meta.url).pathname, "..");
const mode = process.argv[2] ?? "--check";

function jsrOf(w) {
  const extra = (w.pkg.files ?? []).filter((f) => !["dist", "README.md", "LICENSE"].includes(f));
  return {
    name: w.name,
    version: w.pkg.version,
    license: w.pkg.license,
    exports: w.sourceExports,
    publish: {
      include: [
        "src/**/*.ts",
        "README.md",
        "LICENSE",
        ...extra.map((f) => (/\.[a-z]+$/.test(f) ? f : `${f}/**`)),
      ],
    },
  };
}

let bad = 0;
for (const w of workspaces().filter((x) => !x.private)) {
  const file = join(repo, w.dir, "jsr.json");
  const want = `${JSON.stringify(jsrOf(w), null, 2)}\n`;
  if (mode === "--write") {
    writeFileSync(file, want);
    spawnSync(join(repo, "node_modules", ".bin", "biome"), ["format", "--write", file], {
      cwd: repo,
    });
  } else if (mode === "--check") {
    if (
      !existsSync(file) ||
      JSON.stringify(JSON.parse(readFileSync(file, "utf8"))) !== JSON.stringify(JSON.parse(want))
    ) {
      console.error(`${w.dir}/jsr.json is stale: run node scripts/jsr.mjs --write`);
      bad++;
    }
  } else if (mode === "--dry-run") {
    const deno = join(repo, "node_modules", ".bin", "deno");
    const r = spawnSync(deno, ["publish", "--dry-run", "--allow-dirty", "--quiet"], {
      cwd: join(repo, w.dir),
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
    });
    const problems = /Found (\d+) problems?/.exec(r.stderr)?.[1];
    console.log(
      `${r.status === 0 ? "ok  " : "FAIL"} deno publish --dry-run ${w.name}${problems ? ` (${problems} problems)` : ""}`,
    );
    if (r.status !== 0) {
      bad++;
      if (process.argv.includes("--verbose")) console.log(r.stderr);
    }
  }
}
process.exit(bad ? 1 : 0);
