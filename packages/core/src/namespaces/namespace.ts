/**
 * `backends.<name>`: one object per namespace, holding its flags as properties, a
 * `flags({...})` scope, and isBuilt()/isAvailable()/status() that answer from the
 * backend registered for it, or with the reason it is missing.
 */

import { FlagError, UnknownFlagError } from "../errors.ts";
import { BUILTIN_FLAGS, NAMESPACE_PACKAGES } from "../flags/builtin.ts";
import { type DeepPartial, type FlagSchema, type FlagValues, isSpec } from "../flags/spec.ts";
import {
  defineFlags,
  type FlagScope,
  flagSchema,
  getFlag,
  namespaceProviders,
  openScope,
  setFlag,
} from "../flags/state.ts";
import {
  type Availability,
  availabilityAnswer,
  availabilityOf,
  type BackendDefinition,
  backendForNamespace,
  getBackend,
  thrownText,
} from "../registry/backends.ts";
import { onRegistration } from "../registry/register.ts";
import { show } from "../util/format.ts";
import { splitReason } from "../util/reason.ts";
import { didYouMean } from "../util/suggest.ts";

export interface NamespaceStatus {
  namespace: string;
  built: boolean;
  available: boolean;
  /** Why not, when built or available is false: one sentence with the fix, <= 300 characters. */
  reason?: string;
  /** Everything behind the reason (paths tried, loader errors), when there is more. */
  detail?: string;
  /** The backend that answers for this namespace, if one is registered. */
  backend?: string;
  packageName?: string;
  /** The version as text ("9.24.0"), when the backend reports one. */
  version?: string;
}

/** Members every namespace object has. */
export interface NamespaceBase<V = Record<string, unknown>> {
  readonly name: string;
  /** torch's is_built(): the package is installed and has what it was built with. */
  isBuilt(): boolean;
  /** torch's is_available(): it can run here. status().reason says why not. */
  isAvailable(): boolean;
  /** built, available, and the reason when not. */
  status(): NamespaceStatus;
  /**
   * torch's version(): an integer like torch's (cuDNN 9.24.0 is 92400: major * 10000 +
   * minor * 100 + patch), undefined when the backend is absent or cannot tell (its
   * version() throws). versionString() has the text.
   */
  version(): number | undefined;
  /** The version as the library or package states it ("9.24.0"). */
  versionString(): string | undefined;
  capability(): unknown;
  /** A sync scope: `using _ = backends.cudnn.flags({ benchmark: true })`. */
  flags(changes: DeepPartial<V>): FlagScope;
  /** Current flag values as a plain object. */
  values(): V;
}

export type Namespace<S extends FlagSchema = FlagSchema> = NamespaceBase<FlagValues<S>> &
  FlagValues<S>;

function notInstalled(ns: string): string {
  const pkg = NAMESPACE_PACKAGES[ns];
  if (pkg === null) return `no Backplane backend provides ${ns}`;
  return `${pkg ?? `a backend for ${ns}`} is not installed (npm i ${pkg ?? "<package>"}, then import it)`;
}

/**
 * A namespace no backend owns but whose flag values backends provide (quantized: the
 * engines of backend-nnpack and backend-cpu-mkl) is built when one is registered and
 * available when one can run here.
 */
function providedStatus(ns: string): NamespaceStatus | undefined {
  const by = namespaceProviders(ns).flatMap((name) => getBackend(name) ?? []);
  if (by.length === 0) return undefined;
  const states = by.map((b) => ({ b, a: availabilityOf(b) }));
  const usable = states.filter((x) => x.a.available && x.b.initState !== "failed");
  return {
    namespace: ns,
    built: true,
    available: usable.length > 0,
    reason:
      usable.length > 0
        ? undefined
        : `no provider can run here: ${states.map((x) => `${x.b.def.name}: ${x.a.reason ?? x.b.initError ?? "failed"}`).join("; ")}`,
    backend: (usable.length > 0 ? usable : states).map((x) => x.b.def.name).join(", "),
  };
}

/**
 * What a backend's own query (version(), capability()) answers; one that throws answers
 * undefined, as a backend that cannot tell: asking a namespace about itself never fails.
 */
function answerOf<T>(query: () => T): T | undefined {
  try {
    return query();
  } catch {
    return undefined;
  }
}

