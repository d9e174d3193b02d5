#!/usr/bin/env node
/**
 * Builds the package's PTX: every kernels/*.cu is compiled by nvcc to PTX for the virtual
 * architecture its first line names (`// backplane: arch=compute_75`), then the PTX is
 * assembled by ptxas for sm_80 and sm_90, so a kernel that does not compile or does not
 * assemble fails the build. Writes ptx/<name>.ptx and ptx/manifest.json (nvcc version, source
 * and PTX hashes, entry points, ptxas register/shared-memory use per target).
 *
 *   node scripts/build-kernels.mjs            rebuild ptx/ in place
 *   node scripts/build-kernels.mjs --check    rebuild into a temp dir, compare with ptx/,
 *                                             exit 1 (listing the differences) when stale
 *   node scripts/build-kernels.mjs --out DIR  write somewhere else
 *
 * nvcc is looked for in $NVCC, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const kernelsDir = join(root, "kernels");
const committed = join(root, "ptx");
const TARGETS = ["sm_80", "sm_90"];
const NVCC_FLAGS = ["-std=c++17", "-O3"];
const devNull = process.platform === "win32" ? "NUL" : "/dev/null";

const args = process.argv.slice(2);
const check = args.includes("--check");
const outArg = args.indexOf("--out");
const outDir = check
  ? mkdtempSync(join(tmpdir(), "backplane-ptx-"))
  : outArg >= 0
    ? args[outArg + 1]
    : committed;

function findTool(name) {
  const exe = process.platform === "win32" ? `${name}.exe` : name;
  const envDirs = [process.env.CUDA_HOME, process.env.CUDA_PATH]
    .filter(Boolean)
    .map((d) => join(d, "bin"));
  const candidates = [
    name === "nvcc" ? process.env.NVCC : undefined,
    ...envDirs.map((d) => join(d, exe)),
    join("/usr/local/cuda/bin", exe),
  ].filter(Boolean);
  for (const c of candidates) if (existsSync(c)) return c;
  try {
    execFileSync(exe, ["--version"], { stdio: "ignore" });
    return exe;
  } catch {
    return undefined;
  }
}

const nvcc = findTool("nvcc");
const ptxas = nvcc
  ? join(dirname(nvcc), process.platform === "win32" ? "ptxas.exe" : "ptxas")
  : findTool("ptxas");
if (!nvcc) {
  console.error(
    "build-kernels: nvcc not found (set NVCC or CUDA_HOME); the committed ptx/ is unchanged",
  );
  process.exit(2);
}
const version =
  /release [\d.]+, V([\d.]+)/.exec(execFileSync(nvcc, ["--version"], { encoding: "utf8" }))?.[1] ??
  "unknown";

const sha256 = (data) => createHash("sha256").update(data).digest("hex");
const headers = readdirSync(kernelsDir)
  .filter((f) => f.endsWith(".cuh"))
  .sort();
const headerText = headers.map((h) => readFileSync(join(kernelsDir, h), "utf8")).join("\n");

mkdirSync(outDir, { recursive: true });
const manifest = {
  generatedBy: "scripts/build-kernels.mjs",
  nvcc: version,
  nvccFlags: NVCC_FLAGS,
  assembledFor: TARGETS,
  headers,
  modules: {},
};

// nvcc names anonymous-namespace symbols after the source's absolute path, so the same
// source built in two checkouts gives different PTX. Compile from one fixed directory.
const stage =
  process.platform === "win32"
    ? join(tmpdir(), "backplane-cuda-kernels")
    : "/tmp/backplane-cuda-kernels";
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
for (const f of readdirSync(kernelsDir)) copyFileSync(join(kernelsDir, f), join(stage, f));

let failed = false;
for (const file of readdirSync(kernelsDir)
  .filter((f) => f.endsWith(".cu"))
  .sort()) {
  const name = file.slice(0, -3);
  const source = readFileSync(join(kernelsDir, file), "utf8");
  const arch = /^\/\/ backplane: arch=(compute_\d+)/m.exec(source)?.[1];
  if (!arch) {
    console.error(`build-kernels: ${file} has no "// backplane: arch=compute_NN" line`);
    failed = true;
    continue;
  }
  const ptxPath = join(outDir, `${name}.ptx`);
  process.stderr.write(`  nvcc -ptx -arch=${arch} ${file} ... `);
  try {
    execFileSync(
      nvcc,
      ["-ptx", `-arch=${arch}`, ...NVCC_FLAGS, "-I", stage, "-o", ptxPath, join(stage, file)],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
  } catch (e) {
    process.stderr.write("FAILED\n");
    console.error(String(e.stderr ?? e.message));
    failed = true;
    continue;
  }
  const ptx = readFileSync(ptxPath, "utf8");
  const functions = [...ptx.matchAll(/^\.visible \.entry (\w+)\(/gm)].map((m) => m[1]);
  const ptxasInfo = {};
  for (const target of TARGETS) {
    const r = spawnSync(ptxas, [`-arch=${target}`, "-O3", "-v", ptxPath, "-o", devNull], {
      encoding: "utf8",
    });
    if (r.status !== 0) {
      process.stderr.write(`ptxas ${target} FAILED\n`);
      console.error(r.stderr || r.error?.message);
      failed = true;
      continue;
    }
    // "Compiling entry function 'X' for 'sm_80'" ... "Used N registers" ... "N bytes spill stores"
    const perFunction = {};
    let current;
    for (const line of r.stderr.split("\n")) {
      const fn = /Compiling entry function '(\w+)'/.exec(line);
      if (fn) current = perFunction[fn[1]] = {};
      const regs = /Used (\d+) registers/.exec(line);
      if (regs && current) current.registers = Number(regs[1]);
      const spill = /(\d+) bytes spill stores/.exec(line);
      if (spill && current) current.spillStores = Number(spill[1]);
    }
    ptxasInfo[target] = perFunction;
  }
  process.stderr.write(`ok (${functions.length} kernels; ptxas ${TARGETS.join(", ")} ok)\n`);
  manifest.modules[name] = {
    source: `kernels/${file}`,
    arch,
    sourceSha256: sha256(`${source}\n${headerText}`),
    ptxSha256: sha256(ptx),
    functions,
    ptxas: ptxasInfo,
  };
}

if (failed) {
  console.error("build-kernels: failed");
  process.exit(1);
}
writeFileSync(join(outDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
// Format it the way the repository's formatter does, so a rebuild leaves `biome check` clean.
const biome = join(
  root,
  "..",
  "..",
  "node_modules",
  ".bin",
  process.platform === "win32" ? "biome.cmd" : "biome",
);
if (existsSync(biome)) {
  spawnSync(biome, ["format", "--write", join(outDir, "manifest.json")], { stdio: "ignore" });
}

if (check) {
  const diffs = [];
  const old = existsSync(join(committed, "manifest.json"))
    ? JSON.parse(readFileSync(join(committed, "manifest.json"), "utf8"))
    : { modules: {} };
  for (const name of new Set([...Object.keys(old.modules), ...Object.keys(manifest.modules)])) {
    const a = old.modules[name];
    const b = manifest.modules[name];
    if (!a) diffs.push(`${name}: not in the committed ptx/`);
    else if (!b) diffs.push(`${name}: committed but has no source any more`);
    else {
      const committedPtx = existsSync(join(committed, `${name}.ptx`))
        ? readFileSync(join(committed, `${name}.ptx`), "utf8")
        : "";
      if (committedPtx !== readFileSync(join(outDir, `${name}.ptx`), "utf8"))
        diffs.push(`${name}.ptx differs from what ${a.source} builds to`);
      if (a.sourceSha256 !== b.sourceSha256) diffs.push(`${name}: manifest source hash is stale`);
    }
  }
  if (old.nvcc !== manifest.nvcc)
    diffs.push(`committed PTX was built by nvcc ${old.nvcc}, this is nvcc ${manifest.nvcc}`);
  rmSync(outDir, { recursive: true, force: true });
  if (diffs.length) {
    console.error(
      `build-kernels --check: ptx/ is stale:\n  ${diffs.join("\n  ")}\nrun: npm run build:kernels --workspace @backplane/backend-cuda`,
    );
    process.exit(1);
  }
  console.error("build-kernels --check: ptx/ matches the sources");
} else {
  console.error(
    `build-kernels: wrote ${Object.keys(manifest.modules).length} modules to ${outDir} (nvcc ${version})`,
  );
}
