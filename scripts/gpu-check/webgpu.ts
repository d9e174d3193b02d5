/**
 * backend-webgpu on whatever adapter the runtime finds (on the GPU machine: Deno's wgpu on
 * NVIDIA's Vulkan driver): the adapter, the testkit's conformance of every webgpu kernel, and
 * GEMM / SDPA timings (batches of back-to-back calls closed by the queue's
 * onSubmittedWorkDone, the median batch). Writes webgpu.json into --out.
 *
 *   deno run -A --no-check --config deno.json scripts/gpu-check/webgpu.ts [--out DIR] [--quick]
 */

import {
  WEBGPU_BACKEND,
  webgpuAvailability,
  webgpuCapability,
  webgpuDevice,
} from "@backplane/backend-webgpu";
import {
  type DType,
  matmul,
  randn,
  ready,
  scaledDotProductAttention,
  type Tensor,
} from "@backplane/core";
import { runConformance } from "@backplane/testkit";
import { args, cases, exitWith, writeJson } from "./io.ts";

// The package's own conformance tolerances (test/conformance.test.ts).
const TOLERANCES = { float32: 2e-5, float16: 4e-3 };

const { out, quick: quickArg } = args();
const availability = await webgpuAvailability();
const report: Record<string, unknown> = { started: new Date().toISOString(), availability };
if (!availability.available) {
  console.log(`webgpu: not available: ${availability.reason}`);
  writeJson(out, "webgpu.json", report);
  exitWith(0);
}
await ready(WEBGPU_BACKEND);
const cap = webgpuCapability()!;
report.adapter = cap.adapter;
report.features = cap.features;
console.log(`webgpu: ${JSON.stringify(cap.adapter)} (${cap.source})`);
const quick = quickArg;

const t0 = performance.now();
const conf = await runConformance(WEBGPU_BACKEND, { tolerances: TOLERANCES });
console.log(`conformance ${conf} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
report.conformance = { summary: String(conf), failed: conf.failed, passed: conf.passed };
writeJson(out, "webgpu.json", report);

const device = webgpuDevice()!;
async function timeCalls(fn: () => Tensor): Promise<number> {
  const { batchMs, batches, maxCalls } = cases().timing;
  fn().dispose();
  await device.queue.onSubmittedWorkDone();
  let t = performance.now();
  fn().dispose();
  await device.queue.onSubmittedWorkDone();
  const calls = Math.max(1, Math.min(maxCalls, Math.ceil(batchMs / (performance.now() - t))));
  const perCall: number[] = [];
  for (let b = 0; b < (quick ? 2 : batches); b++) {
    t = performance.now();
    for (let i = 0; i < calls; i++) fn().dispose();
    await device.queue.onSubmittedWorkDone();
    perCall.push((performance.now() - t) / calls);
  }
  return perCall.sort((x, y) => x - y)[perCall.length >> 1]!;
}

const rows: { suite: string; case: string; ms?: number; tflops?: number; error?: string }[] = [];
async function row(suite: string, name: string, flop: number, fn: () => Tensor) {
  try {
    const ms = await timeCalls(fn);
    rows.push({ suite, case: name, ms, tflops: flop / (ms * 1e9) });
  } catch (e) {
    rows.push({ suite, case: name, error: (e as Error).message.split("\n")[0] });
  }
  report.timings = rows;
  writeJson(out, "webgpu.json", report);
  const r = rows.at(-1)!;
  console.log(
    `${suite.padEnd(6)} ${name.padEnd(36)} ${r.error ? `ERROR ${r.error}` : `${r.ms!.toFixed(3).padStart(9)} ms ${r.tflops!.toFixed(2).padStart(7)} TFLOP/s`}`,
  );
}

// A software adapter (llvmpipe, SwiftShader) times small sizes only, to exercise the script.
const dtypes: DType[] = cap.features.shaderF16 ? ["float32", "float16"] : ["float32"];
const software = cap.adapter.isFallbackAdapter === true;
const n = software ? 256 : quick ? 1024 : cases().gemm.n;
for (const dtype of dtypes) {
  const [a, b] = [1, 2].map((s) => randn([n, n], { seed: s, dtype }).to("webgpu"));
  await row("gemm", `${n} ${dtype}`, 2 * n ** 3, () => matmul(a!, b!));
  a!.dispose();
  b!.dispose();
}
const { batch, heads } = software ? { batch: 1, heads: 2 } : cases().sdpa;
for (const dtype of dtypes) {
  for (const seq of software ? [256] : quick ? [1024] : [1024, 2048, 4096]) {
    for (const causal of [false, true]) {
      const [q, k, v] = [1, 2, 3].map((s) =>
        randn([batch, heads, seq, 64], { seed: s, dtype }).to("webgpu"),
      );
      const flop = (4 * batch * heads * seq * seq * 64) / (causal ? 2 : 1);
      await row(
        "sdpa",
        `B${batch} H${heads} N${seq} d64 ${dtype}${causal ? " causal" : ""}`,
        flop,
        () => scaledDotProductAttention(q!, k!, v!, { isCausal: causal }),
      );
      for (const t of [q, k, v]) t!.dispose();
    }
  }
}
report.timings = rows;
writeJson(out, "webgpu.json", report);
exitWith(conf.failed.length > 0 ? 1 : 0);
