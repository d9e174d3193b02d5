/**
 * The doctor report (as PyTorch's collect_env): runtime and versions, every backend
 * namespace with built / available / the reason / capability / flag values, then one
 * run of each op on the kernel the dispatcher picks, with its time and its error
 * against the float64 reference, and the quantized ops on the kernels the dispatcher picks
 * (under backends.quantized.engine) against PyTorch's integers (the testkit's cases).
 */
import { backends, cpuCapabilityInfo, type DType, runtime, version } from "@backplane/core";
import type { BackendLoad } from "./load-backends.ts";

type Testkit = typeof import("@backplane/testkit");

/**
 * The testkit, an optional peer: the op and quantized checks run its cases. Without it
 * the report keeps its namespaces and says how to add the checks.
 */
async function loadTestkit(): Promise<Testkit | string> {
  const spec = "@backplane/testkit"; // a variable: bundlers leave the optional peer alone
  try {
    return (await import(/* @vite-ignore */ spec)) as Testkit;
  } catch (e) {
    return `the op checks need @backplane/testkit (npm i @backplane/testkit): ${(e as Error).message.split("\n")[0]}`;
  }
}

/** One op run on the dispatcher's kernel against the float64 reference (the testkit's CaseResult). */
export interface OpCheck {
  op: string;
  kernel: string;
  backend?: string;
  case: string;
  status: string;
  error?: number;
  message?: string;
  ms?: number;
}

export interface NamespaceReport {
  name: string;
  built: boolean;
  available: boolean;
  reason?: string;
  backend?: string;
  version?: string;
  capability?: unknown;
  flags: Record<string, unknown>;
}

/** One quantized op over PyTorch's cases: the kernels that ran, and how many matched. */
export interface QuantizedOpReport {
  op: string;
  kernels: string[];
  passed: number;
  total: number;
  failures: string[];
}

export interface DoctorReport {
  backplane: string;
  runtime: ReturnType<typeof runtime>;
  cpu: ReturnType<typeof cpuCapabilityInfo>;
  packages: BackendLoad[];
  namespaces: NamespaceReport[];
  ops: OpCheck[];
  quantized: { engine: string; torch: string; ops: QuantizedOpReport[] };
  /** Why the op and quantized checks did not run (the testkit is not installed). */
  checksSkipped?: string;
}

/** PyTorch's quantized cases on the dispatcher's kernels, one line per op. */
function quantizedReport(kit: Testkit): DoctorReport["quantized"] {
  const report = kit.runQuantizedConformance();
  const ops = new Map<string, QuantizedOpReport>();
  for (const r of report.results) {
    const o = ops.get(r.what) ?? { op: r.what, kernels: [], passed: 0, total: 0, failures: [] };
    if (r.kernel && !o.kernels.includes(r.kernel)) o.kernels.push(r.kernel);
    o.total++;
    if (r.status === "pass") o.passed++;
    else o.failures.push(`${r.case}: ${r.message ?? r.status}`);
    ops.set(r.what, o);
  }
  return { engine: backends.quantized.engine, torch: report.torch, ops: [...ops.values()] };
}

export async function collectReport(
  loads: BackendLoad[],
  opts: { dtype?: DType; ops?: string[] } = {},
): Promise<DoctorReport> {
  const namespaces = backends.names().map((name): NamespaceReport => {
    const ns = backends.namespace(name);
    const s = ns.status();
    let capability: unknown;
    try {
      capability = ns.capability();
    } catch (e) {
      capability = `capability() threw: ${(e as Error).message}`;
    }
    return {
      name,
      built: s.built,
      available: s.available,
      reason: s.reason,
      backend: s.backend,
      version: s.version,
      capability: name === "cpu" ? backends.cpu.getCpuCapability() : capability,
      flags: ns.values(),
    };
  });
  const base = {
    backplane: version,
    runtime: runtime(),
    cpu: cpuCapabilityInfo(),
    packages: loads,
    namespaces,
  };
  const kit = await loadTestkit();
  if (typeof kit === "string")
    return {
      ...base,
      ops: [],
      quantized: { engine: backends.quantized.engine, torch: "-", ops: [] },
      checksSkipped: kit,
    };
  const ops: OpCheck[] = [];
  for (const op of opts.ops ?? Object.keys(kit.CASES)) {
    const c = kit.sampleCase(op);
    if (c) ops.push(await kit.runCase(op, c, opts.dtype ?? "float32"));
  }
  return { ...base, ops, quantized: quantizedReport(kit) };
}

