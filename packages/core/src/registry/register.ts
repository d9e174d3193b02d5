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
  flagSpec,
  registerFlagChoice,
  setFlagChoiceFilter,
} from "../flags/state.ts";
import { deviceMemory, registerDeviceMemory } from "../tensor/memory.ts";
import { show } from "../util/format.ts";
import { didYouMean } from "../util/suggest.ts";
import {
  addToRegistry,
  availabilityOf,
  type BackendDefinition,
  bumpGeneration,
  getBackend,
  listBackends,
  namespaceOwnerOf,
  type RegisteredBackend,
} from "./backends.ts";
import { type AnyKernelDefinition, addBackendKernels } from "./kernels.ts";

// A value a backend adds to a flag (a quantized engine) is offered while that backend
// can serve: available, and not failed to initialise (its library missing).
setFlagChoiceFilter((name) => {
  const b = getBackend(name);
  return b !== undefined && b.initState !== "failed" && availabilityOf(b).available;
});

/** Whether a name is taken by the layer above (a member of `backends` itself: has, flags...). */
let reservedName: (ns: string) => boolean = () => false;

/** Installs the test of which names a backend may not give a namespace (torch/backends.ts). */
export function setReservedNamespaceTest(reserved: (ns: string) => boolean): void {
  reservedName = reserved;
}

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
    const a = versionOf(prior.def);
    const b = versionOf(def);
    const other = otherBackend(prior.def, def, a === b);
    if (other !== undefined)
      throw new RegistrationError(
        `backend ${def.name} is already registered ${other}; backend names are unique, so rename one of them (nothing of the second was registered)`,
      );
    if (a === b) return prior;
    throw new RegistrationError(
      `backend ${def.name} is already registered (version ${a ?? "?"}); a second copy (version ${b ?? "?"}) was imported. ` +
        "Deduplicate the package (npm dedupe) so one version is loaded.",
    );
  }
  const entry: RegisteredBackend = { def, initState: def.init ? "pending" : "ready" };
  // Everything is checked before anything is recorded, so a failed registration leaves no
  // trace (and the fixed definition registers afterwards). addBackendKernels checks its whole
  // list before adding any, so it comes first of what records.
  checkFields(def);
  checkApiMembers(def);
  checkNamespaces(def);
  checkFlagSchemas(def);
  checkKernelFlags(def);
  checkProvides(def);
  checkMemories(def);
  addBackendKernels(def.name, def.devices, def.kernels ?? []);
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

/** A definition's kernels as sorted "op/name" text (what a second copy of a package repeats). */
function kernelSignature(def: BackendDefinition): string {
  const list: unknown[] = Array.isArray(def.kernels) ? def.kernels : [];
  const names = list.map((k) => {
    const o = k as { op?: unknown; name?: unknown } | null;
    return `${String(o?.op)}/${String(o?.name)}`;
  });
  return names.sort().join(",");
}

/**
 * Why a second definition under a registered name is another backend rather than a second
 * copy of the same package (which registers once, silently): another package, or other
 * kernels under the same version. Without this, a third-party backend named like one already
 * loaded was dropped without a word whenever neither gave a version().
 */
function otherBackend(
  a: BackendDefinition,
  b: BackendDefinition,
  sameVersion: boolean,
): string | undefined {
  if (a.packageName !== b.packageName)
    return `by ${show(a.packageName ?? "(no packageName)")}, and ${show(b.packageName ?? "(no packageName)")} registers another backend under that name`;
  // Another version of the same package may change its kernels: the caller says "dedupe".
  if (sameVersion && kernelSignature(a) !== kernelSignature(b))
    return "with other kernels; a second definition under that name has a different kernel list";
  return undefined;
}

