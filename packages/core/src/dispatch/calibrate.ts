/**
 * CPU kernels ranked by what they measure on this machine, not by what their authors
 * expect: a native BLAS that runs SSE3 kernels on an AVX-512 CPU, or netlib's reference
 * BLAS, must not win over the WASM GEMM because it is native.
 *
 * At ready() (and at backends.cpu.calibrate()), each op with kernels from two or more CPU
 * backends runs a few representative sizes once per backend, in a bounded budget (50 ms),
 * and measured.ts reorders the backends per size class. The figures are cached in the
 * user's cache directory under a fingerprint of everything they depend on (CPU model and
 * features, runtime, thread count, each backend's version and library), so a warm start
 * only reads a file. `cpu.calibrate = false` (BACKPLANE_CALIBRATE=0) turns it off; a
 * user's kernel priority and deterministic mode always use the authors' order.
 */
import { getFlag } from "../flags/state.ts";
import { availabilityOf, bumpGeneration, getBackend } from "../registry/backends.ts";
import { cpuCapabilityInfo } from "../runtime/cpu-capability.ts";
import { runtime } from "../runtime/detect.ts";
import { readCacheFile, userCacheDir, writeCacheFile } from "../runtime/user-cache.ts";
import type { DType } from "../tensor/dtype.ts";
import { empty, type Tensor } from "../tensor/tensor.ts";
import { version as coreVersion } from "../version.ts";
import { getOp, type Kernel, type OpParams } from "./kernels.ts";
import { type KernelFigure, type Measurement, useMeasurements } from "./measured.ts";

/** The most a cold calibration may spend, in milliseconds. */
export const CALIBRATION_BUDGET_MS = 50;
const CACHE_FILE = "calibration-v1.json";
const CACHE_ENTRIES = 16;

interface CalibrationCase {
  op: string;
  case: string;
  dtype: DType;
  /** Input tensors (made when the case runs, freed after). */
  inputs(): Tensor[];
  /** The op's arguments from the inputs. */
  args(inputs: Tensor[]): unknown[];
}

/** Values in [-1, 1) (timing needs no distribution, only no zeros or denormals), made fast. */
function r(shape: number[], dtype: DType, seed: number): Tensor {
  const t = empty(shape, { dtype });
  const data = t.hostData() as Float32Array | Float64Array;
  let x = seed * 2654435761;
  for (let i = 0; i < data.length; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) | 0;
    data[i] = x / 2 ** 31 || 0.5;
  }
  return t;
}

/** Representative sizes: small and mid GEMMs, an attention block, a ResNet-style conv. */
const CASES: readonly CalibrationCase[] = [
  ...([64, 256] as const).map((n) => ({
    op: "matmul",
    case: `${n}x${n}x${n}`,
    dtype: "float32" as DType,
    inputs: () => [r([n, n], "float32", 1), r([n, n], "float32", 2)],
    args: (t: Tensor[]) => [t[0], t[1]],
  })),
  {
    op: "matmul",
    case: "128x128x128",
    dtype: "float64",
    inputs: () => [r([128, 128], "float64", 3), r([128, 128], "float64", 4)],
    args: (t) => [t[0], t[1]],
  },
  {
    op: "scaledDotProductAttention",
    case: "B1 H2 L256 S256 E64",
    dtype: "float32",
    inputs: () => [1, 2, 3].map((s) => r([1, 2, 256, 64], "float32", 10 + s)),
    args: (t) => [t[0], t[1], t[2]],
  },
  {
    op: "conv2d",
    case: "1x32x28x28, 32x3x3 pad 1",
    dtype: "float32",
    inputs: () => [r([1, 32, 28, 28], "float32", 20), r([32, 32, 3, 3], "float32", 21)],
    args: (t) => [t[0], t[1], { padding: 1 }],
  },
];

export interface CalibrationReport {
  /** "measured" now, read from the "cache", or "off" (cpu.calibrate is false). */
  source: "measured" | "cache" | "off";
  /** The key the figures are cached under (a hash of `machine`). */
  fingerprint: string;
  /** What the figures depend on, readable. */
  machine: string;
  /** Milliseconds this call took (measuring, or reading the cache). */
  costMs: number;
  /** Milliseconds the measurement took when it was made. */
  measuredMs: number;
  budgetMs: number;
  measurements: Measurement[];
  /** Cases not measured, and why (one backend only, over budget...). */
  skipped: string[];
  /** The cache file, when there is a file system to keep it in. */
  cacheFile: string | undefined;
}

