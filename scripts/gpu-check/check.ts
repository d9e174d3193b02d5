/**
 * The GPU check (Deno, Bun or Node): backend-cuda and backend-cudnn on a real device.
 *   1. status and diagnostics of both backends;
 *   2. the testkit's conformance of every cuda and cudnn kernel (float64 reference,
 *      NaN-poisoned outputs, odd shapes, views);
 *   3. device checks: copies, the caching allocator, cuFFT's plan cache, cuDNN's flags on real
 *      engines, explain() with real refusals;
 *   4. timings of the cases timings.ts lists, the same cases torch-peers.py times.
 * Writes check.json into --out (default artifacts/gpu-check) and prints a summary. Where CUDA
 * is not available it says why, still runs what needs no device, and exits 0.
 *
 *   deno run -A --no-check --config deno.json scripts/gpu-check/check.ts [--out DIR] [--only conformance,checks,timings] [--quick]
 */
import { CUDA_BACKEND, cudaApi } from "@backplane/backend-cuda";
import { CUDNN_BACKEND, cudnnApi } from "@backplane/backend-cudnn";
import { backends, getFlag, ready, setFlag } from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { runConformance } from "@backplane/testkit";
import { deviceChecks } from "./device-checks.ts";
import { args, type CheckReport, exitWith, writeJson } from "./io.ts";
import { runTimings } from "./timings.ts";

const { out, only, quick, recording } = args();
// One file per selection, so a run split in two (conformance, then the rest) keeps both.
const file = only.size === 3 ? "check.json" : `check-${[...only].join("-")}.json`;
const report: CheckReport = { started: new Date().toISOString(), steps: {} };
const cuda = backends.cuda.status();
report.cuda = { status: cuda };
console.log(`cuda: ${cuda.available ? "available" : `not available: ${cuda.reason}`}`);
if (!cuda.available && !recording) {
  report.cuda.ptx = cudaApi.diagnostics().ptx;
  console.log(
    "No CUDA device: conformance, device checks and timings need one; nothing else to run.",
  );
  console.log(
    "(--recording runs the checks and timings over backend-cuda's RecordingLayer: the script's own code, no numerics.)",
  );
  writeJson(out, file, report);
  exitWith(0);
}
if (!cuda.available) {
  // The script's dry run: a fake sm_90 device whose calls are recorded and compute nothing.
  const { installLayer, RecordingLayer } = await import(
    "../../packages/backend-cuda/src/internals.ts"
  );
  const fake = {
    name: "RecordingLayer sm_90 (computes nothing)",
    major: 9,
    minor: 0,
    totalMemory: 80 * 2 ** 30,
    sharedMemoryPerBlockOptin: 227 * 1024,
  };
  installLayer(new RecordingLayer({ devices: [fake] }));
  only.delete("conformance");
  console.log(
    "RECORDING LAYER: calls are recorded and nothing computes; every figure below is meaningless.",
  );
}

await ready(CUDA_BACKEND, CUDNN_BACKEND);
report.cuda.diagnostics = cudaApi.diagnostics();
report.cudnn = { status: backends.cudnn.status(), diagnostics: cudnnApi.diagnostics() };
const dev = cudaApi.getDeviceProperties(0);
console.log(`device: ${dev.name} (sm_${dev.major}${dev.minor}), cuda ${backends.cuda.version()}`);
console.log(`cudnn: ${JSON.stringify(report.cudnn.status)}`);
let failures = 0;

// TF32 rounds each input to 10 mantissa bits (unit roundoff 2^-11): the tf32 kernels are
// judged at 5e-3 of the largest magnitude, the rest at the testkit's defaults.
const TF32_TOLERANCE = { float32: 5e-3 };

if (only.has("conformance")) {
  const t0 = performance.now();
  const summaries = [];
  for (const backend of [CUDA_BACKEND, CUDNN_BACKEND]) {
    const names = [...new Set((getBackend(backend)?.def.kernels ?? []).map((k) => k.name))];
    const tf32 = names.filter((n) => n.includes("tf32"));
    const runs = [
      { kernels: names.filter((n) => !tf32.includes(n)), precision: "highest" },
      { kernels: tf32, precision: "high", tolerances: TF32_TOLERANCE },
    ];
    for (const r of runs) {
      const prev = getFlag("core.float32MatmulPrecision");
      setFlag("core.float32MatmulPrecision", r.precision);
      // One kernel at a time, named before it runs: a native crash leaves its name in the log.
      for (const kernel of r.kernels) {
        console.log(`conformance ${backend}/${kernel} ...`);
        try {
          const rep = await runConformance(backend, {
            kernels: [kernel],
            tolerances: r.tolerances,
          });
          failures += rep.failed.length;
          console.log(`  ${rep}`.replace(`${backend}:`, `${kernel}:`));
          summaries.push({
            backend,
            kernel,
            precision: r.precision,
            summary: String(rep),
            results: rep.results,
          });
        } catch (e) {
          failures++;
          console.log(`  threw: ${(e as Error).stack}`);
          summaries.push({
            backend,
            kernel,
            precision: r.precision,
            error: String((e as Error).stack),
          });
        }
        report.steps.conformance = { seconds: (performance.now() - t0) / 1000, runs: summaries };
        writeJson(out, file, report);
      }
      setFlag("core.float32MatmulPrecision", prev);
    }
  }
  report.steps.conformance = { seconds: (performance.now() - t0) / 1000, runs: summaries };
  writeJson(out, file, report);
}

if (only.has("checks")) {
  const checks = await deviceChecks();
  failures += checks.filter((c) => !c.ok).length;
  for (const c of checks) console.log(`${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`);
  report.steps.checks = checks;
  writeJson(out, file, report);
}

if (only.has("timings")) {
  report.steps.timings = await runTimings({
    quick,
    log: (l) => console.log(l),
    progress: (rows) => {
      report.steps.timings = rows;
      writeJson(out, file, report);
    },
  });
  writeJson(out, file, report);
}

const stats = cudaApi.memoryStats();
report.allocator = stats;
report.cudnnPlans = cudnnApi.plans().length;
writeJson(out, file, report);
console.log(`check: ${failures} failure(s); results in ${out}/${file}`);
// Over the recording layer nothing computes: numerical checks fail by construction.
exitWith(failures > 0 && !recording ? 1 : 0);
