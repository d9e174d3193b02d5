#!/usr/bin/env node
// Runs every ```ts block of the READMEs (root, packages and apps) and of docs/*.md on Node
// (through tsx), Bun and Deno, so the examples stay true. A block preceded by an
// HTML comment `<!-- example: not run (why) -->` is skipped, with the reason printed.
// Exit 1 when a block fails on a runtime.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { workspaces } from "./workspaces.mjs";

const repo = join(new URL(".", import.meta.url).pathname, "..");
const docs = [
  "README.md",
  ...workspaces().map((w) => `${w.dir}/README.md`),
  ...readdirSync(join(repo, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
].filter((f) => existsSync(join(repo, f)));
const out = join(repo, ".examples");
rmSync(out, { recursive: true, force: true });
mkdirSync(out);

const blocks = [];
for (const doc of docs) {
  const text = readFileSync(join(repo, doc), "utf8");
  for (const m of text.matchAll(/(<!--\s*example:\s*not run[^>]*-->\s*\n)?```ts\n([\s\S]*?)```/g)) {
    const line = text.slice(0, m.index).split("\n").length;
    const name = `${doc.replace(/[/.]/g, "_")}_L${line}`;
    if (m[1]) {
      console.log(`skip ${doc}:${line} ${m[1].trim()}`);
      continue;
    }
    const file = join(out, `${name}.ts`);
    writeFileSync(file, `${m[2]}\nexport {};\n`);
    blocks.push({ doc, line, file });
  }
}

const bin = (tool) => join(repo, "node_modules", ".bin", tool);
const runtimes = [
  ["node", bin("tsx"), (f) => [f]],
  ["bun", bin("bun"), (f) => [f]],
  ["deno", bin("deno"), (f) => ["run", "-A", "--config", join(repo, "deno.json"), f]],
];
let failed = 0;
for (const b of blocks) {
  for (const [name, cmd, args] of runtimes) {
    const r = spawnSync(cmd, args(b.file), { cwd: repo, encoding: "utf8", timeout: 120_000 });
    const ok = r.status === 0;
    if (!ok) failed++;
    console.log(`${ok ? "ok  " : "FAIL"} ${name} ${b.doc}:${b.line}`);
    if (!ok) console.log(`${r.stdout}\n${r.stderr}`.trim().split("\n").slice(-15).join("\n"));
  }
}
rmSync(out, { recursive: true, force: true });
console.log(`${blocks.length} examples, ${failed} failures (${relative(repo, out)} cleaned up)`);
process.exit(failed ? 1 : 0);