const now = (): number => (typeof performance !== "undefined" ? performance.now() : Date.now());

function disposeAll(x: unknown): void {
  if (x && typeof (x as Tensor).dispose === "function") (x as Tensor).dispose();
  else if (x && typeof x === "object") for (const v of Object.values(x)) disposeAll(v);
}

/** Kernels of an op calibration may run: CPU, a backend that is available and initialised. */
function runnable(op: string, dtype: DType): Kernel[] {
  return (getOp(op)?.kernels ?? []).filter((k) => {
    if (k.device !== "cpu" || k.backend === "reference" || !k.dtypes.includes(dtype)) return false;
    const b = getBackend(k.backend);
    if (!b || !availabilityOf(b).available) return false;
    return b.initState !== "running" && b.initState !== "failed";
  });
}

/** Per backend, the first kernel (its own order) that accepts the params. */
function firstPerBackend(kernels: Kernel[], params: OpParams): Kernel[] {
  const out = new Map<string, Kernel>();
  for (const k of kernels) {
    if (out.has(k.backend)) continue;
    let ok: true | string = true;
    try {
      ok = k.supports ? k.supports(params as never) : true;
    } catch {
      ok = "threw";
    }
    if (ok === true) out.set(k.backend, k);
  }
  return [...out.values()];
}

function backendsOf(c: CalibrationCase): string[] {
  return [...new Set(runnable(c.op, c.dtype).map((k) => k.backend))];
}

/** Everything the figures depend on, as text (hashed into the cache key). */
function machineText(): string {
  const cpu = cpuCapabilityInfo();
  const rt = runtime();
  const threads = (getFlag("openmp.numThreads") as number) || rt.hardwareConcurrency;
  const names = [...new Set(CASES.flatMap(backendsOf))].sort();
  const backends = names.map((n) => {
    const def = getBackend(n)?.def;
    return `${n}@${def?.version?.() ?? "?"}${stableFacts(def?.capability)}`;
  });
  return [
    `core ${coreVersion}`,
    `${rt.name} ${rt.version} ${rt.platform}-${rt.arch}`,
    `cpu ${cpu.model || "?"} [${cpu.capability}; ${hash(cpu.features.join(" "))}]`,
    `threads ${threads}`,
    ...backends,
  ].join("\n");
}

/**
 * The plain facts of a backend's capability (library, path, ISA...): nested objects are
 * statistics that change as it runs, and the thread count is in the fingerprint already.
 */
function stableFacts(capability: (() => unknown) | undefined): string {
  let cap: unknown;
  try {
    cap = capability?.();
  } catch {
    return " ?";
  }
  if (typeof cap !== "object" || cap === null) return cap === undefined ? "" : ` ${String(cap)}`;
  const facts = Object.entries(cap).filter(
    ([k, v]) => k !== "threads" && (v === null || typeof v !== "object"),
  );
  return facts.map(([k, v]) => ` ${k}=${String(v)}`).join("");
}

/** FNV-1a, 32 bits, as hex: a short key for a long text. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

/** Times one kernel: a warm-up run, then the best of up to three within `untilMs`. */
function timeKernel(k: Kernel, params: OpParams, untilMs: number): number {
  disposeAll(k.run(params));
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const t0 = now();
    disposeAll(k.run(params));
    best = Math.min(best, now() - t0);
    if (now() > untilMs) break;
  }
  return best;
}

function measureCase(c: CalibrationCase, deadline: number, skipped: string[]): Measurement | null {
  const op = getOp(c.op);
  if (!op?.work) return null;
  const inputs = c.inputs();
  try {
    const params = op.prepare(...c.args(inputs));
    const ks = firstPerBackend(runnable(c.op, c.dtype), params);
    if (ks.length < 2) return null; // nothing to rank
    const figures: KernelFigure[] = [];
    for (const k of ks) {
      if (now() > deadline) {
        skipped.push(`${c.op} ${c.case} ${c.dtype}: over the ${CALIBRATION_BUDGET_MS} ms budget`);
        return null;
      }
      try {
        figures.push({ kernel: k.name, backend: k.backend, ms: timeKernel(k, params, deadline) });
      } catch (e) {
        skipped.push(`${c.op} ${c.case}: ${k.name} threw ${(e as Error).message}`);
      }
    }
    return {
      op: c.op,
      case: c.case,
      dtype: c.dtype,
      deviceType: "cpu",
      work: op.work(params),
      figures,
    };
  } finally {
    for (const t of inputs) t.dispose();
  }
}

