/**
 * report.md from check.json, torch.json and webgpu.json in --out: conformance, the device
 * checks, and every timing beside PyTorch's with the ratio (PyTorch's time over ours: above 1
 * is faster than PyTorch). Runs anywhere the files are.
 *
 *   deno run -A --no-check --config deno.json scripts/gpu-check/report.ts --out DIR
 */
import { args, readJson } from "./io.ts";
import type { TimingRow } from "./timings.ts";

const fs = await import("node:fs");
const { out } = args();
const load = <T>(name: string): T | undefined => {
  try {
    return readJson<T>(`${out}/${name}`);
  } catch {
    return undefined;
  }
};

interface Conf {
  backend: string;
  kernel: string;
  precision: string;
  summary?: string;
  error?: string;
  results?: {
    op: string;
    kernel: string;
    dtype: string;
    case: string;
    status: string;
    error?: number;
    tolerance?: number;
    message?: string;
  }[];
}
interface Check {
  cuda?: {
    status?: { available?: boolean; reason?: string };
    diagnostics?: {
      devices?: { name: string; major: number; minor: number }[];
      driverVersion?: number;
    };
  };
  cudnn?: { status?: { version?: string } };
  steps: {
    conformance?: { seconds: number; runs: Conf[] };
    checks?: { name: string; ok: boolean; detail: string }[];
    timings?: TimingRow[];
  };
}
interface TorchRow {
  suite: string;
  case: string;
  impl: string;
  ms?: number;
  tflops?: number;
  error?: string;
}
// check.json, or the check-*.json of a split run: their steps merged.
let check: Check | undefined;
for (const f of [
  "check.json",
  ...fs.readdirSync(out).filter((n: string) => /^check-.+\.json$/.test(n)),
]) {
  const c = load<Check>(f);
  if (c) check = { ...check, ...c, steps: { ...check?.steps, ...c.steps } };
}
const torch = load<{ info: Record<string, unknown>; rows: TorchRow[] }>("torch.json");
const webgpu = load<
  Record<string, unknown> & { timings?: TorchRow[]; conformance?: { summary: string } }
>("webgpu.json");

const lines: string[] = [];
const say = (s = "") => lines.push(s);
const fmt = (ms?: number) =>
  ms === undefined ? "-" : ms < 0.1 ? `${(ms * 1000).toFixed(1)} us` : `${ms.toFixed(3)} ms`;
const tf = (x?: number) => (x === undefined ? "-" : x.toFixed(1));

say("# GPU check");
say();
const dev = check?.cuda?.diagnostics?.devices?.[0];
say(
  `- device: ${dev ? `${dev.name} (sm_${dev.major}${dev.minor})` : `none (${check?.cuda?.status?.reason ?? "check.json missing"})`}`,
);
say(`- torch: ${JSON.stringify(torch?.info ?? "torch.json missing")}`);
say(`- cuDNN (ours): ${check?.cudnn?.status?.version ?? "-"}`);
say();

const conf = check?.steps.conformance;
if (conf) {
  say(`## Conformance (${conf.seconds.toFixed(0)} s)`);
  say();
  for (const r of conf.runs) {
    say(
      `- ${r.backend}/${r.kernel} (float32 matmul precision ${r.precision}): ${r.summary?.split("\n")[0]?.replace(`${r.backend}: `, "") ?? r.error}`,
    );
    for (const f of (r.results ?? []).filter((x) => x.status === "fail").slice(0, 40))
      say(
        `  - FAIL ${f.op} [${f.kernel}, ${f.dtype}] ${f.case}: ${f.message ?? `${f.error?.toExponential(2)} > ${f.tolerance?.toExponential(1)}`}`,
      );
  }
  say();
  say("| kernel | dtype | cases passed | refused | worst rel. error | tolerance |");
  say("| --- | --- | --- | --- | --- | --- |");
  const groups = new Map<string, { pass: number; refused: number; worst: number; tol?: number }>();
  for (const r of conf.runs.flatMap((x) => x.results ?? [])) {
    if (r.kernel === undefined || r.dtype === "-") continue;
    // Bad-input cases run through dispatch (kernel "-"): their own row.
    const k = `${r.kernel === "-" ? "(dispatch: bad input)" : r.kernel} | ${r.dtype}`;
    const g = groups.get(k) ?? { pass: 0, refused: 0, worst: 0 };
    if (r.status === "pass") g.pass++;
    if (r.status === "refused") g.refused++;
    if (r.error !== undefined) g.worst = Math.max(g.worst, r.error);
    g.tol = r.tolerance ?? g.tol;
    groups.set(k, g);
  }
  for (const [k, g] of groups)
    say(
      `| ${k} | ${g.pass} | ${g.refused} | ${g.worst.toExponential(1)} | ${g.tol?.toExponential(0) ?? "-"} |`,
    );
  say();
}

if (check?.steps.checks) {
  say("## Device checks");
  say();
  for (const c of check.steps.checks) say(`- ${c.ok ? "ok" : "**FAIL**"} ${c.name}: ${c.detail}`);
  say();
}

const ours = check?.steps.timings ?? [];
const theirs = torch?.rows ?? [];
const peer = (suite: string, name: string, impl: string) =>
  theirs.find((t) => t.suite === suite && t.case === name && (suite !== "sdpa" || t.impl === impl));
const ratio = (a?: number, b?: number) => (a && b ? (b / a).toFixed(2) : "-");

for (const suite of ["overhead", "gemm", "conv2d", "sdpa"]) {
  const rows = ours.filter((r) => r.suite === suite);
  if (rows.length === 0 && !theirs.some((t) => t.suite === suite)) continue;
  say(`## ${suite}`);
  say();
  say("| case | ours | kernel | ours | TFLOP/s | torch | TFLOP/s | torch / ours |");
  say("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const r of rows) {
    const p = peer(suite, r.case, r.impl);
    const mine = r.error ? `error: ${r.error.slice(0, 120)}` : fmt(r.ms);
    const their = p?.error ? `error: ${p.error.slice(0, 80)}` : fmt(p?.ms);
    say(
      `| ${r.case} | ${r.impl} | ${r.kernel ?? "-"} | ${mine} | ${tf(r.tflops)} | ${their} | ${tf(p?.tflops)} | ${ratio(r.ms, p?.ms)} |`,
    );
  }
  for (const t of theirs.filter((x) => x.suite === suite && !rows.some((r) => r.case === x.case)))
    say(
      `| ${t.case} | - | - | - | - | ${t.error ? `error: ${t.error.slice(0, 80)}` : fmt(t.ms)} | ${tf(t.tflops)} | - |`,
    );
  say();
}

if (webgpu) {
  say("## WebGPU");
  say();
  say(`- adapter: ${JSON.stringify(webgpu.adapter ?? webgpu.availability)}`);
  say(`- conformance: ${webgpu.conformance?.summary.split("\n")[0] ?? "-"}`);
  say();
  say("| case | ms | TFLOP/s |");
  say("| --- | --- | --- |");
  for (const r of webgpu.timings ?? [])
    say(`| ${r.suite} ${r.case} | ${r.error ?? fmt(r.ms)} | ${tf(r.tflops)} |`);
  say();
}

fs.writeFileSync(`${out}/report.md`, `${lines.join("\n")}\n`);
console.log(lines.join("\n"));
