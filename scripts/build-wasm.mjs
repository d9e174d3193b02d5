#!/usr/bin/env node
// The one WASM build: run from a backend package (npm run build:wasm), it reads that
// package's wasm.config.json and builds each AssemblyScript module in assembly/ twice
// into wasm/: <name>.wasm (shared memory, threads) and <name>.nothreads.wasm (plain
// memory). The .wasm files are committed and shipped, so users need no toolchain; CI
// rebuilds them and checks they are current.
//
// wasm.config.json: { "modules": { "<name>": { "memoryBase": <bytes> } } }. memoryBase
// places the module's static data in the CPU memory's static region (below the heap,
// 64 KiB); the core's loader claims that range when the module loads and refuses a module
// whose data overlaps another's, so a third-party backend picks any free range.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = process.cwd();
const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const asc = join(repo, "node_modules", ".bin", "asc");
const config = JSON.parse(readFileSync(join(pkg, "wasm.config.json"), "utf8"));

for (const [name, { memoryBase }] of Object.entries(config.modules)) {
  for (const threads of [true, false]) {
    const out = `wasm/${name}${threads ? "" : ".nothreads"}.wasm`;
    const args = [
      `assembly/${name}.ts`,
      "-o",
      out,
      "-O3",
      "--runtime",
      "stub",
      "--noAssert",
      "--importMemory",
      "--initialMemory",
      "1",
      "--maximumMemory",
      "65536",
      "--memoryBase",
      String(memoryBase),
      "--enable",
      "simd",
      ...(threads ? ["--sharedMemory", "--enable", "threads"] : []),
    ];
    const r = spawnSync(asc, args, { cwd: pkg, stdio: "inherit" });
    if (r.status !== 0) {
      console.error(`build-wasm: ${out} failed`);
      process.exit(r.status ?? 1);
    }
    console.log(`build-wasm: ${out}`);
  }
}