/** A definition's version() for the duplicate check; one that throws is a RegistrationError. */
function versionOf(def: BackendDefinition): string | undefined {
  if (def.version !== undefined && typeof def.version !== "function")
    throw new RegistrationError(`backend ${def.name}: version must be a function`);
  try {
    return def.version?.();
  } catch (e) {
    throw new RegistrationError(
      `backend ${def.name}: version() threw (${(e as Error)?.message ?? String(e)}); it is compared when the name is registered twice`,
    );
  }
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

const isRecord = (x: unknown): x is Record<string, unknown> =>
  x !== null && typeof x === "object" && !Array.isArray(x);
const isStringList = (x: unknown): x is string[] =>
  Array.isArray(x) && x.every((v) => typeof v === "string" && v !== "");

const OPTIONAL_HOOKS = [
  "version",
  "versionNumber",
  "isBuilt",
  "capability",
  "performanceKey",
  "init",
] as const;

/** The definition's fields have the types BackendDefinition gives them (a JS caller has no compiler). */
function checkFields(def: BackendDefinition): void {
  const fail = (field: string, want: string, got: unknown) =>
    new RegistrationError(`backend ${def.name}: ${field} must be ${want}, got ${show(got)}`);
  if (!isStringList(def.devices))
    throw fail("devices", 'a list of device types like ["cpu"]', def.devices);
  if (def.namespaces !== undefined && !isStringList(def.namespaces))
    throw fail("namespaces", "a list of namespace names", def.namespaces);
  if (def.kernels !== undefined && !Array.isArray(def.kernels))
    throw fail("kernels", "a list of kernel definitions", def.kernels);
  if (def.reads !== undefined && !isStringList(def.reads))
    throw fail("reads", 'a list of flag keys like ["cudnn.benchmark"]', def.reads);
  if (def.flags !== undefined && !isRecord(def.flags))
    throw fail("flags", "an object of flag schemas by namespace", def.flags);
  if (def.provides !== undefined && !isRecord(def.provides))
    throw fail("provides", 'an object like { "quantized.engine": ["qnnpack"] }', def.provides);
  if (def.api !== undefined && (!isRecord(def.api) || !Object.values(def.api).every(isRecord)))
    throw fail("api", "an object of members by namespace", def.api);
  // Optional hooks are called later, far from here: a non-function would fail there.
  for (const fn of OPTIONAL_HOOKS)
    if (def[fn] !== undefined && typeof def[fn] !== "function")
      throw fail(fn, "a function (or left out)", def[fn]);
  if (
    def.memories !== undefined &&
    !(Array.isArray(def.memories) && def.memories.every((m) => typeof m?.deviceType === "string"))
  )
    throw fail("memories", "a list of device memories (each with its deviceType)", def.memories);
}

/**
 * An api member that takes the place of a namespace's own method (backend-cpu-mkl's
 * mkl.status) is a function too: `isAvailable: true` would make every later
 * backends.<ns>.isAvailable() a TypeError, and `name` is the namespace's, not a backend's.
 */
function checkApiMembers(def: BackendDefinition): void {
  for (const [ns, members] of Object.entries(def.api ?? {})) {
    for (const k of Object.keys(members)) {
      if (!NAMESPACE_MEMBERS.has(k)) continue;
      if (k !== "name" && typeof members[k] === "function") continue;
      throw new RegistrationError(
        k === "name"
          ? `backend ${def.name}: api.${ns}.name would rename backends.${ns}; leave name out`
          : `backend ${def.name}: api.${ns}.${k} replaces backends.${ns}.${k}(), so it must be a function, got ${show(members[k])}`,
      );
    }
  }
}

/**
 * Every namespace the backend claims or adds flags or members to: not another backend's,
 * and not a name of `backends` itself (a namespace `has` would never be reached).
 */
function checkNamespaces(def: BackendDefinition): void {
  for (const ns of def.namespaces ?? []) {
    const owner = namespaceOwnerOf(ns);
    if (owner && owner !== def.name) {
      throw new RegistrationError(
        `backend ${def.name} claims backends.${ns}, which ${owner} already answers for`,
      );
    }
  }
  const named = [
    ...(def.namespaces ?? []).map((ns) => ["namespaces", ns]),
    ...Object.keys(def.flags ?? {}).map((ns) => ["flags", ns]),
    ...Object.keys(def.api ?? {}).map((ns) => ["api", ns]),
  ];
  for (const [field, ns] of named) {
    if (!isPlainName(ns))
      throw new RegistrationError(
        `backend ${def.name}: ${field} names the namespace ${show(ns)}; a namespace name is non-empty, without "."`,
      );
    if (reservedName(ns))
      throw new RegistrationError(
        `backend ${def.name}: ${field} names the namespace ${show(ns)}, but backends.${ns} is a member of backends itself; choose another name`,
      );
  }
}

/** Each `provides` key is an extensible enum flag, and its values a list of names. */
function checkProvides(def: BackendDefinition): void {
  const fail = (text: string) => new RegistrationError(`backend ${def.name}: provides ${text}`);
  for (const [key, values] of Object.entries(def.provides ?? {})) {
    const spec = flagSpec(key);
    if (!spec) {
      const open = allFlagKeys().filter((k) => {
        const s = flagSpec(k);
        return s?.kind === "enum" && s.extensible === true;
      });
      const guess = didYouMean(key, open);
      throw fail(
        `${show(key)}, which is not a flag${guess ? `; did you mean ${guess}?` : ""} (flags that take provided values: ${open.join(", ")})`,
      );
    }
    if (spec.kind !== "enum" || !spec.extensible)
      throw fail(`${show(key)}, which is not an extensible enum; no backend can add values to it`);
    if (!isStringList(values))
      throw fail(
        `${show(key)}: the values must be a list of names like ["qnnpack"], got ${show(values)}`,
      );
  }
}

/**
 * Each memory is for one of the backend's devices, and for a device type no memory serves
 * yet: registering would otherwise replace the memory every later tensor of that type
 * (the CPU's included) is allocated from.
 */
function checkMemories(def: BackendDefinition): void {
  for (const m of def.memories ?? []) {
    const type = m.deviceType;
    if (!def.devices.includes(type))
      throw new RegistrationError(
        `backend ${def.name}: a memory for device type ${show(type)}, which is not among its devices (${def.devices.join(", ")})`,
      );
    const prior = deviceMemory(type);
    if (prior !== undefined && prior !== m)
      throw new RegistrationError(
        `backend ${def.name}: device type ${show(type)} already has a memory; a backend cannot replace it`,
      );
  }
}

const FLAG_KINDS = ["bool", "int", "enum", "string"];

/** The members every `backends.<ns>` object has (NamespaceBase): a flag there would hide one. */
const NAMESPACE_MEMBERS = new Set([
  "name",
  "isBuilt",
  "isAvailable",
  "status",
  "version",
  "versionString",
  "capability",
  "flags",
  "values",
]);

/** A namespace or flag name: a dot would make its key read as a group path. */
const isPlainName = (name: string): boolean => name !== "" && !name.includes(".");

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
      for (const [k, v] of Object.entries(o)) {
        if (!isPlainName(k))
          throw fail(
            `flags has the name ${show(k)} in ${path}; a flag name is non-empty, without "."`,
          );
        if (path.indexOf(".") < 0 && NAMESPACE_MEMBERS.has(k))
          throw fail(`flag ${path}.${k} would hide backends.${path}.${k}(); rename it`);
        walk(v, `${path}.${k}`);
      }
      return;
    }
    checkSpec(o, path, fail);
  };
  for (const [ns, schema] of Object.entries(def.flags ?? {})) walk(schema, ns);
  checkFlagClashes(def);
}

