/**
 * The flag registry and the current values: schemas by namespace, environment
 * initialisation, validation, readers (who reads each flag), change hooks, and the sync
 * and async scopes over FlagState snapshots (snapshot.ts).
 */

import { FlagError, UnknownFlagError } from "../errors.ts";
import { readEnv } from "../runtime/detect.ts";
import { show } from "../util/format.ts";
import { warnOnce } from "../util/log.ts";
import { didYouMean } from "../util/suggest.ts";
import { BUILTIN_FLAGS, MIRRORED_FLAGS } from "./builtin.ts";
import {
  currentFrame,
  type Frame,
  initRoot,
  type KernelCall,
  runInFrame,
  type ScopeLike,
} from "./context.ts";
import { FlagState, setInitialValue, valuesWith } from "./snapshot.ts";
import {
  envNames,
  type FlagSchema,
  type FlagSpec,
  isSpec,
  leaves,
  parseEnv,
  validate,
} from "./spec.ts";

const specs = new Map<string, FlagSpec>();
const namespaces = new Map<string, FlagSchema>();
type Hook = (value: unknown, key: string) => void;
const hooks = new Map<string, Set<Hook>>();
/** Values packages added to extensible enums (quantized.engine: "qnnpack" once a package provides it). */
const choices = new Map<string, string[]>();
/** Readers added at run time: a backend's own flags are read by its package. */
const extraReaders = new Map<string, Set<string>>();
/** Packages loaded in this process (the registry adds each backend's), the core from the start. */
const loadedPackages = new Set<string>(["@backplane/core"]);
/** isInert() per key; cleared when a reader or a package is added, so a set costs a lookup. */
const inertCache = new Map<string, boolean>();

// Priorities by op name without a prototype: Object.prototype's members are no op's list.
initRoot(new FlagState(valuesWith({}, {}), Object.create(null)));

/** The first environment variable of the spec that is set, with its text. */
function envOf(spec: FlagSpec): [string, string] | undefined {
  for (const name of envNames(spec)) {
    const text = readEnv(name);
    if (text !== undefined) return [name, text];
  }
  return undefined;
}

/**
 * Adds a namespace's flags; values start from the environment, else the default.
 * `reader`: the package that reads these flags (a backend's own schema), if not in the spec.
 */
