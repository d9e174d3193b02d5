#!/usr/bin/env node
// The one WASM build: run from a backend package (npm run build:wasm), it reads that
// package's wasm.config.json and builds each AssemblyScript module in assembly/ twice
// into wasm/: <name>.wasm (shared memory, threads) and <name>.nothreads.wasm (plain
// memory). The .wasm files are committed and shipped, so users need no toolchain; CI
// rebuilds them and checks they are current.
//
// wasm.config.json: { "modules": { "<name>": { "memoryBase": <bytes>, "relaxed": true } } }.
// "relaxed" adds <name>.relaxed.wasm and <name>.relaxed.nothreads.wasm, built with relaxed
// SIMD (ASC_FEATURE_RELAXED_SIMD is true in them: f32x4.relaxed_madd), which the core's
// loader picks where the runtime validates relaxed SIMD. memoryBase
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

const builds = (relaxed) =>
  [true, false].flatMap((threads) => [
    { threads, relaxed: false },
    ...(relaxed ? [{ threads, relaxed: true }] : []),
  ]);

for (const [name, { memoryBase, relaxed: hasRelaxed }] of Object.entries(config.modules)) {
  for (const { threads, relaxed } of builds(hasRelaxed)) {
    const out = `wasm/${name}${relaxed ? ".relaxed" : ""}${threads ? "" : ".nothreads"}.wasm`;
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
      ...(relaxed ? ["--enable", "relaxed-simd"] : []),
    ];
    const r = spawnSync(asc, args, { cwd: pkg, stdio: "inherit" });
    if (r.status !== 0) {
      console.error(`build-wasm: ${out} failed`);
      process.exit(r.status ?? 1);
    }
    console.log(`build-wasm: ${out}`);
  }
}