/** One flag spec: its kind, its default, and the optional fields with their documented types. */
function checkSpec(
  o: Record<string, unknown>,
  path: string,
  fail: (text: string) => RegistrationError,
): void {
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
  const field = (name: string, want: string, ok: (v: unknown) => boolean) => {
    if (o[name] !== undefined && !ok(o[name]))
      throw fail(`flag ${path}: ${name} must be ${want}, got ${show(o[name])}`);
  };
  // Read far from here (the environment at definition, describe(), validation): a wrong
  // type would fail there as a TypeError, after the backend was recorded.
  field(
    "env",
    "a variable name or a list of them",
    (v) => typeof v === "string" || isStringList(v),
  );
  field("readBy", "a list of package names", isStringList);
  field("fromEnv", "a function (text => value)", (v) => typeof v === "function");
  field("doc", "a string", (v) => typeof v === "string");
  field("torch", "a string", (v) => typeof v === "string");
  field(
    "extensible",
    "true or false (on an enum)",
    (v) => typeof v === "boolean" && o.kind === "enum",
  );
  for (const bound of ["min", "max"])
    field(
      bound,
      "a number (on an int)",
      (v) => typeof v === "number" && !Number.isNaN(v) && o.kind === "int",
    );
  try {
    validate(path, o as unknown as FlagSpec, o.default);
  } catch (e) {
    throw fail(`the default of ${(e as Error).message}`);
  }
}

/**
 * A flag the backend defines that exists already has the same kind (two backends may share
 * a flag), and no flag of it stands where a group is, or inside one that is a flag.
 */