const flagText = (flags: Record<string, unknown>, prefix = ""): string[] =>
  Object.entries(flags).flatMap(([k, v]) =>
    v !== null && typeof v === "object"
      ? flagText(v as Record<string, unknown>, `${prefix}${k}.`)
      : [`${prefix}${k}=${String(v)}`],
  );

export function formatReport(r: DoctorReport): string {
  const rt = r.runtime;
  const lines: string[] = [];
  lines.push(`Backplane ${r.backplane}`);
  lines.push(
    `Runtime:     ${rt.name} ${rt.version} (${rt.platform}/${rt.arch}, ${rt.hardwareConcurrency} cores)`,
  );
  lines.push(
    `WASM:        simd=${rt.wasmSimd} threads=${rt.wasmThreads} crossOriginIsolated=${rt.crossOriginIsolated}`,
  );
  lines.push(
    `CPU:         ${r.cpu.capability}${r.cpu.features.length ? "" : " (features unknown)"}`,
  );
  lines.push("");
  lines.push("Backend packages:");
  for (const p of r.packages)
    lines.push(`  ${p.packageName.padEnd(30)} ${p.loaded ? "loaded" : p.reason}`);
  lines.push("");
  lines.push("Namespaces:");
  for (const n of r.namespaces) {
    const state = n.available ? "available" : n.built ? "built, not available" : "not built";
    lines.push(
      `  ${n.name.padEnd(11)} ${state}${n.backend ? ` [${n.backend}${n.version ? ` ${n.version}` : ""}]` : ""}`,
    );
    if (n.reason) lines.push(`  ${"".padEnd(11)} reason: ${n.reason}`);
    if (n.capability !== undefined)
      lines.push(
        `  ${"".padEnd(11)} capability: ${typeof n.capability === "string" ? n.capability : JSON.stringify(n.capability)}`,
      );
    const f = flagText(n.flags);
    if (f.length) lines.push(`  ${"".padEnd(11)} flags: ${f.join(" ")}`);
  }
  lines.push("");
  if (r.checksSkipped) {
    lines.push(`Ops: not checked: ${r.checksSkipped}`);
    return lines.join("\n");
  }
  lines.push("Ops (one run each, float32, against the float64 reference):");
  lines.push(
    `  ${"op".padEnd(26)} ${"kernel".padEnd(34)} ${"case".padEnd(30)} ${"ms".padStart(8)}  ${"rel. error".padStart(10)}  result`,
  );
  for (const o of r.ops) {
    const kernel = `${o.kernel}${o.backend ? ` (${o.backend})` : ""}`;
    const err = o.error === undefined ? "-" : o.error.toExponential(2);
    const ms = o.ms === undefined ? "-" : o.ms.toFixed(3);
    lines.push(
      `  ${o.op.padEnd(26)} ${kernel.padEnd(34)} ${o.case.slice(0, 30).padEnd(30)} ${ms.padStart(8)}  ${err.padStart(10)}  ${o.status}${o.message ? `: ${o.message}` : ""}`,
    );
  }
  const q = r.quantized;
  lines.push("");
  lines.push(
    `Quantized (engine ${q.engine}; the dispatcher's kernels against PyTorch ${q.torch}'s integers):`,
  );
  for (const o of q.ops) {
    const kernels = o.kernels.length ? o.kernels.join(", ") : "(the core)";
    lines.push(
      `  ${o.op.padEnd(10)} ${kernels.padEnd(50)} ${`${o.passed} of ${o.total} cases`.padStart(15)}  ${o.passed === o.total ? "pass" : "fail"}`,
    );
    for (const f of o.failures) lines.push(`  ${"".padEnd(10)} ${f}`);
  }
  const failed = r.ops.filter((o) => o.status === "fail").length;
  const qFailed = q.ops.reduce((n, o) => n + o.total - o.passed, 0);
  const qTotal = q.ops.reduce((n, o) => n + o.total, 0);
  lines.push("");
  lines.push(
    failed === 0
      ? `All ${r.ops.length} ops ran and matched the reference.`
      : `${failed} of ${r.ops.length} ops failed.`,
  );
  lines.push(
    qFailed === 0
      ? `All ${qTotal} quantized cases matched PyTorch.`
      : `${qFailed} of ${qTotal} quantized cases failed.`,
  );
  return lines.join("\n");
}

/** Whether anything in the report failed (the info command's exit code). */
export function reportFailed(r: DoctorReport): boolean {
  return r.ops.some((o) => o.status === "fail") || r.quantized.ops.some((o) => o.passed < o.total);
}
