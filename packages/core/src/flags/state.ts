/**
 * Flag values live in immutable FlagState snapshots. A change makes a new snapshot, so
 * the dispatcher can cache its decisions per snapshot and a cache hit costs one lookup.
 */

import { FlagError } from "../errors.ts";
import { show } from "../format.ts";
import { readEnv } from "../runtime.ts";
import { currentFrame, initRoot, runInFrame } from "./context.ts";
import { type FlagSchema, type FlagSpec, isSpec, leaves, parseEnv, validate } from "./spec.ts";

let nextId = 1;

export class FlagState {
  readonly id = nextId++;
  constructor(
    /** Flag values by full key, e.g. "cudnn.benchmark". */
    readonly values: Readonly<Record<string, unknown>>,
    /** User kernel priority per op: kernel names tried first, in order. */
    readonly priorities: Readonly<Record<string, readonly string[]>>,
  ) {}

  /**
   * Snapshots derived from this one, by change. A scope opened again and again with the
   * same changes (a hot loop) gets the same snapshot back, so the dispatcher's cache hits.
   */
  private derived: Map<string, FlagState> | undefined;

  private derive(key: string, make: () => FlagState): FlagState {
    this.derived ??= new Map();
    let s = this.derived.get(key);
    if (!s) {
      if (this.derived.size >= 64) this.derived.clear();
      s = make();
      this.derived.set(key, s);
    }
    return s;
  }

  with(changes: Record<string, unknown>): FlagState {
    let key: string;
    try {
      key = `w${JSON.stringify(changes)}`;
    } catch {
      return new FlagState({ ...this.values, ...changes }, this.priorities);
    }
    return this.derive(key, () => new FlagState({ ...this.values, ...changes }, this.priorities));
  }

  withPriority(op: string, names: readonly string[] | null): FlagState {
    return this.derive(`p${op}\u0000${names === null ? "\u0001" : names.join("\u0000")}`, () => {
      const p = { ...this.priorities };
      if (names === null) delete p[op];
      else p[op] = [...names];
      return new FlagState(this.values, p);
    });
  }
}

const specs = new Map<string, FlagSpec>();
const namespaces = new Map<string, FlagSchema>();
type Hook = (value: unknown, key: string) => void;
const hooks = new Map<string, Set<Hook>>();

initRoot(new FlagState({}, {}));

/** Adds a namespace's flags; values start from the environment, else the default. */
export function defineFlags(namespace: string, schema: FlagSchema): void {
  const existing = namespaces.get(namespace);
  const initial: Record<string, unknown> = {};
  for (const [path, spec] of leaves(schema)) {
    const key = `${namespace}.${path}`;
    const prior = specs.get(key);
    if (prior) {
      if (prior.kind !== spec.kind) {
        throw new FlagError(
          `flag ${key} is already defined as ${prior.kind}; cannot redefine it as ${spec.kind}`,
        );
      }
      continue;
    }
    specs.set(key, spec);
    let value: unknown = spec.default;
    const envText = spec.env ? readEnv(spec.env) : undefined;
    if (envText !== undefined) {
      try {
        value = parseEnv(key, spec, envText);
      } catch (e) {
        // A bad environment value must not break import: warn and keep the default.
        console.warn(
          `[backplane] ${(e as Error).message}; using the default ${show(spec.default)}`,
        );
      }
    }
    initial[key] = value;
  }
  namespaces.set(namespace, existing ? mergeSchema(existing, schema) : schema);
  const frame = currentFrame();
  frame.state = frame.state.with(initial);
}

function mergeSchema(a: FlagSchema, b: FlagSchema): FlagSchema {
  const out: Record<string, FlagSpec | FlagSchema> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = prev && !isSpec(prev) && !isSpec(v) ? mergeSchema(prev, v) : v;
  }
  return out;
}

export function flagSchema(namespace: string): FlagSchema | undefined {
  return namespaces.get(namespace);
}
export function flagNamespaces(): string[] {
  return [...namespaces.keys()];
}
export function flagSpec(key: string): FlagSpec | undefined {
  return specs.get(key);
}
export function allFlagKeys(): string[] {
  return [...specs.keys()];
}

