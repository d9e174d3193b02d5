/**
 * Writes @backplane/core's three entries, src/index.ts (users), src/backend.ts (the backend
 * contract) and src/cpu.ts (the CPU toolkit), from the modules that hold their API,
 * src/api.ts, src/author-api.ts and src/cpu-api.ts. Each
 * entry re-exports every name of its module through the process's one core
 * (src/one-core.ts): the first copy of the core to load shares its API, a later copy of a
 * compatible version hands out that one, so both copies' users and backends meet in one
 * registry, one set of flags and one Tensor class.
 *
 *   npx tsx scripts/core-entries.ts           write the entries
 *   npx tsx scripts/core-entries.ts --check   exit 1 when they are not what this writes
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const src = join(import.meta.dirname, "..", "packages", "core", "src");

interface Entry {
  file: string;
  module: string;
  /** Which of the shared APIs it hands out. */
  part: "user" | "author" | "cpu";
  doc: string;
}

/** The entries, in oneCore()'s argument order (each imports all three shared APIs). */
const ENTRIES: Entry[] = [
  {
    file: "index.ts",
    module: "api.ts",
    part: "user",
    doc: `@backplane/core, the user entry: tensors, ops, the \`backends\` object with its flags and
 * scopes, the global switches, explain() and record(), and the typed errors (src/api.ts).
 * No runtime dependencies. Backend authors import \`@backplane/core/backend\` as well.`,
  },
  {
    file: "backend.ts",
    module: "author-api.ts",
    part: "author",
    doc: `@backplane/core/backend, the contract between the core and a backend: registration,
 * op handles and params, flags and namespaces, the device and memory contracts
 * (src/author-api.ts). docs/writing-a-backend.md walks through it.`,
  },
  {
    file: "cpu.ts",
    module: "cpu-api.ts",
    part: "cpu",
    doc: `@backplane/core/cpu, the CPU toolkit: the CPU device's WASM memory and modules,
 * parallel-for, scratch buffers, the SIMD check, FFI, host-side kernel helpers
 * (src/cpu-api.ts).`,
  },
];

function typeParams(decl: ts.Declaration | undefined): string {
  const params = decl && (decl as ts.ClassDeclaration).typeParameters;
  return params?.length ? `<${params.map((p) => p.name.text).join(", ")}>` : "";
}

function generate(program: ts.Program, entry: Entry): string {
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(join(src, entry.module));
  if (!file) throw new Error(`${entry.module} not found`);
  const moduleSymbol = checker.getSymbolAtLocation(file);
  if (!moduleSymbol) throw new Error(`${entry.module} is not a module`);
  const lines: string[] = [];
  for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
    const name = symbol.getName();
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const typeOnly = symbol.declarations?.some(
      (d) => ts.isExportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly),
    );
    if (typeOnly || !(target.flags & ts.SymbolFlags.Value)) continue; // `export type *` below
    lines.push(`export const ${name}: typeof api.${name} = shared.${name};`);
    // A class (or a value with a type of the same name) is a type too.
    if (
      target.flags &
      (ts.SymbolFlags.Class | ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)
    ) {
      const tp = typeParams(target.declarations?.[0]);
      lines.push(`export type ${name}${tp} = api.${name}${tp};`);
    }
  }
  lines.sort();
  const imports = ENTRIES.map(
    (p) => `import * as ${p.part === entry.part ? "api" : `${p.part}Api`} from "./${p.module}";`,
  ).join("\n");
  const args = ENTRIES.map((p) => (p.part === entry.part ? "api" : `${p.part}Api`)).join(", ");
  return `// Written by scripts/core-entries.ts from src/${entry.module}: edit that file, then run the script.
/**
 * ${entry.doc}
 *
 * One core per process: src/one-core.ts hands out the API of the first copy of the core
 * that loaded (this one, or a compatible copy elsewhere in node_modules), or throws a
 * CoreConflictError naming both copies.
 */
${imports}
import { oneCore } from "./one-core.ts";

const shared: typeof api = oneCore(${args}).${entry.part};

export type * from "./${entry.module}";
${lines.join("\n")}
`;
}

/** The text as the repository's formatter (biome) writes it. */
function formatted(text: string, path: string): string {
  const biome = join(import.meta.dirname, "..", "node_modules", ".bin", "biome");
  const r = spawnSync(biome, ["format", `--stdin-file-path=${path}`], {
    input: text,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`biome format failed: ${r.stderr}`);
  return r.stdout;
}

const program = ts.createProgram(
  ENTRIES.map((e) => join(src, e.module)),
  {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    skipLibCheck: true,
  },
);
const check = process.argv.includes("--check");
let stale = false;
for (const entry of ENTRIES) {
  const path = join(src, entry.file);
  const text = formatted(generate(program, entry), path);
  let current = "";
  try {
    current = readFileSync(path, "utf8");
  } catch {
    // not written yet
  }
  if (current === text) continue;
  if (check) {
    console.error(`packages/core/src/${entry.file} is stale: npx tsx scripts/core-entries.ts`);
    stale = true;
  } else writeFileSync(path, text);
}
process.exit(stale ? 1 : 0);