/** A backend's isBuilt(): true when it has none; one that throws or answers no object is a reason. */
function builtOf(def: BackendDefinition): Availability {
  try {
    return availabilityAnswer("isBuilt", def.isBuilt?.() ?? { available: true });
  } catch (e) {
    return { available: false, reason: `isBuilt() threw: ${thrownText(e)}` };
  }
}

export function statusOf(ns: string): NamespaceStatus {
  const b = backendForNamespace(ns);
  const provided = b ? undefined : providedStatus(ns);
  if (provided) return provided;
  if (!b) {
    const reason = notInstalled(ns);
    return {
      namespace: ns,
      built: false,
      available: false,
      reason,
      packageName: NAMESPACE_PACKAGES[ns] ?? undefined,
    };
  }
  const built = builtOf(b.def);
  let avail: Availability = built.available
    ? availabilityOf(b)
    : { available: false, reason: built.reason, detail: built.detail };
  // It can run here, but its initialisation failed: then it cannot run after all.
  if (avail.available && b.initState === "failed")
    avail = { available: false, reason: b.initError, detail: b.initDetail };
  const why = avail.available ? undefined : splitReason(avail.reason ?? "no reason given");
  // Text or nothing: a version() that answers a number is a backend's bug, not a version.
  const stated = answerOf(() => b.def.version?.());
  const version = typeof stated === "string" && stated !== "" ? stated : undefined;
  return {
    namespace: ns,
    built: built.available,
    available: avail.available,
    reason: why?.reason,
    detail: avail.detail ?? why?.detail,
    backend: b.def.name,
    packageName: b.def.packageName,
    version,
  };
}

/** Namespaces whose own status() is running: a member it calls answers from statusOf. */
const asking = new Set<string>();

/**
 * What `backends.<ns>.status()` answers: a backend may replace that member (backend-cpu-mkl:
 * mkl is available only when the library loaded is MKL), and isBuilt(), isAvailable() and
 * backends.status() must agree with it. One that throws, recurses or answers no status
 * falls back to the registry's answer.
 */
export function namespaceStatus(ns: string): NamespaceStatus {
  const status = objects.get(ns)?.raw.status;
  if (status === undefined || asking.has(ns)) return statusOf(ns);
  asking.add(ns);
  try {
    const s: unknown = status();
    const ok =
      s !== null &&
      typeof s === "object" &&
      typeof (s as NamespaceStatus).built === "boolean" &&
      typeof (s as NamespaceStatus).available === "boolean";
    return ok ? (s as NamespaceStatus) : statusOf(ns);
  } catch {
    return statusOf(ns);
  } finally {
    asking.delete(ns);
  }
}

/** Per-flag adjustments of what a read returns (optEinsum.enabled is false without the plugin). */
const readFilters = new Map<string, (value: unknown) => unknown>();

/** Makes reads of `key` through `backends.<ns>` pass through `filter` (values() too). */
export function setFlagReadFilter(key: string, filter: (value: unknown) => unknown): void {
  readFilters.set(key, filter);
}

/** A flag's value as `backends.<ns>` shows it (after its read filter, if any). */
export function readFlag(key: string): unknown {
  const f = readFilters.get(key);
  return f ? f(getFlag(key)) : getFlag(key);
}

/** Defines getters and setters for a schema's flags on `target` (groups become sub-objects). */
function defineFlagProperties(target: object, ns: string, schema: FlagSchema, prefix = ""): void {
  for (const [k, v] of Object.entries(schema)) {
    const key = `${ns}.${prefix}${k}`;
    if (isSpec(v)) {
      if (Object.getOwnPropertyDescriptor(target, k)) continue;
      Object.defineProperty(target, k, {
        get: () => readFlag(key),
        set: (value: unknown) => setFlag(key, value),
        enumerable: true,
        configurable: true,
      });
    } else {
      let group = groupTargets.get(target)?.get(k);
      if (!group) {
        group = {};
        const proxy = sealed(group, `${ns}.${prefix}${k}`);
        let groups = groupTargets.get(target);
        if (!groups) groupTargets.set(target, (groups = new Map()));
        groups.set(k, group);
        Object.defineProperty(target, k, { value: proxy, enumerable: true, configurable: true });
      }
      defineFlagProperties(group, ns, v, `${prefix}${k}.`);
    }
  }
}

