/**
 * The ranker: for an op and its params, the enabled kernels in the order dispatch tries
 * them, and the measurement behind that order. dispatch() and explain() both ask it, so
 * they cannot disagree.
 *
 * What depends only on flags, registrations and (device, dtype) is decided once per flag
 * snapshot into an Entry, the order of each calibrated size class included; what a shape
 * measured is kept in the entry's one map of orders. Every entry is dropped when the
 * registry generation moves (a registration, an availability refresh, a finished init, a
 * new calibration, clearAutotuneCache()), or, for one op, when a warm calibration pass
 * changed its figures: one cache.
 *
 * The policy (core.ranking), decided per entry, first rule that matches:
 *
 * | condition                               | policy     | order                                  |
 * |-----------------------------------------|------------|----------------------------------------|
 * | a user kernel priority for the op       | off        | the user's list, then author priority  |
 * | core.deterministic                      | off        | author priority, nondeterministic held back |
 * | core.ranking is not "auto"              | that value |                                        |
 * | cudnn.benchmark                         | exhaustive | every accepting kernel timed per shape |
 * | cpu.calibrate is false                  | off        | author priority                        |
 * | a CPU op declaring rankPerShape         | perShape   | backends timed at a shape's first call, again at its 8th and 64th (a second on) |
 * | a CPU op with calibration figures       | sizeClass  | backends by the nearest measured size (measured again warm at the op's 8th call) |
 * | otherwise                               | off        | author priority                        |
 */

import { BackplaneError, type CandidateReport, KernelError } from "../errors.ts";
import type { FlagState } from "../flags/snapshot.ts";
import { availabilityOf, getBackend, registryGeneration, startInit } from "../registry/backends.ts";
import {
  answerOf,
  type Kernel,
  kernelAccepts,
  type OpParams,
  type OpRecord,
} from "../registry/kernels.ts";
import type { DType } from "../tensor/dtype.ts";
import { splitReason } from "../util/reason.ts";
import { noteRankedCall } from "./calibrate.ts";
import {
  type KernelFigure,
  type Measurement,
  measurementsInUse,
  mergeBest,
  nearestBySize,
  reorderByMeasurement,
} from "./measured.ts";
import { firstPerBackend, now, timeInterleaved } from "./timing.ts";
import { emitVerbose } from "./verbose.ts";

export type RankPolicy = "off" | "sizeClass" | "perShape" | "exhaustive";

/** An order of kernels for some inputs, and the figures it came from (when measured). */
export interface Ranking {
  kernels: readonly Kernel[];
  measurement: Measurement | undefined;
  /** perShape: calls of the shape left before it is measured again, warm (then undefined). */
  recheckIn?: number;
  /** perShape: when (timing clock, ms) the shape was first measured. */
  firstMeasuredAt?: number;
}

/** What is decided per (flag snapshot, device type, dtype). */
export interface Entry {
  policy: RankPolicy;
  /** Kernels that pass every static check, in the static order (user's, then authors'). */
  base: Ranking;
  /** Nondeterministic kernels held back by deterministic mode (used with warnOnly). */
  heldBack: Kernel[];
  /** Kernels refused statically, with the reason, for explain() and errors. */
  refused: CandidateReport[];
  verbose: boolean;
  /** Check each result against the op's promise (core.checkKernels or core.strict). */
  check: boolean;
  /** Backends whose kernels were passed over because they were still initialising. */
  initialising: string[] | undefined;
  /** Strict mode with a user priority: the kernels or families allowed to run. */
  wanted: readonly string[] | undefined;
  /** exhaustive: how many accepting kernels are timed (cudnn.benchmarkLimit; 0 = all). */
  trialLimit: number;
  /** sizeClass: this op's calibration figures, smallest work first. */
  sizes: Measurement[];
  /** sizeClass: the order each of `sizes` earns (same index), made with the entry. */
  sizeOrders: Ranking[];
  /**
   * Measured orders by shape key (perShape, exhaustive).
   * Shared by every entry with the same policy, kernels and thread setting, so a scope that
   * only turns on the trace (or a check) sees the orders measured outside it.
   */
  orders: Map<string, Ranking>;
}