export function defineFlags(namespace: string, schema: FlagSchema, reader?: string): void {
  const existing = namespaces.get(namespace);
  for (const [path, spec] of leaves(schema)) {
    const key = `${namespace}.${path}`;
    if (reader) addFlagReader(key, reader);
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
    const env = envOf(spec);
    if (env !== undefined) {
      try {
        value = parseEnv(key, spec, env[1], env[0]);
      } catch (e) {
        // A bad environment value must not break import: warn and keep the default.
        warnOnce(
          `env:${env[0]}`,
          `${(e as Error).message}; using the default ${show(spec.default)}`,
        );
      }
    }
    // Into every frame's values at once, not the calling task's alone.
    setInitialValue(key, value);
  }
  namespaces.set(namespace, existing ? mergeSchema(existing, schema) : schema);
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

/** Which backend added each value of an extensible enum (key -> value -> backend). */
const providers = new Map<string, Map<string, string>>();
/** Whether a providing backend can serve now (the registry installs the real test). */
let providerUsable: (backend: string) => boolean = () => true;

/** Installs the test of whether a backend that added flag values can serve them. */
export function setFlagChoiceFilter(usable: (backend: string) => boolean): void {
  providerUsable = usable;
}

/**
 * Makes `value` valid for an extensible enum flag (a package provides a quantized engine).
 * With `provider`, the value is valid only while that backend is available and has not
 * failed to initialise (an engine whose library is missing is not offered).
 */
export function registerFlagChoice(key: string, value: string, provider?: string): void {
  const spec = specOrThrow(key);
  if (spec.kind !== "enum" || !spec.extensible) {
    throw new FlagError(`flag ${key} is not an extensible enum; packages cannot add values to it`);
  }
  if (typeof value !== "string" || value === "") {
    throw new FlagError(`registerFlagChoice(${key}): the value must be a non-empty string`);
  }
  const list = choices.get(key) ?? [];
  if (!list.includes(value) && !spec.values.includes(value)) list.push(value);
  choices.set(key, list);
  if (provider !== undefined) {
    const byValue = providers.get(key) ?? new Map<string, string>();
    byValue.set(value, provider);
    providers.set(key, byValue);
  }
}

/**
 * The backends that added values to a flag of namespace `ns`: a namespace no backend owns
 * is served by them (quantized: its engines).
 */
export function namespaceProviders(ns: string): string[] {
  const out = new Set<string>();
  for (const [key, byValue] of providers)
    if (key.startsWith(`${ns}.`)) for (const p of byValue.values()) out.add(p);
  return [...out];
}

/** The values packages added that their backends can serve now. */
function usableChoices(key: string): string[] {
  return (choices.get(key) ?? []).filter((v) => {
    const p = providers.get(key)?.get(v);
    return p === undefined || providerUsable(p);
  });
}

/** Every value a flag accepts now: its own, plus what packages added and can serve. */
export function flagChoices(key: string): string[] {
  const spec = specOrThrow(key);
  return spec.kind === "enum" ? [...spec.values, ...usableChoices(key)] : [];
}

/** Records that `pkg` reads the flag (besides the readers its spec names). */
export function addFlagReader(key: string, pkg: string): void {
  let set = extraReaders.get(key);
  if (!set) extraReaders.set(key, (set = new Set()));
  set.add(pkg);
  inertCache.delete(key);
}

/** The packages that read a flag: its spec's list and those added at run time. */
export function flagReaders(key: string): string[] {
  const spec = specOrThrow(key);
  return [...new Set([...(spec.readBy ?? []), ...(extraReaders.get(key) ?? [])])];
}

/** The registry tells the flags which packages are loaded (a flag's readers may be among them). */
export function markPackageLoaded(pkg: string): void {
  if (loadedPackages.has(pkg)) return;
  loadedPackages.add(pkg);
  inertCache.clear();
}

/** Whether a package is loaded in this process. */
export function isPackageLoaded(pkg: string): boolean {
  return loadedPackages.has(pkg);
}

/** True when no package that reads the flag is loaded: setting it changes nothing. */
export function isInert(key: string): boolean {
  let inert = inertCache.get(key);
  if (inert === undefined) {
    inert = !flagReaders(key).some((r) => loadedPackages.has(r));
    inertCache.set(key, inert);
  }
  return inert;
}

/** Warns once when a set reaches a flag that no loaded package reads. */
export function warnIfInert(key: string): void {
  if (!isInert(key)) return;
  const readers = flagReaders(key);
  warnOnce(
    `inert:${key}`,
    readers.length === 0
      ? `flag ${key} was set, but no Backplane package reads it yet: it has no effect`
      : `flag ${key} was set, but the package that reads it (${readers.join(" or ")}) is not loaded: it has no effect until you install and import it`,
  );
}

function specOrThrow(key: string): FlagSpec {
  const spec = specs.get(key);
  if (spec) return spec;
  if (typeof key !== "string")
    throw new FlagError(`a flag name must be a string, got ${show(key)}`);
  const dot = key.indexOf(".");
  const ns = dot < 0 ? key : key.slice(0, dot);
  const known = [...specs.keys()]
    .filter((k) => k.startsWith(`${ns}.`))
    .map((k) => k.slice(ns.length + 1));
  if (known.length === 0) {
    throw new UnknownFlagError(
      ns,
      key,
      `unknown flag ${key}: no namespace ${show(ns)} has flags (known: ${flagNamespaces().join(", ")})`,
    );
  }
  const name = key.slice(ns.length + 1);
  const guess = didYouMean(name, known);
  throw new UnknownFlagError(
    ns,
    name,
    `${key}: no such flag${guess ? `; did you mean ${ns}.${guess}?` : ""} (${ns} has: ${known.join(", ")})`,
    guess,
  );
}

/** Validates one value for a flag (what a set or a scope would store). */
export function checkFlag(key: string, value: unknown): void {
  validate(key, specOrThrow(key), value, usableChoices(key));
}

/** The current value of a flag, as seen by the calling task. */
export function getFlag(key: string): unknown {
  // A non-string key would be converted to a property name ({ toString: 1 } is a TypeError).
  if (typeof key !== "string") specOrThrow(key);
  const values = currentFrame().state.values;
  // Values have no Object.prototype ("toString" is an UnknownFlagError), but inherit the
  // initial values (snapshot.ts).
  const v = values[key];
  return v === undefined ? specOrThrow(key).default : v;
}

export function currentState(): FlagState {
  return currentFrame().state;
}

/** Checks over several flags changed together (two views of one setting must agree). */
const changeChecks: ((changes: Readonly<Record<string, unknown>>) => void)[] = [];

/** Adds a check that every set of changes (a scope, withFlags) must pass; it throws FlagError. */
export function addChangeCheck(check: (changes: Readonly<Record<string, unknown>>) => void): void {
  changeChecks.push(check);
}

/** Validates a set of changes; returns them as full-key records. Nothing is stored. */
export function checkChanges(changes: Record<string, unknown>): Record<string, unknown> {
  for (const [key, value] of Object.entries(changes)) checkFlag(key, value);
  for (const check of changeChecks) check(changes);
  return changes;
}

/** Sets a flag for the current task (globally when no scope is active). */
export function setFlag(key: string, value: unknown): void {
  checkFlag(key, value);
  warnIfInert(key);
  const frame = currentFrame();
  const before = frame.state;
  if (before.values[key] === value) return;
  frame.state = before.with({ [key]: value });
  fireOrUndo(frame, before);
}

/**
 * Runs the hooks of a change from `before`; when one refuses it (throws), the frame goes
 * back to `before` and the hooks hear that too, so a refused set leaves nothing behind
 * (neither the flag nor a mirror a hook had already set). Then the refusal is rethrown.
 */
function fireOrUndo(frame: Frame, before: FlagState): void {
  try {
    fire(before, frame.state);
  } catch (e) {
    const now = frame.state;
    frame.state = before;
    fire(now, before, () => {});
    throw e;
  }
}

/** Changes the state of the current task for good (setKernelPriority): no scope to restore. */
export function setState(change: (s: FlagState) => FlagState): void {
  const frame = currentFrame();
  const before = frame.state;
  frame.state = change(before);
  fire(before, frame.state);
}

/** Runs the hooks of every key that differs; `onError` set: a throwing hook does not stop the rest. */
function fire(before: FlagState, after: FlagState, onError?: (e: unknown) => void): void {
  // A priority-only change shares the values object: no flag changed.
  if (hooks.size === 0 || before.values === after.values) return;
  for (const [key, set] of hooks) {
    const a = before.values[key];
    const b = after.values[key];
    if (a === b) continue;
    for (const h of set) {
      try {
        h(b === undefined ? specs.get(key)?.default : b, key);
      } catch (e) {
        if (!onError) throw e;
        onError(e);
      }
    }
  }
}

/** Calls `hook` whenever the flag's value changes in the current task. Returns an unsubscribe. */
export function onFlagChange(key: string, hook: (value: unknown, key: string) => void): () => void {
  specOrThrow(key);
  if (typeof hook !== "function")
    throw new FlagError(`onFlagChange(${key}): the hook must be a function`);
  let set = hooks.get(key);
  if (!set) hooks.set(key, (set = new Set()));
  set.add(hook);
  return () => set.delete(hook);
}

/** What a scope changes: flag values by full key, and kernel priorities by op (null: none). */
export interface ScopeChanges {
  values?: Readonly<Record<string, unknown>>;
  priorities?: Readonly<Record<string, readonly string[] | null>>;
}

function applyChanges(s: FlagState, c: ScopeChanges): FlagState {
  let next = c.values ? s.with(c.values) : s;
  for (const [op, names] of Object.entries(c.priorities ?? {})) next = next.withPriority(op, names);
  return next;
}

/**
 * A scope restores, when disposed, the keys it changed to the values they had when it
 * opened, and leaves every other key alone (a flag set inside it on another key stays).
 * Scopes may close in any order: a scope closed while a newer one is still open hands
 * its saved values to the newest open scope that changed the same key, so that one puts
 * them back when it closes. `using` calls dispose; so do `finally` blocks.
 */
export class FlagScope implements Disposable, ScopeLike {
  private active = true;
  /** Fast path: while the frame still holds `produced`, restoring is putting `entry` back. */
  private entry: FlagState | undefined;
  readonly savedValues: Map<string, unknown>;
  readonly savedPriorities: Map<string, readonly string[] | undefined>;
  /** `changedKeys`: every flag the opening changed, hooks' mirrors included. */
  constructor(
    private readonly frame: Frame,
    entry: FlagState,
    private readonly produced: FlagState,
    changes: ScopeChanges,
    changedKeys: Iterable<string>,
  ) {
    this.entry = entry;
    this.savedValues = new Map([...changedKeys].map((k) => [k, entry.values[k]]));
    this.savedPriorities = new Map(
      Object.keys(changes.priorities ?? {}).map((op) => [op, entry.priorities[op]]),
    );
  }
  invalidateSnapshot(): void {
    this.entry = undefined;
  }
  /** Puts back the keys this scope changed. A second call does nothing. */
  restore(): void {
    if (!this.active) return;
    this.active = false;
    const stack = this.frame.scopes ?? [];
    const at = stack.indexOf(this);
    const newer = at < 0 ? [] : stack.slice(at + 1);
    if (at >= 0) stack.splice(at, 1);
    const now = this.frame.state;
    if (newer.length === 0 && this.entry !== undefined && now === this.produced) {
      this.frame.state = this.entry; // nothing happened inside: the cached snapshot comes back
      const errors = fireAll(now, this.entry);
      if (errors.length > 0) throw errors[0];
      return;
    }
    const values: Record<string, unknown> = {};
    for (const [k, v] of this.savedValues) {
      const heir = newer.find((s) => s.savedValues.has(k));
      if (heir) {
        heir.savedValues.set(k, v);
        heir.invalidateSnapshot();
      } else values[k] = v;
    }
    const priorities: Record<string, readonly string[] | null> = Object.create(null);
    for (const [op, names] of this.savedPriorities) {
      const heir = newer.find((s) => s.savedPriorities.has(op));
      if (heir) {
        heir.savedPriorities.set(op, names);
        heir.invalidateSnapshot();
      } else priorities[op] = names ?? null;
    }
    for (const s of newer) s.invalidateSnapshot();
    const next = applyChanges(now, { values, priorities });
    this.frame.state = next;
    const errors = fireAll(now, next);
    if (errors.length > 0) throw errors[0];
  }
  [Symbol.dispose](): void {
    this.restore();
  }
}

/**
 * Runs the hooks of a restore: a restore cannot be refused, so a hook that throws does not
 * stop the others (a mirror left half set); the errors are returned for the caller to raise.
 */
function fireAll(before: FlagState, after: FlagState): unknown[] {
  const errors: unknown[] = [];
  fire(before, after, (e) => errors.push(e));
  return errors;
}

/** Opens a synchronous scope with the changes applied (full keys), validated first. */
export function openScope(changes: Record<string, unknown>): FlagScope {
  checkChanges(changes);
  for (const key of Object.keys(changes)) warnIfInert(key);
  return openChangeScope({ values: changes });
}

/** Opens a synchronous scope over flag values and kernel priorities (already validated). */
export function openChangeScope(changes: ScopeChanges): FlagScope {
  const frame = currentFrame();
  const entry = frame.state;
  const applied = applyChanges(entry, changes);
  frame.state = applied;
  // A hook refused the change: no scope exists to undo it, so every flag goes back now.
  fireOrUndo(frame, entry);
  const produced = frame.state;
  const changed = new Set(Object.keys(changes.values ?? {}));
  // Hooks may have set other flags (allowTf32 mirrors the float32 precision): the scope
  // puts those back too, else closing it restores one half of a mirrored pair.
  if (produced.values !== applied.values)
    for (const k in produced.values) if (produced.values[k] !== entry.values[k]) changed.add(k);
  // Both halves of a mirrored pair, changed or not: closing scopes out of order then hands
  // on (or restores) the pair together, never one half under another scope's other half.
  for (const pair of MIRRORED_FLAGS)
    if (pair.some((k) => changed.has(k))) for (const k of pair) changed.add(k);
  const scope = new FlagScope(frame, entry, produced, changes, changed);
  (frame.scopes ??= []).push(scope);
  return scope;
}

/** The same changes as a function of the state, for withFlags-style frames. */
export function changeOf(changes: ScopeChanges): (s: FlagState) => FlagState {
  return (s) => applyChanges(s, changes);
}

/**
 * Runs fn with the changes in a frame of its own, which follows it across awaits. Change
 * hooks run inside that frame (a hook that mirrors one flag onto another, like the
 * float32 precision onto cuda.matmul.allowTf32, sets the mirror for this task only);
 * when fn is done they run again in the caller's frame, from what the task ended with
 * back to the caller's values, so settings hooks push into native libraries are undone.
 */
export function runWithState<R>(
  change: (s: FlagState) => FlagState,
  fn: () => R,
  calls?: KernelCall[],
): R {
  const outer = currentFrame().state;
  const next = change(outer);
  let inner: Frame | undefined;
  const leave = () => {
    if (inner) fire(inner.state, currentFrame().state);
  };
  let result: R;
  try {
    result = runInFrame(
      next,
      () => {
        inner = currentFrame();
        fire(outer, next);
        return fn();
      },
      calls,
    );
  } catch (e) {
    leave();
    throw e;
  }
  if (result instanceof Promise) return result.finally(leave) as R;
  leave();
  return result;
}

/** Flattens `{ cudnn: { benchmark: true }, cuda: { matmul: { allowTf32: true } } }` to full keys. */
export function flatten(nested: Record<string, unknown>, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (nested === null || typeof nested !== "object" || Array.isArray(nested)) {
    throw new FlagError(
      prefix
        ? `${prefix} must be an object of its flags, got ${show(nested)}`
        : `flags must be given as an object like { cudnn: { benchmark: true } }, got ${show(nested)}`,
    );
  }
  for (const [k, v] of Object.entries(nested)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (specs.has(key)) {
      out[key] = v;
      continue;
    }
    const isGroup = [...specs.keys()].some((f) => f.startsWith(`${key}.`));
    if (!isGroup) {
      if (!prefix) {
        const guess = didYouMean(k, flagNamespaces());
        throw new UnknownFlagError(
          k,
          "",
          `no namespace ${show(k)} has flags${guess ? `; did you mean ${guess}?` : ""} (known: ${flagNamespaces().join(", ")})`,
          guess,
        );
      }
      specOrThrow(key); // throws the did-you-mean error
    }
    Object.assign(out, flatten(v as Record<string, unknown>, key));
  }
  return out;
}

// The flags of every namespace of the API exist from the start, whichever module a
// program imports first (they are data: builtin.ts depends only on spec.ts and errors.ts).
for (const [ns, schema] of Object.entries(BUILTIN_FLAGS)) defineFlags(ns, schema as FlagSchema);
