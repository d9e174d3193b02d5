/**
 * CPU kernels ranked by what they measure on this machine, not by what their authors
 * expect: a native BLAS that runs SSE3 kernels on an AVX-512 CPU, or netlib's reference
 * BLAS, must not win over the WASM GEMM because it is native.
 *
 * At ready() (and at backends.cpu.calibrate()), each op with kernels from two or more CPU
 * backends (matmul, SDPA; conv2d is ranked per shape, ranker.ts) runs a few
 * representative sizes once per backend, in a bounded budget (50 ms),
 * and the ranker (policy sizeClass) reorders the backends by them. The figures are cached in the
 * user's cache directory under a fingerprint of everything they depend on (CPU model and
 * features, runtime, thread count, each backend's version and library), so a warm start
 * only reads a file. The flag cpu.calibrate false turns it off (`backends.cpu.flags({
 * calibrate: false })`, withFlags, or BACKPLANE_CALIBRATE=0: backends.cpu.calibrate is the
 * function that runs a calibration, not the flag); a
 * user's kernel priority and deterministic mode always use the authors' order.
 */
import { getFlag } from "../flags/state.ts";
import { availabilityOf, bumpGeneration, getBackend } from "../registry/backends.ts";
import { getOp, type Kernel } from "../registry/kernels.ts";
import { cpuCapabilityInfo } from "../runtime/cpu-capability.ts";
import { runtime } from "../runtime/detect.ts";
import { readCacheFile, userCacheDir, writeCacheFile } from "../runtime/user-cache.ts";
import { type DType, isDType } from "../tensor/dtype.ts";
import { empty, type Tensor } from "../tensor/tensor.ts";
import { warnOnce } from "../util/log.ts";
import { version as coreVersion } from "../version.ts";
import { requestedThreads } from "../wasm/parallel.ts";
import {
  type KernelFigure,
  MARGIN,
  type Measurement,
  measurementsInUse,
  mergeBest,
  useMeasurements,
} from "./measured.ts";
import { firstPerBackend, now, timeInterleaved } from "./timing.ts";

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
  /** Measured only warm (confirmWarm), not in a start's budget. */
  warmOnly?: boolean;
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

function gemmCase(n: number, dtype: DType, seed: number): CalibrationCase {
  return {
    op: "matmul",
    case: `${n}x${n}x${n}`,
    dtype,
    inputs: () => [r([n, n], dtype, seed), r([n, n], dtype, seed + 1)],
    args: (t) => [t[0], t[1]],
  };
}

/**
 * Representative sizes, most telling first (the budget may stop the list). conv2d is
 * ranked per shape at its first call instead (ranker.ts).
 */
