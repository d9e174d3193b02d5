#!/usr/bin/env node
// The one list of packages: the root package.json's workspaces. Everything that needs the
// list derives it from here: vitest's aliases (imported), and the TypeScript paths and
// Deno import map, which are JSON and so are written by `node scripts/workspaces.mjs
// --write` and checked by `--check` (in npm run lint).
//
// Each package's exports map "./x" to "./dist/<entry>.js"; tests and type checks read
// the source instead, src/<entry>.ts.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const readJson = (p) => JSON.parse(readFileSync(join(repo, p), "utf8"));

/**
 * Every workspace package: { name, dir, private, pkg (its package.json), sourceExports
 * ({ "./x": "./src/x.ts" }), entries ({ specifier: repo-relative source }) }.
 */
export function workspaces() {
  const out = [];
  for (const glob of readJson("package.json").workspaces) {
    const base = glob.replace(/\/\*$/, "");
    for (const d of readdirSync(join(repo, base)).sort()) {
      const dir = `${base}/${d}`;
      if (!existsSync(join(repo, dir, "package.json"))) continue;
      const pkg = readJson(`${dir}/package.json`);
      // "./backend" -> "./src/backend.ts" (package-relative), and as specifiers from the root.
      const sourceExports = {};
      const entries = {};
      for (const [sub, target] of Object.entries(pkg.exports ?? {})) {
        const file = typeof target === "string" ? target : target.default;
        const m = /^\.\/dist\/(.+)\.js$/.exec(file ?? "");
        if (!m) continue;
        sourceExports[sub] = `./src/${m[1]}.ts`;
        entries[sub === "." ? pkg.name : `${pkg.name}/${sub.slice(2)}`] = `${dir}/src/${m[1]}.ts`;
      }
      out.push({ name: pkg.name, dir, private: pkg.private === true, pkg, sourceExports, entries });
    }
  }
  return out;
}

/** specifier -> source file (repo-relative), longest specifier first. */
export function sourceEntries() {
  const all = Object.assign({}, ...workspaces().map((w) => w.entries));
  return Object.fromEntries(Object.entries(all).sort((a, b) => b[0].length - a[0].length));
}

function generated() {
  const entries = sourceEntries();
  const tsconfig = readJson("tsconfig.json");
  tsconfig.compilerOptions.paths = Object.fromEntries(
    Object.entries(entries).map(([k, v]) => [k, [v]]),
  );
  const deno = readJson("deno.json");
  const keep = Object.fromEntries(
    Object.entries(deno.imports).filter(([k]) => !k.startsWith("@backplane/")),
  );
  deno.imports = {
    ...keep,
    ...Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, `./${v}`])),
  };
  const files = { "tsconfig.json": tsconfig, "deno.json": deno };
  // Apps type-check against the sources too (their tsconfig's baseUrl is the repo root).
  for (const w of workspaces().filter((x) => x.dir.startsWith("apps/"))) {
    const file = `${w.dir}/tsconfig.json`;
    if (!existsSync(join(repo, file))) continue;
    const app = readJson(file);
    if (!app.compilerOptions?.paths) continue;
    app.compilerOptions.paths = tsconfig.compilerOptions.paths;
    files[file] = app;
  }
  return files;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const mode = process.argv[2];
  const stale = [];
  for (const [file, json] of Object.entries(generated())) {
    const same = JSON.stringify(readJson(file)) === JSON.stringify(json);
    if (mode === "--write" && !same) {
      writeFileSync(join(repo, file), `${JSON.stringify(json, null, 2)}\n`);
      spawnSync(join(repo, "node_modules", ".bin", "biome"), ["format", "--write", file], {
        cwd: repo,
      });
    } else if (!same) stale.push(file);
  }
  if (mode === "--list") for (const w of workspaces()) console.log(w.name, w.dir);
  if (stale.length) {
    console.error(
      `${stale.join(", ")} out of date with the workspaces: run node scripts/workspaces.mjs --write`,
    );
    process.exit(1);
  }
}
