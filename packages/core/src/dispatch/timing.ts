/**
 * Timing kernels against each other, shared by the calibration at ready() and the
 * ranker's per-shape orders: each backend's first accepting kernel, timed in interleaved
 * rounds (a burst of load slows them alike) with the best run of each kept.
 */
import { ArgumentError } from "../errors.ts";
import { type Kernel, kernelAccepts, type OpParams } from "../registry/kernels.ts";
import type { KernelFigure } from "./measured.ts";

const systemClock = (): number =>
  typeof performance !== "undefined" ? performance.now() : Date.now();
let clock: () => number = systemClock;

/** Milliseconds on the clock every timing decision reads (see setTimingClock). */
export const now = (): number => clock();

/**
 * Replaces the clock that calibration and the ranker read, and
 * returns the one it replaced (`undefined` restores the system clock). For tests of
 * timing-driven choices: a kernel that advances a fake clock by its "cost" is ranked the
 * same on a loaded machine as on an idle one, where wall-clock sleeps are not.
 */
export function setTimingClock(next: (() => number) | undefined): () => number {
  if (next !== undefined && typeof next !== "function")
    throw new ArgumentError(`setTimingClock: expected a function or undefined, got ${typeof next}`);
  const previous = clock;
  clock = next ?? systemClock;
  return previous;
}

type Disposable = { dispose(): void };
const isDisposable = (x: unknown): x is Disposable =>
  typeof x === "object" && x !== null && typeof (x as Disposable).dispose === "function";

/**
 * Frees a trial run's result: a tensor, or the tensors of a tuple/record result. One of
 * the params' own values (an input handed back) is the caller's and stays.
 */
export function disposeResult(x: unknown, params?: OpParams): void {
  const inputs = new Set(params ? Object.values(params) : []);
  const drop = (v: unknown) => {
    if (isDisposable(v) && !inputs.has(v)) v.dispose();
  };
  if (isDisposable(x)) drop(x);
  else if (x && typeof x === "object") for (const v of Object.values(x)) drop(v);
}

/**
 * Per backend (the core's reference aside), the first kernel in `kernels` that accepts.
 * A backend whose first is an in-place kernel is not timed: each trial run would write
 * into the caller's inputs again.
 */
export function firstPerBackend(kernels: readonly Kernel[], params: OpParams): Kernel[] {
  const out = new Map<string, Kernel>();
  for (const k of kernels) {
    if (k.backend === "reference" || out.has(k.backend)) continue;
    if (kernelAccepts(k, params) === true) out.set(k.backend, k);
  }
  return [...out.values()].filter((k) => !k.inPlace);
}

export interface TimingLimits {
  /** Rounds of one timed run per kernel after the warm-ups. */
  rounds: number;
  /**
   * Runs per kernel per round, back to back, the last timed (default 1): a kernel timed
   * right after another runs on the other's cache, and a kernel with the larger working
   * set (nnpack's transformed weights) loses more to that than it does in a model's
   * steady state of one kernel per layer.
   */
  burst?: number;
  /** No warm-up starts after this time (performance.now()): the case is "late". */
  start?: number;
  /**
   * The first round runs if the warm-ups ended by this time (a warm-up can take far longer
   * than a run: a JIT's first tier), the others only if expected to end by it.
   */
  end?: number;
}

/**
 * A warm-up of each kernel, then interleaved rounds; each kernel's best run. A kernel that
 * throws is left out (`onError` hears why); "late" when the limits stopped it first.
 */
export function timeInterleaved(
  ks: readonly Kernel[],
  params: OpParams,
  limits: TimingLimits,
  onError: (k: Kernel, e: unknown) => void = () => {},
): KernelFigure[] | "late" {
  const start = limits.start ?? Number.POSITIVE_INFINITY;
  const end = limits.end ?? Number.POSITIVE_INFINITY;
  const best = new Map<Kernel, number>();
  for (const k of ks) {
    if (now() > start) return "late"; // measured whole or not at all
    try {
      disposeResult(k.run(params), params);
      best.set(k, Number.POSITIVE_INFINITY);
    } catch (e) {
      onError(k, e);
    }
  }
  let rounds = 0;
  let last = 0; // the duration of the last round
  while (rounds < limits.rounds && (rounds === 0 ? now() <= end : now() + last <= end)) {
    const t0 = now();
    for (const k of best.keys()) {
      try {
        for (let i = 1; i < (limits.burst ?? 1); i++) disposeResult(k.run(params), params);
        const t = now();
        disposeResult(k.run(params), params);
        best.set(k, Math.min(best.get(k) as number, now() - t));
      } catch (e) {
        // A kernel that ran at warm-up may still fail later (an input-dependent path):
        // left out like one that failed at once.
        best.delete(k);
        onError(k, e);
      }
    }
    last = now() - t0;
    rounds++;
  }
  if (rounds === 0) return "late";
  return [...best].map(([k, ms]) => ({ kernel: k.name, backend: k.backend, ms }));
}
