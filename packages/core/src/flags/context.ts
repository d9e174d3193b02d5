/**
 * Where the current flag state lives. Each async task started by `withFlags` gets its
 * own Frame through AsyncLocalStorage (Node, Bun, Deno). Without it (browsers), there is
 * one root frame and `withFlags` falls back to save/restore around the callback, which is
 * only safe for callbacks that do not interleave with other scoped tasks (documented).
 */
import { builtinModule } from "../runtime/host.ts";
import type { FlagState } from "./snapshot.ts";

export interface Frame {
  state: FlagState;
  /** Sync scopes open in this frame, oldest first (closing one out of order hands its saved values on). */
  scopes?: ScopeLike[];
  /**
   * Set inside record(): the lists of the record() calls in progress, outermost first.
   * Every dispatched kernel call is appended to each, so an outer record() sees the calls
   * of a record() nested in it too.
   */
  calls?: readonly KernelCall[][];
}

/**
 * The lists of record() calls that have returned: a task started inside one (a timer, a
 * request handler) keeps its frame after it, and appending its calls there would grow the
 * list without end and change a result the caller already holds.
 */
const closedLists = new WeakSet<readonly KernelCall[]>();

/** Marks a record()'s list finished: later calls in its frame are not added to it. */
export function closeCallList(calls: readonly KernelCall[]): void {
  closedLists.add(calls);
}

/** Whether record() still collects into `calls`. */
export function callListOpen(calls: readonly KernelCall[]): boolean {
  return !closedLists.has(calls);
}

/** One kernel call, as record() reports it. */
export interface KernelCall {
  op: string;
  kernel: string;
  backend: string;
  device: string;
  dtype: string;
  /** The op's shape key, e.g. "64x32@32x16". */
  shape: string;
  /** Wall time of the kernel call, in milliseconds. */
  ms: number;
  /**
   * Backends whose kernels were passed over because they were still initialising: a slower
   * kernel may have run (await ready() once at start-up).
   */
  initialising?: string[];
}

/** What a frame needs to know of an open scope (FlagScope implements it). */
export interface ScopeLike {
  readonly savedValues: Map<string, unknown>;
  readonly savedPriorities: Map<string, readonly string[] | undefined>;
  /** The scope's fast path no longer holds: its entry snapshot is out of date. */
  invalidateSnapshot(): void;
}

interface Als<T> {
  getStore(): T | undefined;
  run<R>(store: T, fn: () => R): R;
}

/**
 * Node (>= 20.16), Bun and Deno all expose process.getBuiltinModule, so this needs no
 * top-level await (which would force bundlers to an ES2022 target) and no import that a
 * browser bundle would have to stub.
 */
function loadAls(): (new () => Als<Frame>) | undefined {
  try {
    return builtinModule<{ AsyncLocalStorage: new () => Als<Frame> }>("node:async_hooks")
      ?.AsyncLocalStorage;
  } catch {
    return undefined;
  }
}

const AlsCtor = loadAls();
const als: Als<Frame> | undefined = AlsCtor ? new AlsCtor() : undefined;
let root: Frame | undefined;

/** True where concurrent async scopes are isolated from each other. */
export const asyncScopesIsolated = als !== undefined;

export function initRoot(state: FlagState): void {
  root = { state };
}

// Until the first withFlags, every task shares the root frame: skip the getStore() lookup
// (it costs several times a dispatch on some runtimes). Once set, this never goes back,
// so a task that outlives its withFlags callback still finds its frame.
let framesInUse = false;

export function currentFrame(): Frame {
  return framesInUse ? (als!.getStore() ?? (root as Frame)) : (root as Frame);
}

/**
 * Runs fn with a new frame holding `state`; the frame follows fn across awaits. A
 * record() in progress carries over; `calls` starts a new one inside it.
 */
export function runInFrame<R>(state: FlagState, fn: () => R, calls?: KernelCall[]): R {
  const outer = currentFrame().calls;
  const inherited = calls ? [...(outer ?? []), calls] : outer;
  if (als) {
    framesInUse = true;
    return als.run({ state, calls: inherited }, fn);
  }
  // Browser fallback: swap the root state for the duration of fn (and its promise).
  const frame = root as Frame;
  const saved = frame.state;
  const savedCalls = frame.calls;
  frame.state = state;
  frame.calls = inherited;
  const back = () => {
    frame.state = saved;
    frame.calls = savedCalls;
  };
  let result: R;
  try {
    result = fn();
  } catch (e) {
    back();
    throw e;
  }
  if (result instanceof Promise) return result.finally(back) as R;
  back();
  return result;
}