/** The raw objects behind sub-namespace proxies (cuda.matmul), by parent and name. */
const groupTargets = new WeakMap<object, Map<string, object>>();

// Names a runtime or a tool may probe on any object; answering undefined keeps them working.
export const PROBES: ReadonlySet<string> = new Set([
  "then",
  "toJSON",
  "constructor",
  "inspect",
  "nodeType",
  "$$typeof",
  "asymmetricMatch",
  "@@__IMMUTABLE_ITERABLE__@@",
  "@@toStringTag",
  "_isMockFunction",
  "toString",
  "valueOf",
]);

function unknownMember(path: string, target: object, prop: string, writing: boolean): never {
  const known = Object.keys(target);
  const guess = didYouMean(prop, known);
  const ns = path.split(".")[0];
  throw new UnknownFlagError(
    ns,
    path.includes(".") ? `${path.slice(ns.length + 1)}.${prop}` : prop,
    `backends.${path}.${prop}: no such ${writing ? "flag" : "flag or function"}${guess ? `; did you mean ${guess}?` : ""} (backends.${path} has: ${known.join(", ") || "nothing"})`,
    guess,
  );
}

/**
 * A namespace as users see it: flags read and write through their getters and setters;
 * reading or writing a name it does not have, or assigning over a function, a constant
 * or a sub-namespace, is a typed error. The raw object stays writable for the core.
 */
function sealed<T extends object>(target: T, path: string): T {
  return new Proxy(target, {
    get(t, prop) {
      if (typeof prop === "symbol") return Reflect.get(t, prop);
      // Own members, and Object.prototype's methods that tools call (not __proto__).
      if (prop in t && prop !== "__proto__") return Reflect.get(t, prop);
      if (PROBES.has(prop)) return undefined;
      return unknownMember(path, t, prop, false);
    },
    set(t, prop, value) {
      if (typeof prop === "symbol") return false;
      const d = Object.getOwnPropertyDescriptor(t, prop);
      if (d?.set) {
        d.set.call(t, value);
        return true;
      }
      if (d) {
        const what =
          typeof d.value === "function"
            ? `a function; call it (backends.${path}.${prop}(...))`
            : d.value !== null && typeof d.value === "object"
              ? "a group of flags; set its members"
              : "a constant";
        throw new FlagError(`backends.${path}.${prop} cannot be assigned: it is ${what}`);
      }
      return unknownMember(path, t, prop, true);
    },
    defineProperty(_, prop) {
      throw new FlagError(
        `backends.${path}.${String(prop)} cannot be defined; a backend adds members through registerBackend({ api })`,
      );
    },
    deleteProperty(_, prop) {
      throw new FlagError(`backends.${path}.${String(prop)} cannot be deleted`);
    },
    setPrototypeOf() {
      throw new FlagError(`backends.${path}: its prototype cannot be changed`);
    },
  });
}

function readValues(ns: string, schema: FlagSchema, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] = isSpec(v) ? readFlag(`${ns}.${prefix}${k}`) : readValues(ns, v, `${prefix}${k}.`);
  }
  return out;
}

/** Turns `{ matmul: { allowTf32: true } }` into `{ "cuda.matmul.allowTf32": true }`, checking names. */
export function changesFor(
  ns: string,
  changes: Record<string, unknown>,
  prefix = "",
): Record<string, unknown> {
  if (changes === null || typeof changes !== "object" || Array.isArray(changes)) {
    throw new FlagError(
      `backends.${ns}.flags() takes an object of flag values, got ${show(changes)}`,
    );
  }
  const schema = flagSchema(ns) ?? {};
  let node: FlagSchema = schema;
  for (const part of prefix.split(".").filter(Boolean)) node = node[part] as FlagSchema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(changes)) {
    // Own names only: "constructor" or "toString" would find Object.prototype's members.
    const spec = Object.hasOwn(node, k) ? node[k] : undefined;
    if (!spec) {
      const guess = didYouMean(k, Object.keys(node));
      throw new UnknownFlagError(
        ns,
        `${prefix}${k}`,
        `backends.${ns} has no flag ${prefix}${k}${guess ? `; did you mean ${prefix}${guess}?` : ""} (its flags: ${Object.keys(node).join(", ") || "none"})`,
        guess,
      );
    }
    if (isSpec(spec)) out[`${ns}.${prefix}${k}`] = v;
    else Object.assign(out, changesFor(ns, v as Record<string, unknown>, `${prefix}${k}.`));
  }
  return out;
}