const CASES: readonly CalibrationCase[] = [
  gemmCase(256, "float32", 1),
  {
    op: "scaledDotProductAttention",
    case: "B1 H2 L256 S256 E64",
    dtype: "float32",
    inputs: () => [1, 2, 3].map((s) => r([1, 2, 256, 64], "float32", 10 + s)),
    args: (t) => [t[0], t[1], t[2]],
  },
  {
    // A larger attention, warm only (too long for a start's budget): at B1 H2 L256 the
    // WASM kernel on two threads measured close to oneDNN's (0.57 against 0.36 ms, Zen 4),
    // at L2048 it took 2.9 times as long (263 against 91 ms).
    op: "scaledDotProductAttention",
    case: "B1 H1 L512 S512 E64",
    dtype: "float32",
    inputs: () => [1, 2, 3].map((s) => r([1, 1, 512, 64], "float32", 20 + s)),
    args: (t) => [t[0], t[1], t[2]],
    warmOnly: true,
  },
  gemmCase(64, "float32", 3),
  gemmCase(128, "float64", 5),
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
  /** Kernels that failed while being measured, and why. */
  skipped: string[];
  /** Cases the budget did not reach: the next ready() measures them (in its own budget). */
  pending: string[];
  /** The cache file, when there is a file system to keep it in. */
  cacheFile: string | undefined;
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

function backendsOf(c: CalibrationCase): string[] {
  return [...new Set(runnable(c.op, c.dtype).map((k) => k.backend))];
}

/** Everything the figures depend on, as text (hashed into the cache key). */
function machineText(): string {
  const cpu = cpuCapabilityInfo();
  const rt = runtime();
  const threads = requestedThreads();
  const names = [...new Set(CASES.flatMap(backendsOf))].sort();
  const backends = names.map((n) => {
    const def = getBackend(n)?.def;
    let extra = "";
    try {
      extra = def?.performanceKey?.() ?? "";
    } catch {
      extra = "?";
    }
    // Its kernels too: a kernel added to a backend of the same version is measured.
    const kernels = CASES.flatMap((c) => runnable(c.op, c.dtype))
      .filter((k) => k.backend === n)
      .map((k) => k.name);
    return `${n}@${def?.version?.() ?? "?"} [${[...new Set(kernels)].sort().join(",")}]${extra ? ` ${extra}` : ""}`;
  });
  return [
    `core ${coreVersion}`,
    `${rt.name} ${rt.version} ${rt.platform}-${rt.arch}`,
    `cpu ${cpu.model || "?"} [${cpu.capability}; ${hash(cpu.features.join(" "))}]`,
    `threads ${threads}`,
    ...backends,
  ].join("\n");
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

/**
 * Whether the figures put another backend ahead of the one the authors rank first: such
 * a case is measured again at the next starts (up to CONFIRMATIONS runs), keeping each
 * kernel's best, before it is trusted.
 */
function contradictsAuthors(m: Measurement): boolean {
  const prio = (name: string) =>
    getOp(m.op)?.kernels.find((k) => k.name === name)?.priority ?? Number.NEGATIVE_INFINITY;
  const top = [...m.figures].sort((a, b) => prio(b.kernel) - prio(a.kernel))[0];
  return top !== undefined && m.figures.some((f) => f.ms * MARGIN < top.ms);
}
const CONFIRMATIONS = 3;

/** A case's key: "op case dtype" (a CalibrationCase or its Measurement). */
const caseKey = (c: { op: string; case: string; dtype: DType }): string =>
  `${c.op} ${c.case} ${c.dtype}`;

/** The case's figures; null when there is nothing to rank; "late" when the budget ran out. */
function measureCase(
  c: CalibrationCase,
  limits: { start: number; end: number },
  skipped: string[],
): Measurement | null | "late" {
  const op = getOp(c.op);
  if (!op?.work) return null;
  if (now() > limits.start) return "late";
  const inputs = c.inputs();
  try {
    const params = op.prepare(...c.args(inputs));
    const ks = firstPerBackend(runnable(c.op, c.dtype), params);
    if (ks.length < 2) return null; // nothing to rank
    const t0 = now();
    // Each round times a kernel's second call in a row: right after another backend's call
    // its threads share the cores with that backend's spinning ones (fresh calibrations of
    // B1 H2 L256 attention once put flash-cpu-blas at 4.0 ms against its steady 0.49).
    const figures = timeInterleaved(ks, params, { rounds: 3, burst: 2, ...limits }, (k, e) =>
      skipped.push(`${caseKey(c)}: ${k.name} threw ${(e as Error).message}`),
    );
    if (figures === "late") return "late";
    return {
      op: c.op,
      case: c.case,
      dtype: c.dtype,
      deviceType: "cpu",
      work: op.work(params),
      figures,
      runs: 1,
      costMs: now() - t0,
    };
  } finally {
    for (const t of inputs) t.dispose();
  }
}

/**
 * Measures the cases (`only`: just these keys) within one budget, on top of `earlier`
 * figures. Cases the budget did not reach are `pending`: the next ready() measures them.
 */
function measure(
  machine: string,
  t0: number,
  earlier: { measurements: Measurement[]; measuredMs: number } | undefined,
  only?: readonly string[],
  { budgetMs = CALIBRATION_BUDGET_MS, warm = false } = {},
): CalibrationReport {
  const skipped: string[] = [];
  const pending: string[] = [];
  const measurements = [...(earlier?.measurements ?? [])];
  // A kernel starts its warm-up before `start`; a timing round runs only if it is
  // expected to end before `end` (the budget, the cache read and the rest included).
  const limits = { start: t0 + budgetMs * 0.7, end: t0 + budgetMs * 0.9 };
  let first = true;
  for (const c of CASES) {
    if (only ? !only.includes(caseKey(c)) : c.warmOnly) continue;
    if (backendsOf(c).length < 2) continue;
    // The first case of a start may start its warm-ups until the round limit: a case
    // whose first calls alone pass 70% of the budget (oneDNN's JIT at its first sgemm:
    // 30 ms) would otherwise be late at every start and never ranked.
    const m = measureCase(c, first ? { ...limits, start: limits.end } : limits, skipped);
    first = false;
    if (m === "late") pending.push(caseKey(c));
    else if (m) {
      if (warm) m.warm = true;
      const i = measurements.findIndex((x) => caseKey(x) === caseKey(c));
      if (i < 0) measurements.push(m);
      else measurements[i] = mergeBest(measurements[i], m);
    }
  }
  const ms = now() - t0;
  return {
    source: "measured",
    fingerprint: hash(machine),
    machine,
    costMs: ms,
    measuredMs: (earlier?.measuredMs ?? 0) + ms,
    budgetMs,
    measurements,
    skipped,
    pending,
    cacheFile: undefined,
  };
}

interface CacheEntry {
  machine: string;
  measuredMs: number;
  at: string;
  measurements: Measurement[];
  skipped: string[];
  pending: string[];
}
type CacheFile = { entries: Record<string, CacheEntry> };

const isRecord = (x: unknown): x is Record<string, unknown> =>
  x !== null && typeof x === "object" && !Array.isArray(x);
const isFiniteNumber = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const isTextList = (x: unknown): x is string[] =>
  Array.isArray(x) && x.every((v) => typeof v === "string");

function isFigure(x: unknown): x is KernelFigure {
  return (
    isRecord(x) &&
    typeof x.kernel === "string" &&
    typeof x.backend === "string" &&
    isFiniteNumber(x.ms) &&
    x.ms >= 0
  );
}

function isMeasurement(x: unknown): x is Measurement {
  return (
    isRecord(x) &&
    typeof x.op === "string" &&
    typeof x.case === "string" &&
    isDType(x.dtype) &&
    typeof x.deviceType === "string" &&
    isFiniteNumber(x.work) &&
    Array.isArray(x.figures) &&
    x.figures.every(isFigure) &&
    isFiniteNumber(x.runs) &&
    (x.warm === undefined || typeof x.warm === "boolean")
  );
}

/** An entry as saveToCache writes it (another version's, or a damaged one, is not). */
function isCacheEntry(x: unknown): x is CacheEntry {
  return (
    isRecord(x) &&
    typeof x.machine === "string" &&
    isFiniteNumber(x.measuredMs) &&
    typeof x.at === "string" &&
    Array.isArray(x.measurements) &&
    x.measurements.every(isMeasurement) &&
    isTextList(x.skipped) &&
    isTextList(x.pending)
  );
}

/** Says (once per problem) that the cache could not be used as it was: it is measured again. */
function noteBadCache(why: string): void {
  warnOnce(
    `calibration-cache:${why}`,
    `calibration cache: ${why}; measuring the CPU kernels again`,
  );
}

/**
 * The cache file's entries that have the shape this version writes. A file or entry that
 * does not (empty, truncated, another version's, edited) is left out with a note, so its
 * machine is measured again and the next write replaces it: it never fails ready().
 */
function readCache(): CacheFile {
  const f = readCacheFile(CACHE_FILE, noteBadCache);
  const entries: Record<string, CacheEntry> = {};
  if (f === undefined) return { entries };
  const where = `${userCacheDir()}/${CACHE_FILE}`;
  if (!isRecord(f) || !isRecord(f.entries)) {
    noteBadCache(`${where} is not a calibration cache ({ entries: {...} })`);
    return { entries };
  }
  let dropped = 0;
  for (const [key, entry] of Object.entries(f.entries)) {
    // Keys are fingerprints (8 hex digits): "__proto__" must not reach the object's prototype.
    if (/^[0-9a-f]{8}$/.test(key) && isCacheEntry(entry)) entries[key] = entry;
    else dropped++;
  }
  if (dropped > 0)
    noteBadCache(
      `${dropped === 1 ? "an entry" : `${dropped} entries`} of ${where} had another format and ${dropped === 1 ? "was" : "were"} dropped`,
    );
  return { entries };
}

function saveToCache(rep: CalibrationReport): string | undefined {
  const file = readCache();
  file.entries[rep.fingerprint] = {
    machine: rep.machine,
    measuredMs: rep.measuredMs,
    at: new Date().toISOString(),
    measurements: rep.measurements,
    skipped: rep.skipped,
    pending: rep.pending,
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
  installedAt = now();
  installedThreads = requestedThreads();
  warmChecked.clear();
  rankedCalls.clear();
  for (const op of new Set(CASES.map((c) => c.op)))
    if (coldCases(rep, op).length === 0) warmChecked.add(op);
  useMeasurements(rep.source === "off" ? [] : rep.measurements);
  bumpGeneration(); // dispatcher entries are rebuilt with the new order
  return rep;
}

function measureAndSave(
  machine: string,
  t0: number,
  earlier?: { measurements: Measurement[]; measuredMs: number },
  only?: readonly string[],
): CalibrationReport {
  const rep = measure(machine, t0, earlier, only);
  rep.cacheFile = saveToCache(rep);
  return install(rep);
}

/** The ops whose cases have been measured warm (or found warm) since the figures were installed. */
const warmChecked = new Set<string>();
/** Ranked calls of each op since the figures were installed. */
const rankedCalls = new Map<string, number>();
/**
 * When an op's cases are measured again, warm: at a ranked call of the op that is at least
 * its WARM_CALL-th and WARM_AFTER_MS after the figures were installed. Native 2-thread
 * kernels kept 2-3x their steady time for the first 70-100 ms of a process (Zen 4), the
 * 8th attention call came inside that.
 */
export const WARM_CALL = 8;
export const WARM_AFTER_MS = 1000;
/** The warm measurement's budget, once per op and cache (its larger cases do not fit a start's). */
const WARM_BUDGET_MS = 120;
let installedAt = 0;
let installedThreads = 0;

/**
 * Counts a dispatch the ranker ordered by these figures; at the first that is warm enough,
 * the warm measurement (confirmWarm). True when that changed the figures.
 */
export function noteRankedCall(op: string): boolean {
  if (warmChecked.has(op)) return false;
  const n = (rankedCalls.get(op) ?? 0) + 1;
  rankedCalls.set(op, n);
  if (n < WARM_CALL || now() - installedAt < WARM_AFTER_MS) return false;
  // Only on the thread count the figures are for (a scope on another is not counted).
  return requestedThreads() === installedThreads && confirmWarm(op);
}

/**
 * Measures the op's cases once more, warm, unless each already has a warm figure: each
 * kernel's best of the old and new figures is kept, marked warm and cached (noteRankedCall
 * says when). Why: a start's figures come while the second core of a 2-core machine runs
 * V8's compilers and the thread pools' start, and 2-thread kernels then measure 2-3x their
 * steady time (flash-cpu-dnnl at B1 H2 L256: 0.9-1.3 ms in the first 90 ms of a process,
 * 0.36 after; Zen 4), which the cache kept, ranking it below flash-cpu-blas (0.47). True
 * when the figures changed.
 */
export function confirmWarm(op: string): boolean {
  if (warmChecked.has(op)) return false;
  warmChecked.add(op);
  const rep = report;
  // Only over this calibration's own figures (not ones installed otherwise, as tests do).
  if (!rep || rep.source === "off" || measurementsInUse() !== rep.measurements) return false;
  const todo = coldCases(rep, op);
  if (todo.length === 0) return false;
  const next = measure(rep.machine, now(), rep, todo, { budgetMs: WARM_BUDGET_MS, warm: true });
  const stillCold = coldCases(next, op);
  if (stillCold.length === todo.length) return false; // nothing measured
  // A case this pass left late stays cold (the next process's pass tries it again), not
  // pending: pending cases are measured in a start's budget, which warm-only ones exceed.
  next.pending = rep.pending.filter((key) => !todo.includes(key) || stillCold.includes(key));
  next.cacheFile = saveToCache(next);
  report = next;
  useMeasurements(next.measurements);
  return true;
}

/** The op's cases without a warm figure in `rep`. */
function coldCases(rep: { measurements: readonly Measurement[] }, op: string): string[] {
  return CASES.filter((c) => c.op === op)
    .map(caseKey)
    .filter((key) => !rep.measurements.some((m) => m.warm && caseKey(m) === key));
}

/**
 * Measures anew (ignoring the cache), installs the order and writes the cache:
 * `backends.cpu.calibrate()`. Call it after `await backends.ready()`.
 */
export function calibrate(): CalibrationReport {
  return measureAndSave(machineText(), now());
}

const OFF = (fingerprint: string, machine: string): CalibrationReport => ({
  source: "off",
  fingerprint,
  machine,
  costMs: 0,
  measuredMs: 0,
  budgetMs: CALIBRATION_BUDGET_MS,
  measurements: [],
  skipped: ["cpu.calibrate is false"],
  pending: [],
  cacheFile: undefined,
});

/**
 * What ready() calls: this machine's figures from memory or the cache (measuring the
 * cases a previous budget left pending), or a measurement when there are none.
 */
export function ensureCalibrated(): CalibrationReport {
  const t0 = now();
  const machine = machineText();
  const key = hash(machine);
  if (getFlag("cpu.calibrate") !== true) {
    if (report?.source !== "off") install(OFF(key, machine));
    return report as CalibrationReport;
  }
  const known =
    report && report.source !== "off" && report.fingerprint === key ? report : undefined;
  if (known && known.pending.length === 0) return known;
  const hit = known ?? readCache().entries[key];
  if (!hit || hit.machine !== machine || !Array.isArray(hit.measurements))
    return measureAndSave(machine, t0);
  const again = hit.measurements
    .filter((m) => contradictsAuthors(m) && (m.runs ?? 1) < CONFIRMATIONS)
    .map(caseKey);
  const todo = [...(hit.pending ?? []), ...(known ? [] : again)];
  if (todo.length > 0) return measureAndSave(machine, t0, hit, todo);
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
    pending: [],
    cacheFile: dir ? `${dir}/${CACHE_FILE}` : undefined,
  });
}

/** Drops the figures in use (tests: the next ensureCalibrated() starts as a new process). */
export function forgetCalibration(): void {
  report = undefined;
  warmChecked.clear();
  rankedCalls.clear();
  useMeasurements([]);
  bumpGeneration();
}

/** The figures in use (undefined before the first ready()). */
export function calibration(): CalibrationReport | undefined {
  return report;
}
