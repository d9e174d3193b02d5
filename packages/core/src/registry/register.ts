/**
 * registerBackend(): what a backend package calls when it is imported. Checks the
 * definition, adds its kernels to the table, its flags and members to the namespaces,
 * its device memories, and records it in the registry.
 */

import { RegistrationError } from "../errors.ts";
import { type FlagSpec, leaves, validate } from "../flags/spec.ts";
import {
  addFlagReader,
  allFlagKeys,
  registerFlagChoice,
  setFlagChoiceFilter,
} from "../flags/state.ts";
import { registerDeviceMemory } from "../tensor/memory.ts";
import { show } from "../util/format.ts";
import { didYouMean } from "../util/suggest.ts";
import {
  addToRegistry,
  availabilityOf,
  type BackendDefinition,
  bumpGeneration,
  getBackend,
  namespaceOwnerOf,
  type RegisteredBackend,
} from "./backends.ts";
import { addKernels } from "./kernels.ts";

// A value a backend adds to a flag (a quantized engine) is offered while that backend
// can serve: available, and not failed to initialise (its library missing).
setFlagChoiceFilter((name) => {
  const b = getBackend(name);
  return b !== undefined && b.initState !== "failed" && availabilityOf(b).available;
});

/** Identity helper that gives a backend definition its type. */
export function defineBackend(def: BackendDefinition): BackendDefinition {
  return def;
}

/**
 * Registers a backend. Registering the same name twice is allowed only for the same
 * version (a package loaded twice): the first registration stays. A different version,
 * or a namespace another backend already answers for, is a RegistrationError.
 */
export function registerBackend(def: BackendDefinition): RegisteredBackend {
  if (!def || typeof def.name !== "string" || !/^[a-z0-9][a-z0-9._-]*$/.test(def.name)) {
    throw new RegistrationError(
      `backend name must be lower-case letters, digits, '.', '_' or '-', got ${show(def?.name)}`,
    );
  }
  if (typeof def.isAvailable !== "function") {
    throw new RegistrationError(`backend ${def.name}: isAvailable() is required`);
  }
  const prior = getBackend(def.name);
  if (prior) {
    if (prior.def === def) return prior;
    const a = prior.def.version?.();
    const b = def.version?.();
    if (a === b) return prior;
    throw new RegistrationError(
      `backend ${def.name} is already registered (version ${a ?? "?"}); a second copy (version ${b ?? "?"}) was imported. ` +
        "Deduplicate the package (npm dedupe) so one version is loaded.",
    );
  }
  for (const ns of def.namespaces ?? []) {
    const owner = namespaceOwnerOf(ns);
    if (owner && owner !== def.name) {
      throw new RegistrationError(
        `backend ${def.name} claims backends.${ns}, which ${owner} already answers for`,
      );
    }
  }
  const entry: RegisteredBackend = { def, initState: def.init ? "pending" : "ready" };
  // Flags and kernels are checked before anything is recorded, so a failed registration
  // leaves no trace.
  checkFlagSchemas(def);
  checkKernelFlags(def);
  addKernels(def.name, def.devices, def.kernels ?? []);
  addToRegistry(entry);
  const reader = def.packageName ?? def.name;
  for (const key of def.reads ?? []) addFlagReader(key, reader);
  for (const [key, values] of Object.entries(def.provides ?? {}))
    for (const v of values) registerFlagChoice(key, v, def.name);
  announce(def);
  for (const m of def.memories ?? []) registerDeviceMemory(m);
  bumpGeneration();
  return entry;
}

/**
 * The layer above (namespaces) builds `backends.<ns>` objects for what a backend declares:
 * it listens here rather than being called, so the registry knows nothing above it.
 */
export type RegistrationListener = (def: BackendDefinition) => void;
const listeners: RegistrationListener[] = [];
const announced: BackendDefinition[] = [];

/** Calls `fn` for every backend registered so far, then for each one registered later. */
export function onRegistration(fn: RegistrationListener): void {
  listeners.push(fn);
  for (const def of announced) fn(def);
}

function announce(def: BackendDefinition): void {
  announced.push(def);
  for (const fn of listeners) fn(def);
}

const FLAG_KINDS = ["bool", "int", "enum", "string"];

/**
 * Every node of the backend's flag schemas is a spec ({ kind, default, ... }) of a kind
 * that exists, whose default it accepts, or a group of such: a misspelt kind ("boool")
 * would otherwise make a flag no value can be written to.
 */
function checkFlagSchemas(def: BackendDefinition): void {
  const fail = (text: string) => new RegistrationError(`backend ${def.name}: ${text}`);
  const walk = (node: unknown, path: string): void => {
    if (node === null || typeof node !== "object" || Array.isArray(node))
      throw fail(
        `flag ${path} must be a spec ({ kind, default }) or a group of specs, got ${show(node)}`,
      );
    const o = node as Record<string, unknown>;
    if (!("kind" in o) && !("default" in o)) {
      for (const [k, v] of Object.entries(o)) walk(v, `${path}.${k}`);
      return;
    }
    if (typeof o.kind !== "string" || !FLAG_KINDS.includes(o.kind)) {
      const guess = didYouMean(String(o.kind), FLAG_KINDS);
      throw fail(
        `flag ${path} has kind ${show(o.kind)}; a flag is ${FLAG_KINDS.join(", ")}${guess ? ` (did you mean ${guess}?)` : ""}`,
      );
    }
    if (!("default" in o)) throw fail(`flag ${path} (${o.kind}) has no default`);
    const values = o.values;
    if (
      o.kind === "enum" &&
      !(Array.isArray(values) && values.length > 0 && values.every((v) => typeof v === "string"))
    )
      throw fail(`flag ${path} is an enum without its values (a non-empty list of strings)`);
    try {
      validate(path, o as unknown as FlagSpec, o.default);
    } catch (e) {
      throw fail(`the default of ${(e as Error).message}`);
    }
  };
  for (const [ns, schema] of Object.entries(def.flags ?? {})) walk(schema, ns);
}

/**
 * Every flag a kernel names exists: the core's, another backend's, or this backend's own.
 * A misspelt key ("fl3.enabld") would otherwise leave the kernel disabled for good.
 */
function checkKernelFlags(def: BackendDefinition): void {
  const own = Object.entries(def.flags ?? {}).flatMap(([ns, schema]) =>
    [...leaves(schema)].map(([key]) => `${ns}.${key}`),
  );
  const known = new Set([...allFlagKeys(), ...own]);
  for (const k of def.kernels ?? []) {
    for (const key of ((k as { flags?: unknown }).flags as string[] | undefined) ?? []) {
      if (known.has(key)) continue;
      const guess = didYouMean(key, known);
      throw new RegistrationError(
        `backend ${def.name}, kernel ${show(k?.name)}: flag ${show(key)} is not defined${guess ? `; did you mean ${guess}?` : ""} (a backend's own flags go in its flags schema)`,
      );
    }
  }
}