/** Namespace objects: the raw target the core writes to, and the sealed proxy users get. */
const objects = new Map<string, { raw: NamespaceBase; user: NamespaceBase }>();

/** torch-style integer of a version text: "9.24.0" -> 92400, "13.0" -> 130000. */
export function versionNumber(text: string | undefined): number | undefined {
  const m = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(text ?? "");
  if (!m) return undefined;
  return Number(m[1]) * 10000 + Number(m[2] ?? 0) * 100 + Number(m[3] ?? 0);
}

/** The namespace object for `ns`, created on first use; flags of `schema` are added to it. */
export function namespaceObject(
  ns: string,
  schema: FlagSchema = {},
  reader?: string,
): NamespaceBase {
  if (Object.keys(schema).length > 0) defineFlags(ns, schema, reader);
  let entry = objects.get(ns);
  if (!entry) {
    const raw: NamespaceBase = {
      name: ns,
      isBuilt: () => namespaceStatus(ns).built,
      isAvailable: () => namespaceStatus(ns).available,
      status: () => statusOf(ns),
      version: () => {
        const b = backendForNamespace(ns);
        const n = answerOf(() => b?.def.versionNumber?.());
        return typeof n === "number" ? n : versionNumber(namespaceStatus(ns).version);
      },
      versionString: () => namespaceStatus(ns).version,
      capability: () => {
        const b = backendForNamespace(ns);
        return b && availabilityOf(b).available ? answerOf(() => b.def.capability?.()) : undefined;
      },
      flags: (changes) => openScope(changesFor(ns, changes as Record<string, unknown>)),
      values: () => readValues(ns, flagSchema(ns) ?? {}),
    };
    entry = { raw, user: sealed(raw, ns) };
    objects.set(ns, entry);
  }
  defineFlagProperties(entry.raw, ns, flagSchema(ns) ?? {});
  return entry.user;
}

/** Whether `ns` is a namespace (a map lookup: `backends.x` asks it on every access). */
export function hasNamespace(ns: string): boolean {
  return objects.has(ns);
}

export function namespaceNames(): string[] {
  return [...objects.keys()];
}

/** Adds methods to a namespace object (a backend's API: getOptEinsum, runCpu, cufftPlanCache...). */
export function extendNamespace(ns: string, members: Record<string, unknown>): void {
  namespaceObject(ns);
  const raw = (objects.get(ns) as { raw: NamespaceBase }).raw;
  for (const [k, v] of Object.entries(members)) {
    // A function may take a flag's place (mkl.verbose(level), cuda.preferredBlasLibrary(b)):
    // torch has functions there, and the flag stays reachable through flags() and getFlag().
    Object.defineProperty(raw, k, {
      value: v,
      enumerable: true,
      configurable: true,
      writable: false,
    });
  }
}

/** Adds read-only computed members (quantized.supportedEngines). */
export function extendNamespaceGetters(ns: string, getters: Record<string, () => unknown>): void {
  namespaceObject(ns);
  const raw = (objects.get(ns) as { raw: NamespaceBase }).raw;
  for (const [k, get] of Object.entries(getters)) {
    Object.defineProperty(raw, k, { get, enumerable: true, configurable: true });
  }
}

export type BuiltinFlagValues = {
  [K in keyof typeof BUILTIN_FLAGS]: FlagValues<(typeof BUILTIN_FLAGS)[K]>;
};
for (const [ns, schema] of Object.entries(BUILTIN_FLAGS)) namespaceObject(ns, schema as FlagSchema);

// Each backend's namespaces, flags and API members, as it registers (and those before).
onRegistration((def) => {
  for (const ns of def.namespaces ?? []) namespaceObject(ns);
  const reader = def.packageName ?? def.name;
  for (const [ns, schema] of Object.entries(def.flags ?? {})) namespaceObject(ns, schema, reader);
  for (const [ns, members] of Object.entries(def.api ?? {})) extendNamespace(ns, members);
});
for (const ns of Object.keys(NAMESPACE_PACKAGES)) namespaceObject(ns);
