/**
 * Where the current flag state lives. Each async task started by `withFlags` gets its
 * own Frame through AsyncLocalStorage (Node, Bun, Deno). Without it (browsers), there is
 * one root frame and `withFlags` falls back to save/restore around the callback, which is
 * only safe for callbacks that do not interleave with other scoped tasks (documented).
 */
import type { FlagState } from "./state.ts";

export interface Frame {
  state: FlagState;
}

interface Als<T> {
  getStore(): T | undefined;
  run<R>(store: T, fn: () => R): R;
}

const g = globalThis as any;

/**
 * Node (>= 20.16), Bun and Deno all expose process.getBuiltinModule, so this needs no
 * top-level await (which would force bundlers to an ES2022 target) and no import that a
 * browser bundle would have to stub.
 */
function loadAls(): (new () => Als<Frame>) | undefined {
  try {
    return g.process?.getBuiltinModule?.("node:async_hooks")?.AsyncLocalStorage;
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

/** Runs fn with a new frame holding `state`; the frame follows fn across awaits. */
export function runInFrame<R>(state: FlagState, fn: () => R): R {
  if (als) {
    framesInUse = true;
    return als.run({ state }, fn);
  }
  // Browser fallback: swap the root state for the duration of fn (and its promise).
  const frame = root as Frame;
  const saved = frame.state;
  frame.state = state;
  let result: R;
  try {
    result = fn();
  } catch (e) {
    frame.state = saved;
    throw e;
  }
  if (result instanceof Promise) {
    return result.finally(() => {
      frame.state = saved;
    }) as R;
  }
  frame.state = saved;
  return result;
}
