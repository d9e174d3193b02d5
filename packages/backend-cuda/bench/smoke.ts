/**
 * CUDA smoke run: conformance of every "cuda" kernel against the float64 reference, then GEMM
 * and SDPA timings, printed as a table. Where CUDA is not available it prints why and exits 0.
 *
 *   npx tsx packages/backend-cuda/bench/smoke.ts            (Node, through koffi)
 *   ./node_modules/.bin/bun packages/backend-cuda/bench/smoke.ts
 *   ./node_modules/.bin/deno run -A --config deno.json packages/backend-cuda/bench/smoke.ts
 *   add --quick for smaller problems, --no-bench for conformance only
 */

import { CUDA_BACKEND, cudaApi } from "@backplane/backend-cuda";
import {
  backends,
  type DType,
  matmul,
  nn,
  randn,
  ready,
  SDPBackend,
  scaledDotProductAttention,
  setFloat32MatmulPrecision,
  type Tensor,
} from "@backplane/core";
import { host } from "@backplane/core/cpu";
import { runConformance } from "@backplane/testkit";

const args: string[] = host.Deno?.args ?? process.argv.slice(2);
const quick = args.includes("--quick");
const noBench = args.includes("--no-bench");

function exit(code: number): never {
  const d = host.Deno;
  if (d) d.exit(code);
  process.exit(code);
}

const status = backends.cuda.status();
if (!status.available) {
  console.log(`CUDA is not available: ${status.reason}`);
  console.log(
    `(backends.cuda: built=${status.built}; nothing was run. On a machine with an NVIDIA GPU and driver this runs conformance, GEMM and SDPA.)`,
  );
  exit(0);
}

await ready(CUDA_BACKEND);
const devices = Array.from({ length: cudaApi.deviceCount() }, (_, i) =>
  cudaApi.getDeviceProperties(i),
);
console.log(
  `CUDA ${backends.cuda.version()} — ${devices.map((d) => `cuda:${d.index} ${d.name} (sm_${d.major}${d.minor})`).join(", ")}`,
);
console.log(`libraries: ${JSON.stringify(backends.cuda.capability())}`);

// 1. Conformance: every cuda kernel on seeded random cases, judged against the reference.
const t0 = performance.now();
const report = await runConformance(CUDA_BACKEND);
const byStatus = (s: string) => report.results.filter((r) => r.status === s).length;
console.log(
  `\nconformance: ${report.passed} passed, ${report.failed.length} failed, ${byStatus("refused")} refused, ${byStatus("skipped")} skipped (${((performance.now() - t0) / 1000).toFixed(1)} s)`,
);
if (report.failed.length > 0) console.log(report.toString());

if (noBench) exit(report.failed.length > 0 ? 1 : 0);

// 2. Timings: median of runs, each synchronised.
interface Row {
  case: string;
  impl: string;
  ms: number;
  tflops: number;
}
const rows: Row[] = [];

async function time(fn: () => Tensor, runs: number): Promise<number> {
  for (let i = 0; i < 3; i++) fn().dispose();
  await cudaApi.synchronize();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const out = fn();
    await cudaApi.synchronize();
    samples.push(performance.now() - start);
    out.dispose();
  }
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1]!;
}

const sizes = quick ? [512, 1024] : [1024, 2048, 4096];
for (const n of sizes) {
  for (const [dtype, label, precision] of [
    ["float32", "fp32", "highest"],
    ["float32", "tf32", "high"],
    ["float16", "fp16", "highest"],
    ["bfloat16", "bf16", "highest"],
  ] as const) {
    const a = randn([n, n], { seed: 1, dtype: dtype as DType }).to("cuda");
    const b = randn([n, n], { seed: 2, dtype: dtype as DType }).to("cuda");
    setFloat32MatmulPrecision(precision);
    for (const lib of ["cublas", "cublaslt"] as const) {
      backends.cuda.preferredBlasLibrary(lib);
      try {
        const ms = await time(() => matmul(a, b), quick ? 5 : 15);
        rows.push({
          case: `gemm ${n}^3 ${label}`,
          impl: lib,
          ms,
          tflops: (2 * n ** 3) / (ms * 1e9),
        });
      } catch (e) {
        rows.push({
          case: `gemm ${n}^3 ${label}`,
          impl: `${lib}: ${(e as Error).message}`,
          ms: Number.NaN,
          tflops: Number.NaN,
        });
      }
    }
    setFloat32MatmulPrecision("highest");
    backends.cuda.preferredBlasLibrary("cublas");
    a.dispose();
    b.dispose();
  }
}

const L = quick ? 512 : 2048;
for (const dtype of ["float16", "bfloat16", "float32"] as const) {
  const shape = [4, 16, L, 64];
  const [q, k, v] = [1, 2, 3].map((s) => randn(shape, { seed: s, dtype }).to("cuda"));
  const flops = 4 * 4 * 16 * L * L * 64;
  for (const family of [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
  ]) {
    for (const causal of [false, true]) {
      const name = `sdpa [4,16,${L},64] ${dtype}${causal ? " causal" : ""}`;
      try {
        const ms = await nn.attention.withSdpaKernel([family], () =>
          time(() => scaledDotProductAttention(q!, k!, v!, { isCausal: causal }), quick ? 5 : 10),
        );
        rows.push({ case: name, impl: family, ms, tflops: flops / (causal ? 2 : 1) / (ms * 1e9) });
      } catch (e) {
        rows.push({
          case: name,
          impl: `${family}: ${(e as Error).message.split("\n")[0]}`,
          ms: Number.NaN,
          tflops: Number.NaN,
        });
      }
    }
  }
  for (const t of [q, k, v]) t!.dispose();
}

console.log(
  `\n${"case".padEnd(34)} ${"impl".padEnd(22)} ${"ms".padStart(10)} ${"TFLOP/s".padStart(9)}`,
);
for (const r of rows) {
  console.log(
    `${r.case.padEnd(34)} ${r.impl.slice(0, 60).padEnd(22)} ${Number.isNaN(r.ms) ? "-".padStart(10) : r.ms.toFixed(3).padStart(10)} ${Number.isNaN(r.tflops) ? "-".padStart(9) : r.tflops.toFixed(2).padStart(9)}`,
  );
}
const stats = cudaApi.memoryStats();
console.log(
  `\nallocator: peak allocated ${(stats.allocatedBytes.peak / 2 ** 20).toFixed(1)} MiB, reserved ${(stats.reservedBytes.current / 2 ** 20).toFixed(1)} MiB, cache hits ${stats.cacheHits}, retries ${stats.numAllocRetries}`,
);
exit(report.failed.length > 0 ? 1 : 0);