function measureAll(machine: string, key: string, t0: number): CalibrationReport {
  const skipped: string[] = [];
  const measurements: Measurement[] = [];
  const deadline = t0 + CALIBRATION_BUDGET_MS;
  for (const c of CASES) {
    if (backendsOf(c).length < 2) continue;
    const m = measureCase(c, deadline, skipped);
    if (m) measurements.push(m);
  }
  const ms = now() - t0;
  return {
    source: "measured",
    fingerprint: key,
    machine,
    costMs: ms,
    measuredMs: ms,
    budgetMs: CALIBRATION_BUDGET_MS,
    measurements,
    skipped,
    cacheFile: undefined,
  };
}

interface CacheEntry {
  machine: string;
  measuredMs: number;
  at: string;
  measurements: Measurement[];
  skipped: string[];
}
type CacheFile = { entries: Record<string, CacheEntry> };

function readCache(): CacheFile {
  const f = readCacheFile(CACHE_FILE) as CacheFile | undefined;
  return f && typeof f.entries === "object" && f.entries !== null ? f : { entries: {} };
}

function saveToCache(rep: CalibrationReport): string | undefined {
  const file = readCache();
  file.entries[rep.fingerprint] = {
    machine: rep.machine,
    measuredMs: rep.measuredMs,
    at: new Date().toISOString(),
    measurements: rep.measurements,
    skipped: rep.skipped,
  };
  // Keep the newest entries only.
  const keys = Object.keys(file.entries).sort((a, b) =>
    file.entries[b].at.localeCompare(file.entries[a].at),
  );
  for (const k of keys.slice(CACHE_ENTRIES)) delete file.entries[k];
  const dir = userCacheDir();
  return writeCacheFile(CACHE_FILE, file) && dir ? `${dir}/${CACHE_FILE}` : undefined;
}

let report: CalibrationReport | undefined;

function install(rep: CalibrationReport): CalibrationReport {
  report = rep;
  useMeasurements(rep.source === "off" ? [] : rep.measurements);
  bumpGeneration(); // dispatcher entries are rebuilt with the new order
  return rep;
}

/**
 * Measures anew (ignoring the cache), installs the order and writes the cache:
 * `backends.cpu.calibrate()`. Call it after `await backends.ready()`.
 */
export function calibrate(): CalibrationReport {
  const t0 = now();
  const machine = machineText();
  const rep = measureAll(machine, hash(machine), t0);
  rep.cacheFile = saveToCache(rep);
  return install(rep);
}

/** What ready() calls: the cached figures for this machine, or a measurement when none. */
export function ensureCalibrated(): CalibrationReport {
  const t0 = now();
  const machine = machineText();
  const key = hash(machine);
  if (getFlag("cpu.calibrate") !== true) {
    if (report?.source !== "off")
      install({
        source: "off",
        fingerprint: key,
        machine,
        costMs: 0,
        measuredMs: 0,
        budgetMs: CALIBRATION_BUDGET_MS,
        measurements: [],
        skipped: ["cpu.calibrate is false"],
        cacheFile: undefined,
      });
    return report as CalibrationReport;
  }
  if (report && report.source !== "off" && report.fingerprint === key) return report;
  const hit = readCache().entries[key];
  if (hit?.machine === machine && Array.isArray(hit.measurements)) {
    const dir = userCacheDir();
    return install({
      source: "cache",
      fingerprint: key,
      machine,
      costMs: now() - t0,
      measuredMs: hit.measuredMs,
      budgetMs: CALIBRATION_BUDGET_MS,
      measurements: hit.measurements,
      skipped: hit.skipped ?? [],
      cacheFile: dir ? `${dir}/${CACHE_FILE}` : undefined,
    });
  }
  const rep = measureAll(machine, key, t0);
  rep.cacheFile = saveToCache(rep);
  return install(rep);
}

/** Drops the figures in use (tests: the next ensureCalibrated() starts as a new process). */
export function forgetCalibration(): void {
  report = undefined;
  useMeasurements([]);
  bumpGeneration();
}

/** The figures in use (undefined before the first ready()). */
export function calibration(): CalibrationReport | undefined {
  return report;
}
