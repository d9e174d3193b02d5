/**
 * The dispatcher: picks the first kernel that is enabled and supports the inputs.
 * Everything that depends only on flags, registrations and (device, dtype) is decided
 * once per flag snapshot and cached, so a dispatch is two map lookups and supports().
 */

import {
  ArgumentError,
  BackplaneError,
  type CandidateReport,
  FallbackError,
  KernelContractError,
  KernelError,
  NoKernelError,
  NondeterministicError,
} from "../errors.ts";
import { currentFrame } from "../flags/context.ts";
import type { FlagState } from "../flags/snapshot.ts";
import { currentState } from "../flags/state.ts";
import {
  availabilityOf,
  bumpGeneration,
  getBackend,
  registryGeneration,
  startInit,
} from "../registry/backends.ts";
import { getOp, type Kernel, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { DType } from "../tensor/dtype.ts";
import { show } from "../util/format.ts";
import { warnOnce } from "../util/log.ts";
import { splitReason } from "../util/reason.ts";
import {
  classFor,
  type KernelFigure,
  type Measurement,
  type SizeClass,
  sizeClasses,
} from "./measured.ts";
import { type ShapeOrder, shapeOrder } from "./per-shape.ts";
import { checkResult } from "./result-check.ts";
import { now, timeInterleaved } from "./timing.ts";

const PRECISION_RANK = { highest: 0, high: 1, medium: 2 } as const;

/** What is decided per (flag snapshot, device type, dtype). */
interface Entry {
  /** Kernels that pass every static check, in priority order. */
  kernels: Kernel[];
  /** Nondeterministic kernels held back by deterministic mode (used with warnOnly). */
  heldBack: Kernel[];
  /** Kernels refused statically, with the reason, for explain() and errors. */
  refused: CandidateReport[];
  verbose: boolean;
  /** Check each result against the op's promise (core.checkKernels or core.strict). */
  check: boolean;
  /** Backends whose kernels were passed over because they were still initialising. */
  initialising: string[] | undefined;
  autotune: boolean;
  autotuneLimit: number;
  /** Autotune winners by shape key. */
  winners: Map<string, Kernel>;
  /** Strict mode with a user priority: the kernels or families allowed to run. */
  wanted: readonly string[] | undefined;
  /** The kernels reordered by measurement, per size class (calibrate.ts), when measured. */
  classes: SizeClass[] | undefined;
  /** Orders measured per input shape (ops with rankPerShape), by shape key. */
  perShape: Map<string, ShapeOrder> | undefined;
}

function flagOf(state: FlagState, key: string): unknown {
  return state.values[key];
}

function orderFor(op: OpRecord, state: FlagState): Kernel[] {
  const pref = state.priorities[op.name];
  if (!pref || pref.length === 0) return op.kernels;
  const rank = (k: Kernel) => {
    let i = pref.indexOf(k.name);
    if (i < 0 && k.family !== undefined) i = pref.indexOf(k.family);
    return i < 0 ? pref.length : i;
  };
  // Stable sort: listed kernels first in the user's order, the rest by priority.
  return [...op.kernels].sort((a, b) => rank(a) - rank(b));
}

/** Why a kernel cannot be considered at all under `state`, or undefined when it can. */
function staticRefusal(
  k: Kernel,
  state: FlagState,
  deviceType: string,
  dtype: DType,
): string | undefined {
  if (k.device !== deviceType) return `runs on ${k.device}, inputs are on ${deviceType}`;
  if (!k.dtypes.includes(dtype))
    return `dtype ${dtype} not supported (supports ${k.dtypes.join(", ")})`;
  const b = getBackend(k.backend);
  if (!b) return `backend ${k.backend} is not registered`;
  const avail = availabilityOf(b);
  if (!avail.available)
    return splitReason(
      `backend ${k.backend} is not available: ${avail.reason ?? "no reason given"}`,
    ).reason;
  startInit(b);
  if (b.initState === "running")
    return `backend ${k.backend} is still initialising (await ready("${k.backend}"))`;
  if (b.initState === "failed")
    return splitReason(
      b.notInstalled
        ? `backend ${k.backend}: ${b.initError}`
        : `backend ${k.backend} failed to initialise: ${b.initError}`,
    ).reason;
  for (const f of k.flags ?? []) {
    if (flagOf(state, f) !== true) return `disabled by flag ${f} = ${String(flagOf(state, f))}`;
  }
  if (k.enabled) {
    const r = k.enabled((key) => flagOf(state, key));
    if (r !== true) return r;
  }
  if (k.precision && dtype === "float32") {
    const cur = (flagOf(state, "core.float32MatmulPrecision") ??
      "highest") as keyof typeof PRECISION_RANK;
    if (PRECISION_RANK[cur] < PRECISION_RANK[k.precision]) {
      return `needs float32 matmul precision "${k.precision}" or lower; it is "${cur}" (setFloat32MatmulPrecision)`;
    }
  }
  return undefined;
}

function buildEntry(op: OpRecord, state: FlagState, deviceType: string, dtype: DType): Entry {
  const deterministic = flagOf(state, "core.deterministic") === true;
  const e: Entry = {
    kernels: [],
    heldBack: [],
    refused: [],
    verbose: false,
    check: flagOf(state, "core.checkKernels") === true || flagOf(state, "core.strict") === true,
    initialising: undefined,
    autotune: flagOf(state, "core.benchmark") === true || flagOf(state, "cudnn.benchmark") === true,
    autotuneLimit: (flagOf(state, "cudnn.benchmarkLimit") as number | undefined) ?? 0,
    winners: new Map(),
    wanted:
      flagOf(state, "core.strict") === true && (state.priorities[op.name]?.length ?? 0) > 0
        ? state.priorities[op.name]
        : undefined,
    classes: undefined,
    perShape: undefined,
  };
  const coreVerbose = flagOf(state, "core.verbose") === true;
  for (const k of orderFor(op, state)) {
    const why = staticRefusal(k, state, deviceType, dtype);
    if (why !== undefined) {
      e.refused.push({ kernel: k.name, backend: k.backend, accepted: false, reason: why });
      if (getBackend(k.backend)?.initState === "running" && !e.initialising?.includes(k.backend))
        (e.initialising ??= []).push(k.backend);
      continue;
    }
    if (deterministic && !k.deterministic) e.heldBack.push(k);
    else e.kernels.push(k);
    if (coreVerbose || (k.verboseFlags ?? []).some((f) => Number(flagOf(state, f) ?? 0) > 0))
      e.verbose = true;
  }
  // Measured order: not over the user's own priority, and not in deterministic mode (the
  // kernel must not depend on a timing, as torch asks of cudnn.benchmark).
  if (
    op.work !== undefined &&
    flagOf(state, "cpu.calibrate") === true &&
    !deterministic &&
    (state.priorities[op.name]?.length ?? 0) === 0
  ) {
    if (op.rankPerShape && deviceType === "cpu") e.perShape = new Map();
    else e.classes = sizeClasses(op.name, deviceType, dtype, e.kernels);
  }
  return e;
}

/** The kernels to try, in order, for these params (measuring a new shape when allowed). */
function kernelsFor(op: OpRecord, e: Entry, params: OpParams, mayMeasure = true): Kernel[] {
  if (e.perShape !== undefined)
    return shapeOrder(op, e.perShape, e.kernels, params, mayMeasure)?.kernels ?? e.kernels;
  return e.classes === undefined
    ? e.kernels
    : classFor(e.classes, (op.work as (p: OpParams) => number)(params)).kernels;
}

/** The figures behind the order for these params, when they were measured. */
function measurementFor(op: OpRecord, e: Entry, params: OpParams): Measurement | undefined {
  if (e.perShape !== undefined)
    return shapeOrder(op, e.perShape, e.kernels, params, false)?.measurement;
  return e.classes && classFor(e.classes, (op.work as (p: OpParams) => number)(params)).measurement;
}

function entryFor(op: OpRecord, state: FlagState, deviceType: string, dtype: DType): Entry {
  // Registrations, availability changes and clearAutotuneCache() all bump the generation.
  const gen = registryGeneration();
  if (op.cacheGeneration !== gen) {
    op.cache = new WeakMap();
    op.cacheGeneration = gen;
  }
  let byDevice = op.cache.get(state) as Map<string, Map<DType, Entry>> | undefined;
  if (!byDevice) op.cache.set(state, (byDevice = new Map()));
  let byDtype = byDevice.get(deviceType);
  if (!byDtype) byDevice.set(deviceType, (byDtype = new Map()));
  let e = byDtype.get(dtype);
  if (!e) byDtype.set(dtype, (e = buildEntry(op, state, deviceType, dtype)));
  return e;
}

/**
 * Runs `op` on the best kernel for `params`: the op's result type. The hot path of every op.
 * The one place a kernel's result takes its op's type: the table holds kernels of every
 * op, each registered under its op's name (typed when defined through `op.kernel()`), and
 * core.checkKernels holds each result to the op's `result()` at run time.
 */
export function dispatch<P extends OpParams, R>(op: OpRecord<P, never, R>, params: P): R {
  return dispatchAny(op, params) as R;
}

function dispatchAny(op: OpRecord, params: OpParams): unknown {
  const frame = currentFrame();
  const e = entryFor(op, frame.state, params.deviceType, params.dtype);
  if (e.initialising !== undefined) warnInitialising(op, e.initialising);
  if (e.autotune) return runAutotuned(op, e, params);
  const ks = kernelsFor(op, e, params);
  for (let i = 0; i < ks.length; i++) {
    const k = ks[i];
    if (k.supports === undefined || k.supports(params) === true) {
      if (e.wanted !== undefined) checkStrict(op, e, k, params);
      return e.verbose || frame.calls !== undefined
        ? traced(op, k, params, e)
        : runKernel(op, k, params, e.check);
    }
  }
  return runHeldBack(op, e, params);
}

const inList = (k: Kernel, names: readonly string[]): boolean =>
  names.includes(k.name) || (k.family !== undefined && names.includes(k.family));

/** Strict mode: the kernel about to run must be one the user asked for. */
function checkStrict(op: OpRecord, e: Entry, k: Kernel, params: OpParams): void {
  const wanted = e.wanted as readonly string[];
  if (inList(k, wanted)) return;
  const refused = candidates(op, e, params).candidates.filter((c) => {
    const kernel = op.kernels.find((x) => x.name === c.kernel);
    return kernel !== undefined && inList(kernel, wanted);
  });
  throw new FallbackError(op.name, wanted, `${k.name} (${k.backend})`, refused);
}

function runHeldBack(op: OpRecord, e: Entry, params: OpParams): unknown {
  for (const k of e.heldBack) {
    if (k.supports === undefined || k.supports(params) === true) {
      if (flagOf(currentState(), "core.deterministicWarnOnly") !== true) {
        throw new NondeterministicError(op.name, `${k.name} (${k.backend})`);
      }
      if (e.wanted !== undefined) checkStrict(op, e, k, params);
      warnOnce(
        `nondeterministic:${op.name}/${k.name}`,
        `${op.name}: ${k.name} (${k.backend}) is nondeterministic but useDeterministicAlgorithms(true, { warnOnly: true }) lets it run`,
      );
      return traced(op, k, params, e);
    }
  }
  const report = candidates(op, e, params).candidates;
  throw new NoKernelError(op.name, report, hintFor(op, report, params));
}

/** A way out: a flag-disabled kernel that would accept these inputs, else deterministic mode. */
function hintFor(op: OpRecord, report: CandidateReport[], params: OpParams): string {
  for (const c of report) {
    if (!c.reason.startsWith("disabled by flag")) continue;
    const k = op.kernels.find((x) => x.name === c.kernel);
    let accepts = false;
    try {
      accepts = k !== undefined && (k.supports === undefined || k.supports(params) === true);
    } catch {
      accepts = false;
    }
    if (accepts)
      return `Hint: ${c.kernel} would run if you change ${c.reason.slice("disabled by flag ".length)}.`;
  }
  const det = report.find((c) => c.reason.includes("nondeterministic"));
  if (det)
    return "Hint: useDeterministicAlgorithms(false), or { warnOnly: true }, lets a nondeterministic kernel run.";
  return "";
}

export interface Explanation {
  op: string;
  /** The kernel dispatch would run now, if any. */
  selected: string | undefined;
  candidates: CandidateReport[];
  toString(): string;
}

function candidates(op: OpRecord, e: Entry, params: OpParams): Explanation {
  const out: CandidateReport[] = [];
  let selected: string | undefined;
  const consider = (k: Kernel, heldBack: boolean) => {
    let ok: true | string = true;
    try {
      ok = k.supports ? k.supports(params) : true;
    } catch (err) {
      ok = `supports() threw: ${(err as Error).message}`;
    }
    if (ok !== true) {
      out.push({ kernel: k.name, backend: k.backend, accepted: false, reason: ok });
      return;
    }
    if (heldBack) {
      const warn = flagOf(currentState(), "core.deterministicWarnOnly") === true;
      out.push({
        kernel: k.name,
        backend: k.backend,
        accepted: warn && selected === undefined,
        reason: warn
          ? "nondeterministic; runs with a warning (warnOnly)"
          : "nondeterministic, and useDeterministicAlgorithms(true) is on",
      });
      if (warn && selected === undefined) selected = k.name;
      return;
    }
    out.push({
      kernel: k.name,
      backend: k.backend,
      accepted: true,
      reason: selected === undefined ? "selected" : `supports the inputs; ${selected} comes first`,
    });
    selected ??= k.name;
  };
  // explain() runs nothing: a shape not yet measured shows the authors' order.
  for (const k of kernelsFor(op, e, params, false)) consider(k, false);
  for (const k of e.heldBack) consider(k, true);
  out.push(...e.refused);
  const measured = measurementFor(op, e, params);
  for (const c of out) {
    const f = measured?.figures.find((x) => x.kernel === c.kernel);
    if (f && measured) c.measured = { ms: f.ms, case: `${measured.case} ${measured.dtype}` };
  }
  return {
    op: op.name,
    selected,
    candidates: out,
    toString() {
      const w = Math.max(6, ...out.map((c) => c.kernel.length + c.backend.length + 3));
      const rows = out.map(
        (c) =>
          `${c.accepted ? (c.kernel === selected ? "=>" : "ok") : "  "} ${`${c.kernel} (${c.backend})`.padEnd(w)}  ${c.reason}${c.measured ? ` [measured ${c.measured.ms.toFixed(3)} ms at ${c.measured.case}]` : ""}`,
      );
      return [
        `${op.name}: ${selected ? `runs ${selected}` : "no kernel can run these inputs"}`,
        ...rows,
      ].join("\n");
    },
  };
}

function opOrThrow(name: string): OpRecord {
  const op = getOp(name);
  if (!op) throw new ArgumentError(`unknown op ${show(name)}`);
  return op;
}

/** Every candidate for `op` on these arguments (the op's own arguments), accepted or refused, and why. */
export function explain(opName: string, ...args: unknown[]): Explanation {
  const op = opOrThrow(opName);
  const params = op.prepare(...args);
  return candidates(op, entryFor(op, currentState(), params.deviceType, params.dtype), params);
}

/** The kernel record `name` of `op`, to call directly (benchmarks, tests). */
export function getKernel(opName: string, name: string): Kernel | undefined {
  return getOp(opName)?.kernels.find((k) => k.name === name);
}

// ---- verbose trace ----

let verboseSink: (line: string) => void = (line) => console.error(line);
/** Where verbose lines go (default: stderr). Returns the previous sink. */
export function setVerboseSink(sink: (line: string) => void): (line: string) => void {
  const prev = verboseSink;
  verboseSink = sink;
  return prev;
}

/**
 * A kernel's run(). What it throws that is not a Backplane error becomes a KernelError; no
 * result at all is a KernelContractError; with `check` (core.checkKernels, core.strict, the
 * testkit) the result must also be what the op promises (checkResult).
 */
function runKernel(op: OpRecord, k: Kernel, params: OpParams, check: boolean): unknown {
  let out: unknown;
  try {
    out = k.run(params);
  } catch (err) {
    if (err instanceof BackplaneError) throw err;
    throw new KernelError(op.name, k.name, k.backend, err);
  }
  if (out === undefined || out === null)
    throw new KernelContractError(op.name, k.name, k.backend, `returned ${out}, not a result`);
  if (check) checkResult(op, k, params, out);
  return out;
}

/** Once per op: it ran while faster backends were still loading (no await ready() first). */
function warnInitialising(op: OpRecord, backends: readonly string[]): void {
  warnOnce(
    `initialising:${op.name}`,
    `[backplane] ${op.name} ran before ${backends.join(", ")} finished initialising, so a slower kernel may have run; await ready() once at start-up`,
  );
}

/** Writes one line to the verbose sink (backends trace their library calls through it). */
export function emitVerbose(line: string): void {
  verboseSink(line);
}

/** Runs a kernel timed: for the verbose trace and for record() scopes. */
function traced(op: OpRecord, k: Kernel, params: OpParams, e: Entry): unknown {
  const verbose = e.verbose;
  const t0 = now();
  const out = runKernel(op, k, params, e.check);
  const ms = now() - t0;
  const calls = currentFrame().calls;
  if (calls !== undefined) {
    calls.push({
      op: op.name,
      kernel: k.name,
      backend: k.backend,
      device: k.device,
      dtype: params.dtype,
      shape: op.shapeKey(params),
      ms,
      ...(e.initialising ? { initialising: [...e.initialising] } : {}),
    });
  }
  if (verbose) {
    verboseSink(
      `backplane_verbose,exec,${op.name},${k.backend}:${k.name},${op.shapeKey(params)},${params.dtype},${ms.toFixed(4)} ms`,
    );
  }
  return out;
}

// ---- autotune ----

function runAutotuned(op: OpRecord, e: Entry, params: OpParams): unknown {
  const key = op.shapeKey(params);
  const won = e.winners.get(key);
  const trace = e.verbose || currentFrame().calls !== undefined;
  if (won && (won.supports === undefined || won.supports(params) === true)) {
    return trace ? traced(op, won, params, e) : runKernel(op, won, params, e.check);
  }
  const fit = e.kernels.filter((k) => k.supports === undefined || k.supports(params) === true);
  if (fit.length === 0) return runHeldBack(op, e, params);
  const trial = e.autotuneLimit > 0 ? fit.slice(0, e.autotuneLimit) : fit;
  const figures = timeInterleaved(trial, params, { rounds: 1 }, (_, err) => {
    throw err;
  }) as KernelFigure[];
  let best: Kernel = trial[0];
  let bestMs = Number.POSITIVE_INFINITY;
  figures.forEach((f, i) => {
    if (f.ms < bestMs) {
      bestMs = f.ms;
      best = trial[i];
    }
  });
  e.winners.set(key, best);
  if (e.verbose)
    verboseSink(
      `backplane_verbose,autotune,${op.name},${key},winner=${best.backend}:${best.name},${bestMs.toFixed(4)} ms`,
    );
  if (e.wanted !== undefined) checkStrict(op, e, best, params);
  return trace ? traced(op, best, params, e) : runKernel(op, best, params, e.check);
}

/** Forgets every autotune winner (they are also dropped when flags or registrations change). */
export function clearAutotuneCache(): void {
  bumpGeneration();
}
