/**
 * `backends.<name>`: one object per namespace, holding its flags as properties, a
 * `flags({...})` scope, and isBuilt()/isAvailable()/status() that answer from the
 * backend registered for it, or with the reason it is missing.
 */

import { type Availability, availabilityOf, backendForNamespace } from "./backend.ts";
import { FlagError } from "./errors.ts";
import { BUILTIN_FLAGS, NAMESPACE_PACKAGES } from "./flags/builtin.ts";
import { type DeepPartial, type FlagSchema, type FlagValues, isSpec } from "./flags/spec.ts";
import {
  defineFlags,
  type FlagScope,
  flagSchema,
  getFlag,
  openScope,
  setFlag,
} from "./flags/state.ts";
import { show } from "./format.ts";

export interface NamespaceStatus {
  namespace: string;
  built: boolean;
  available: boolean;
  /** Why not, when built or available is false. */
  reason?: string;
  /** The backend that answers for this namespace, if one is registered. */
  backend?: string;
  packageName?: string;
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
  version(): string | undefined;
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

export function statusOf(ns: string): NamespaceStatus {
  const b = backendForNamespace(ns);
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
  let built: Availability = { available: true };
  try {
    built = b.def.isBuilt?.() ?? built;
  } catch (e) {
    built = { available: false, reason: `isBuilt() threw: ${(e as Error).message}` };
  }
  const avail = built.available ? availabilityOf(b) : { available: false, reason: built.reason };
  let version: string | undefined;
  try {
    version = b.def.version?.();
  } catch {
    version = undefined;
  }
  return {
    namespace: ns,
    built: built.available,
    available: avail.available,
    reason: avail.available ? undefined : (avail.reason ?? "no reason given"),
    backend: b.def.name,
    packageName: b.def.packageName,
    version,
  };
}

/** Defines getters and setters for a schema's flags on `target` (groups become sub-objects). */
function defineFlagProperties(target: object, ns: string, schema: FlagSchema, prefix = ""): void {
  for (const [k, v] of Object.entries(schema)) {
    const key = `${ns}.${prefix}${k}`;
    if (isSpec(v)) {
      if (Object.getOwnPropertyDescriptor(target, k)) continue;
      Object.defineProperty(target, k, {
        get: () => getFlag(key),
        set: (value: unknown) => setFlag(key, value),
        enumerable: true,
        configurable: true,
      });
    } else {
      let group = Object.getOwnPropertyDescriptor(target, k)?.value as object | undefined;
      if (!group) {
        group = {};
        Object.defineProperty(target, k, { value: group, enumerable: true, configurable: true });
      }
      defineFlagProperties(group, ns, v, `${prefix}${k}.`);
    }
  }
}

function readValues(ns: string, schema: FlagSchema, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] = isSpec(v) ? getFlag(`${ns}.${prefix}${k}`) : readValues(ns, v, `${prefix}${k}.`);
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
    const spec = node[k];
    if (!spec) {
      throw new FlagError(
        `backends.${ns} has no flag ${prefix}${k}; its flags: ${Object.keys(node).join(", ") || "(none)"}`,
      );
    }
    if (isSpec(spec)) out[`${ns}.${prefix}${k}`] = v;
    else Object.assign(out, changesFor(ns, v as Record<string, unknown>, `${prefix}${k}.`));
  }
  return out;
}

const objects = new Map<string, NamespaceBase>();

/** The namespace object for `ns`, created on first use; flags of `schema` are added to it. */
export function namespaceObject(ns: string, schema: FlagSchema = {}): NamespaceBase {
  if (Object.keys(schema).length > 0) defineFlags(ns, schema);
  let obj = objects.get(ns);
  if (!obj) {
    const base: NamespaceBase = {
      name: ns,
      isBuilt: () => statusOf(ns).built,
      isAvailable: () => statusOf(ns).available,
      status: () => statusOf(ns),
      version: () => statusOf(ns).version,
      capability: () => {
        const b = backendForNamespace(ns);
        return b && availabilityOf(b).available ? b.def.capability?.() : undefined;
      },
      flags: (changes) => openScope(changesFor(ns, changes as Record<string, unknown>)),
      values: () => readValues(ns, flagSchema(ns) ?? {}),
    };
    obj = base;
    objects.set(ns, obj);
  }
  defineFlagProperties(obj, ns, flagSchema(ns) ?? {});
  return obj;
}

export function namespaceNames(): string[] {
  return [...objects.keys()];
}

/** Adds methods to a namespace object (a backend's API: getOptEinsum, runCpu, cufftPlanCache...). */
export function extendNamespace(ns: string, members: Record<string, unknown>): void {
  const obj = namespaceObject(ns);
  for (const [k, v] of Object.entries(members)) {
    Object.defineProperty(obj, k, {
      value: v,
      enumerable: true,
      configurable: true,
      writable: true,
    });
  }
}

export type BuiltinFlagValues = {
  [K in keyof typeof BUILTIN_FLAGS]: FlagValues<(typeof BUILTIN_FLAGS)[K]>;
};
for (const [ns, schema] of Object.entries(BUILTIN_FLAGS)) namespaceObject(ns, schema as FlagSchema);
for (const ns of Object.keys(NAMESPACE_PACKAGES)) namespaceObject(ns);
