#!/usr/bin/env node
// Builds every AssemblyScript module in assembly/ twice into wasm/: <name>.wasm (shared
// memory, threads) and <name>.nothreads.wasm (plain memory). The .wasm files are committed
// and shipped, so users need no toolchain; CI rebuilds them and checks they are current.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const asc = join(root, "..", "..", "node_modules", ".bin", "asc");
// Module name -> --memoryBase (its static-data slice, WASM_STATIC_SLICES in @backplane/core).
const MODULES = { gemm: 4096, kernels: 12288, attention: 28672 };

for (const [name, base] of Object.entries(MODULES)) {
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
      String(base),
      "--enable",
      "simd",
      ...(threads ? ["--sharedMemory", "--enable", "threads"] : []),
    ];
    const r = spawnSync(asc, args, { cwd: root, stdio: "inherit" });
    if (r.status !== 0) {
      console.error(`build-wasm: ${out} failed`);
      process.exit(r.status ?? 1);
    }
    console.log(`build-wasm: ${out}`);
  }
}