/** Orders remembered per entry (the oldest forgotten first). */
const ORDER_LIMIT = 256;

/**
 * Interleaved rounds per shape, each timing a kernel's second call in a row. Two rounds
 * let one stalled call decide (a 1x1 96>24 @56 layer went to nnpack instead of the faster
 * oneDNN); single calls, each right after the other kernel's, gave a 3x3 128>128 @28 layer
 * to oneDNN (2.2 ms) over nnpack's Winograd (1.4 ms) in one suite run of two (Zen 4).
 */
const SHAPE_ROUNDS = 3;
const SHAPE_BURST = 2;

/**
 * perShape measures a shape again at these calls, each kernel keeping its best time over
 * the measurements: at the first call a kernel may run code its worker threads have not
 * compiled to their top tier yet (nnpack's Winograd on two threads: 1.05 ms warm, but
 * measured slower than oneDNN's 1.35 ms at a 3x3 128>128 @28 layer's first call, Zen 4),
 * and a few milliseconds of a busy machine can fall on one kernel's turns (a depthwise
 * 3x3 32 @112 layer went to nnpack's kernel, 137 µs, over oneDNN's 93-97, in one suite run
 * of four on two threads, Zen 5). The best of several is what the kernel can do.
 */
const RECHECKS = [8, 64];
/**
 * The last recheck also waits until this long after the first measurement: a second
 * thread runs slower for the first few hundred milliseconds of a process (oneDNN's
 * depthwise 3x3 64 @112 on two threads: 155-160 us, then 137-143 from 300 ms on, Zen 5),
 * and a depthwise layer was given to nnpack (150 us) over oneDNN (80 us settled) that way.
 */
const LAST_RECHECK_AFTER_MS = 1000;

const PRECISION_RANK = { highest: 0, high: 1, medium: 2 } as const;

const flagOf = (state: FlagState, key: string): unknown => state.values[key];