function checkFlagClashes(def: BackendDefinition): void {
  const existing = allFlagKeys();
  for (const [ns, schema] of Object.entries(def.flags ?? {})) {
    for (const [path, spec] of leaves(schema)) {
      const key = `${ns}.${path}`;
      const prior = flagSpec(key);
      const fail = (text: string) =>
        new RegistrationError(`backend ${def.name}: flag ${key} ${text}; rename it in flags`);
      if (prior && prior.kind !== spec.kind)
        throw fail(`is already defined as ${prior.kind}; it cannot be redefined as ${spec.kind}`);
      if (prior) continue;
      if (existing.some((k) => k.startsWith(`${key}.`))) throw fail("is already a group of flags");
      const parent = existing.find((k) => key.startsWith(`${k}.`));
      if (parent) throw fail(`would sit inside ${parent}, which is a flag`);
    }
  }
}

/**
 * Every flag a kernel names exists: the core's, another backend's, or this backend's own.
 * A misspelt key ("fl3.enabld") would otherwise leave the kernel disabled for good.
 */
function checkKernelFlags(def: BackendDefinition): void {
  const kinds = new Map(
    Object.entries(def.flags ?? {}).flatMap(([ns, schema]) =>
      [...leaves(schema)].map(([key, spec]): [string, string] => [`${ns}.${key}`, spec.kind]),
    ),
  );
  checkFlagsOfKernels(def.name, def.kernels ?? [], kinds);
}

/**
 * Each flag a kernel lists is a defined boolean flag: a kernel runs only while its flags are
 * all `true`. `ownKinds`: the kinds of flags the backend's schema brings (not defined yet).
 */
function checkFlagsOfKernels(
  backend: string,
  kernels: readonly AnyKernelDefinition[],
  ownKinds: ReadonlyMap<string, string>,
): void {
  const known = new Set([...allFlagKeys(), ...ownKinds.keys()]);
  for (const k of kernels) {
    const flags = (k as { flags?: unknown } | null)?.flags;
    if (flags !== undefined && !isStringList(flags))
      throw new RegistrationError(
        `backend ${backend}, kernel ${show(k?.name)}: flags must be a list of flag keys, got ${show(flags)}`,
      );
    for (const key of flags ?? []) {
      if (!known.has(key)) {
        const guess = didYouMean(key, known);
        throw new RegistrationError(
          `backend ${backend}, kernel ${show(k?.name)}: flag ${show(key)} is not defined${guess ? `; did you mean ${guess}?` : ""} (a backend's own flags go in its flags schema)`,
        );
      }
      // A kernel runs only while its flags are all `true`: another kind would never be.
      const kind = ownKinds.get(key) ?? flagSpec(key)?.kind;
      if (kind !== "bool")
        throw new RegistrationError(
          `backend ${backend}, kernel ${show(k?.name)}: flag ${key} is ${kind === "int" || kind === "enum" ? "an" : "a"} ${kind} flag; a kernel's flags must be boolean (use enabled(flag) for other conditions)`,
        );
    }
  }
}

/**
 * Adds kernels to a backend registered before (a backend whose kernels load later): the
 * backend must exist and declare the kernels' devices, and the kernels are checked as
 * registerBackend checks its own. All are checked first, so a bad list adds nothing; the
 * dispatcher's cached orders are dropped, so the next call sees them.
 */
export function addKernels(
  backend: string,
  devices: readonly string[],
  list: readonly AnyKernelDefinition[],
): void {
  const b = typeof backend === "string" ? getBackend(backend) : undefined;
  if (b === undefined)
    throw new RegistrationError(
      `addKernels: no backend is named ${show(backend)}; register it with registerBackend({ name, devices, isAvailable, kernels }) (registered: ${listBackends()
        .map((x) => x.def.name)
        .join(", ")})`,
    );
  const foreign = Array.isArray(devices) ? devices.filter((d) => !b.def.devices.includes(d)) : [];
  if (foreign.length > 0)
    throw new RegistrationError(
      `addKernels: backend ${backend} does not declare device ${foreign.join(", ")} (its devices: ${b.def.devices.join(", ")})`,
    );
  if (Array.isArray(list)) checkFlagsOfKernels(backend, list, new Map());
  addBackendKernels(backend, devices, list);
  bumpGeneration();
}