function specOrThrow(key: string): FlagSpec {
  const spec = specs.get(key);
  if (spec) return spec;
  const ns = key.slice(0, key.indexOf("."));
  const known = [...specs.keys()]
    .filter((k) => k.startsWith(`${ns}.`))
    .map((k) => k.slice(ns.length + 1));
  throw new FlagError(
    known.length > 0
      ? `unknown flag ${key}; ${ns} has: ${known.join(", ")}`
      : `unknown flag ${key}: no namespace ${show(ns)} has flags (known: ${flagNamespaces().join(", ")})`,
  );
}

/** The current value of a flag, as seen by the calling task. */
export function getFlag(key: string): unknown {
  const v = currentFrame().state.values[key];
  return v === undefined ? specOrThrow(key).default : v;
}

export function currentState(): FlagState {
  return currentFrame().state;
}

/** Validates a set of changes; returns them as full-key records. */
export function checkChanges(changes: Record<string, unknown>): Record<string, unknown> {
  for (const [key, value] of Object.entries(changes)) validate(key, specOrThrow(key), value);
  return changes;
}

/** Sets a flag for the current task (globally when no scope is active). */
export function setFlag(key: string, value: unknown): void {
  validate(key, specOrThrow(key), value);
  const frame = currentFrame();
  const before = frame.state;
  if (before.values[key] === value) return;
  frame.state = before.with({ [key]: value });
  fire(before, frame.state);
}

function fire(before: FlagState, after: FlagState): void {
  // A priority-only change shares the values object: no flag changed.
  if (hooks.size === 0 || before.values === after.values) return;
  for (const [key, set] of hooks) {
    const a = before.values[key];
    const b = after.values[key];
    if (a !== b) for (const h of set) h(b, key);
  }
}

/** Calls `hook` whenever the flag's value changes in the current task. Returns an unsubscribe. */
export function onFlagChange(key: string, hook: (value: unknown, key: string) => void): () => void {
  specOrThrow(key);
  let set = hooks.get(key);
  if (!set) hooks.set(key, (set = new Set()));
  set.add(hook);
  return () => set.delete(hook);
}

/** A scope that restores what it changed on dispose; `using` calls it, so do `finally` blocks. */
export class FlagScope implements Disposable {
  private active = true;
  constructor(
    private readonly saved: FlagState,
    private readonly frame: { state: FlagState },
  ) {}
  /** Restores the values that were current when the scope opened. */
  restore(): void {
    if (!this.active) return;
    this.active = false;
    const now = this.frame.state;
    this.frame.state = this.saved;
    fire(now, this.saved);
  }
  [Symbol.dispose](): void {
    this.restore();
  }
}

/** Opens a synchronous scope with the changes applied (full keys). */
export function openScope(changes: Record<string, unknown>): FlagScope {
  checkChanges(changes);
  return openStateScope((s) => s.with(changes));
}

export function openStateScope(change: (s: FlagState) => FlagState): FlagScope {
  const frame = currentFrame();
  const saved = frame.state;
  frame.state = change(saved);
  fire(saved, frame.state);
  return new FlagScope(saved, frame);
}

/** Runs fn with the changes in a frame of its own, which follows it across awaits. */
export function runWithState<R>(change: (s: FlagState) => FlagState, fn: () => R): R {
  const outer = currentFrame().state;
  const next = change(outer);
  fire(outer, next);
  let result: R;
  try {
    result = runInFrame(next, fn);
  } catch (e) {
    fire(next, currentFrame().state);
    throw e;
  }
  if (result instanceof Promise) {
    return result.finally(() => fire(next, currentFrame().state)) as R;
  }
  fire(next, currentFrame().state);
  return result;
}

/** Flattens `{ cudnn: { benchmark: true }, cuda: { matmul: { allowTf32: true } } }` to full keys. */
export function flatten(nested: Record<string, unknown>, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (nested === null || typeof nested !== "object" || Array.isArray(nested)) {
    throw new FlagError(
      `flags must be given as an object like { cudnn: { benchmark: true } }, got ${show(nested)}`,
    );
  }
  for (const [k, v] of Object.entries(nested)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (specs.has(key) || v === null || typeof v !== "object" || Array.isArray(v)) out[key] = v;
    else Object.assign(out, flatten(v as Record<string, unknown>, key));
  }
  return out;
}