function userOrder(op: OpRecord, state: FlagState): Kernel[] {
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

/** The policy table above, as code. */
function policyFor(op: OpRecord, state: FlagState, deviceType: string): RankPolicy {
  if ((state.priorities[op.name]?.length ?? 0) > 0) return "off";
  if (flagOf(state, "core.deterministic") === true) return "off";
  const chosen = flagOf(state, "core.ranking") ?? "auto";
  if (chosen !== "auto") return chosen as RankPolicy;
  if (flagOf(state, "cudnn.benchmark") === true) return "exhaustive";
  if (flagOf(state, "cpu.calibrate") !== true || deviceType !== "cpu") return "off";
  if (op.rankPerShape) return "perShape";
  return op.work !== undefined ? "sizeClass" : "off";
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
    const r = enabledBy(k, state);
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

/**
 * A kernel's enabled() under `state`; one that throws is a refusal with the message, as a
 * throwing supports() is: one backend's bug must not take the op down for every kernel.
 */
function enabledBy(k: Kernel, state: FlagState): true | string {
  try {
    return k.enabled
      ? answerOf(
          "enabled",
          k.enabled((key) => flagOf(state, key)),
        )
      : true;
  } catch (err) {
    return `enabled() threw: ${(err as Error)?.message ?? String(err)}`;
  }
}

function buildEntry(op: OpRecord, state: FlagState, deviceType: string, dtype: DType): Entry {
  const deterministic = flagOf(state, "core.deterministic") === true;
  const strict = flagOf(state, "core.strict") === true;
  const policy = policyFor(op, state, deviceType);
  const kernels: Kernel[] = [];
  const e: Entry = {
    policy,
    base: { kernels, measurement: undefined },
    heldBack: [],
    refused: [],
    verbose: false,
    check: strict || flagOf(state, "core.checkKernels") === true,
    initialising: undefined,
    wanted:
      strict && (state.priorities[op.name]?.length ?? 0) > 0
        ? state.priorities[op.name]
        : undefined,
    trialLimit: (flagOf(state, "cudnn.benchmarkLimit") as number | undefined) ?? 0,
    sizes:
      policy === "sizeClass"
        ? measurementsInUse()
            .filter(
              (m) =>
                m.op === op.name &&
                m.deviceType === deviceType &&
                m.dtype === dtype &&
                m.figures.length > 1,
            )
            .sort((a, b) => a.work - b.work)
        : [],
    sizeOrders: [],
    orders: NO_ORDERS,
  };
  const coreVerbose = flagOf(state, "core.verbose") === true;
  for (const k of userOrder(op, state)) {
    const why = staticRefusal(k, state, deviceType, dtype);
    if (why !== undefined) {
      e.refused.push({ kernel: k.name, backend: k.backend, accepted: false, reason: why });
      if (getBackend(k.backend)?.initState === "running" && !e.initialising?.includes(k.backend))
        (e.initialising ??= []).push(k.backend);
      continue;
    }
    if (deterministic && !k.deterministic) e.heldBack.push(k);
    else kernels.push(k);
    if (coreVerbose || (k.verboseFlags ?? []).some((f) => Number(flagOf(state, f) ?? 0) > 0))
      e.verbose = true;
  }
  e.sizeOrders = e.sizes.map((m) => ({
    kernels: reorderByMeasurement(kernels, m),
    measurement: m,
  }));
  if (policy === "perShape" || policy === "exhaustive")
    e.orders = sharedOrders(op, state, e, deviceType, dtype);
  return e;
}

const NO_ORDERS = new Map<string, Ranking>();
/** The key, in an op's cache, of its order maps (by policy, device, dtype and kernels). */
const ORDERS = {};

function sharedOrders(
  op: OpRecord,
  state: FlagState,
  e: Entry,
  deviceType: string,
  dtype: DType,
): Map<string, Ranking> {
  let all = op.cache.get(ORDERS) as Map<string, Map<string, Ranking>> | undefined;
  if (!all) op.cache.set(ORDERS, (all = new Map()));
  const limit = e.policy === "exhaustive" ? e.trialLimit : 0;
  // The thread setting too: an order measured on two threads is not one thread's.
  const threads = String(flagOf(state, "openmp.numThreads") ?? 0);
  const key = `${e.policy} ${limit} ${threads} ${deviceType} ${dtype} ${e.base.kernels.map((k) => `${k.backend}:${k.name}`).join(",")}`;
  let orders = all.get(key);
  if (!orders) all.set(key, (orders = new Map()));
  return orders;
}

/**
 * Drops the op's entries (rebuilt at its next call): a warm calibration pass changed its
 * figures alone, and the registry generation would drop every op's measured orders too.
 */
function dropEntries(op: OpRecord): void {
  op.cacheGeneration = -1;
}

/** The entry for this flag snapshot, device type and dtype (built on first use). */
export function entryFor(op: OpRecord, state: FlagState, deviceType: string, dtype: DType): Entry {
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

function remember(e: Entry, key: string, r: Ranking): Ranking {
  if (!e.orders.has(key) && e.orders.size >= ORDER_LIMIT)
    e.orders.delete(e.orders.keys().next().value as string);
  e.orders.set(key, r);
  return r;
}

/** Times the candidates on these params: the order they earn, with the figures. */
function measureShape(op: OpRecord, e: Entry, params: OpParams): Ranking {
  const base = e.base.kernels;
  const exhaustive = e.policy === "exhaustive";
  let trial: Kernel[];
  if (exhaustive) {
    // An in-place kernel is not timed: each trial would write into the inputs again.
    trial = base.filter((k) => !k.inPlace && kernelAccepts(k, params) === true);
    if (e.trialLimit > 0) trial = trial.slice(0, e.trialLimit);
  } else trial = firstPerBackend(base, params);
  if (trial.length < 2) return e.base; // nothing to rank
  const limits = exhaustive ? { rounds: 1 } : { rounds: SHAPE_ROUNDS, burst: SHAPE_BURST };
  const figures = timeInterleaved(trial, params, limits, (k, err) => {
    // The user asked for every kernel: its failure is theirs to see, named as run() names it.
    if (exhaustive)
      throw err instanceof BackplaneError ? err : new KernelError(op.name, k.name, k.backend, err);
  }) as KernelFigure[];
  const measurement: Measurement = {
    op: op.name,
    case: op.shapeKey(params),
    dtype: params.dtype,
    deviceType: params.deviceType,
    work: op.work?.(params) ?? 0,
    figures,
    runs: 1,
  };
  let kernels: Kernel[];
  if (!exhaustive) kernels = reorderByMeasurement(base, measurement);
  else {
    // Every kernel on its own: the fastest first, as torch's cudnn.benchmark picks an algorithm.
    const msOf = new Map(figures.map((f) => [f.kernel, f.ms]));
    const timed = trial.filter((k) => msOf.has(k.name));
    timed.sort((a, b) => (msOf.get(a.name) as number) - (msOf.get(b.name) as number));
    kernels = [...timed, ...base.filter((k) => !timed.includes(k))];
  }
  if (e.verbose) {
    const first = figures.find((f) => f.kernel === kernels[0].name);
    emitVerbose(
      `backplane_verbose,rank,${op.name},${measurement.case},${e.policy},first=${kernels[0].backend}:${kernels[0].name}${first ? `,${first.ms.toFixed(4)} ms` : ""}`,
    );
  }
  return { kernels, measurement };
}

/** A perShape recheck: the kernels' best times over this and the earlier measurements. */
function measureAgain(op: OpRecord, e: Entry, params: OpParams, earlier: Ranking): Ranking {
  const again = measureShape(op, e, params);
  if (!again.measurement || !earlier.measurement) return again;
  const best = mergeBest(earlier.measurement, again.measurement);
  const ranking: Ranking = {
    kernels: reorderByMeasurement(e.base.kernels, best),
    measurement: best,
  };
  // The next recheck, if any: RECHECKS[i] is the call of the (i + 2)-th measurement.
  const next = RECHECKS[best.runs - 1];
  if (next !== undefined) ranking.recheckIn = next - RECHECKS[best.runs - 2];
  ranking.firstMeasuredAt = earlier.firstMeasuredAt;
  return ranking;
}

/** Whether a perShape recheck whose call has come may run: the last waits for its time too. */
function recheckDue(r: Ranking): boolean {
  const last = (r.measurement?.runs ?? 1) >= RECHECKS.length;
  return !last || now() - (r.firstMeasuredAt ?? 0) >= LAST_RECHECK_AFTER_MS;
}

/**
 * The order for these params. A shape not yet measured is measured now when `mayMeasure`
 * (dispatch), or shown in the static order when not (explain() runs nothing).
 */
export function rank(op: OpRecord, e: Entry, params: OpParams, mayMeasure: boolean): Ranking {
  switch (e.policy) {
    case "off":
      return e.base;
    case "sizeClass": {
      if (e.sizes.length === 0) return e.base;
      if (mayMeasure && noteRankedCall(op.name)) dropEntries(op);
      const m = nearestBySize(e.sizes, (op.work as (p: OpParams) => number)(params));
      return e.sizeOrders[e.sizes.indexOf(m)];
    }
    default: {
      const key = op.shapeKey(params);
      const hit = e.orders.get(key);
      if (!mayMeasure) return hit ?? e.base;
      if (hit === undefined) {
        const first = measureShape(op, e, params);
        if (e.policy === "perShape" && first.measurement) {
          first.recheckIn = RECHECKS[0] - 1;
          first.firstMeasuredAt = now();
        }
        return remember(e, key, first);
      }
      if (hit.recheckIn !== undefined && --hit.recheckIn <= 0 && recheckDue(hit))
        return remember(e, key, measureAgain(op, e, params, hit));
      return hit;
    }
  }
}
