#!/usr/bin/env node
// Lints the AssemblyScript sources (packages/*/assembly) with the repo's Biome rules.
// Biome parses TypeScript, which has no decorators on functions; AssemblyScript's
// `@inline` (and friends) are turned into same-length comments in a temporary copy, so
// line and column numbers in the report are the original file's. Type errors are the
// AssemblyScript compiler's job (npm run build:wasm, in CI).
import { spawnSync } from "node:child_process";
import {
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = mkdtempSync(join(tmpdir(), "lint-assembly-"));
const files = (dir) =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
  });
try {
  const sources = readdirSync(join(repo, "packages"))
    .map((d) => join(repo, "packages", d, "assembly"))
    .filter((d) => {
      try {
        return statSync(d).isDirectory();
      } catch {
        return false;
      }
    })
    .flatMap(files);
  for (const src of sources) {
    const out = join(tmp, relative(repo, src));
    cpSync(src, out);
    // "@inline" -> "/*inl*/": a comment of the same length, so columns stay put.
    const text = readFileSync(out, "utf8").replace(
      /@([a-z]{4,})\b/g,
      (_, name) => `/*${name.slice(0, name.length - 3)}*/`,
    );
    writeFileSync(out, text);
  }
  // The repo's rules, minus those AssemblyScript means differently: == compares values
  // (=== is identity, the same for numbers), x != x is the NaN test, top-level functions
  // and consts may be used before their declaration, and f64 literals carry every digit
  // of a polynomial's coefficients on purpose (and memory.data tables take literals, not
  // Math.SQRT1_2).
  const config = JSON.parse(readFileSync(join(repo, "biome.json"), "utf8"));
  config.files.includes = config.files.includes.filter((p) => p !== "!**/assembly");
  config.linter.rules.suspicious = {
    ...config.linter.rules.suspicious,
    noDoubleEquals: "off",
    noSelfCompare: "off",
    noTsIgnore: "off",
    noApproximativeNumericConstant: "off",
  };
  config.linter.rules.correctness = {
    noInvalidUseBeforeDeclaration: "off",
    noPrecisionLoss: "off",
  };
  writeFileSync(join(tmp, "biome.json"), JSON.stringify(config));
  const biome = join(repo, "node_modules", ".bin", "biome");
  const r = spawnSync(biome, ["lint", "--vcs-enabled=false", "--max-diagnostics=1000", "."], {
    cwd: tmp,
    encoding: "utf8",
  });
  process.stdout.write(r.stdout.replaceAll(tmp, repo));
  process.stderr.write(r.stderr.replaceAll(tmp, repo));
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
