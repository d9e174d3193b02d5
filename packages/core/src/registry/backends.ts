/**
 * The backend contract and the table of registered backends: lookup, cached
 * availability, lazy initialisation. register.ts adds to it; the core never imports a
 * backend package.
 */

import { ArgumentError } from "../errors.ts";
import { BACKEND_PACKAGES } from "../flags/builtin.ts";
import type { FlagSchema } from "../flags/spec.ts";
import { markPackageLoaded } from "../flags/state.ts";
import type { DeviceMemory } from "../tensor/memory.ts";
import { show } from "../util/format.ts";
import { splitReason } from "../util/reason.ts";
import { didYouMean } from "../util/suggest.ts";
import type { AnyKernelDefinition } from "./kernels.ts";

/** `{ available: true }`, or false with the reason a person can act on. */
export interface Availability {
  available: boolean;
  reason?: string;
  /** More than the reason says (paths tried, what a driver printed), for status().detail. */
  detail?: string;
}

export interface BackendDefinition {
  /** Unique name, e.g. "cpu-mkl". */
  name: string;
  /** The `backends.<namespace>` entries this backend answers for (isBuilt, isAvailable...). */
  namespaces?: string[];
  /** Device types its kernels run on. */
  devices: string[];
  /** The published package, for messages. */
  packageName?: string;
  /** The version as text: the library's where the namespace mirrors one (cuDNN "9.24.0"), else the package's. */
  version?(): string | undefined;
  /** torch's integer form of version(), when it is not major*10000 + minor*100 + patch of the text. */
  versionNumber?(): number | undefined;
  /** Flag keys this backend reads besides its own schema's (e.g. "cudnn.benchmark"): marks them live. */
  reads?: readonly string[];
  /** Values this backend adds to extensible enum flags, e.g. { "quantized.engine": ["qnnpack"] }. */
  provides?: Readonly<Record<string, readonly string[]>>;
  /** Whether the package has what it was built with (kernels, PTX...). Default: true. */
  isBuilt?(): Availability;
  /** Whether it can run here and now; evaluated lazily and cached until refreshAvailability(). */
  isAvailable(): Availability;
  /** What the hardware or library offers: a summary string or structured facts. */
  capability?(): unknown;
  /**
   * What this backend's speed depends on besides its version and the machine (the native
   * library's path, version and kernels, say): part of the key the CPU kernel
   * calibration is cached under, so a new library is measured again.
   */
  performanceKey?(): string;
  /** Flags per namespace, merged into `backends.<namespace>`. */
  flags?: Record<string, FlagSchema>;
  kernels?: AnyKernelDefinition[];
  /** Members added to `backends.<namespace>` (getOptEinsum, runCpu, cufftPlanCache...). */
  api?: Record<string, Record<string, unknown>>;
  /** Device memories this backend provides. */
  memories?: DeviceMemory[];
  /** Lazy initialisation, run once before the first kernel of this backend is considered. */
  init?(): void | Promise<void>;
}

export type InitState = "pending" | "running" | "ready" | "failed";

export interface RegisteredBackend {
  readonly def: BackendDefinition;
  initState: InitState;
  /** Why init() failed, short (<= 300 characters). */
  initError?: string;
  /** The failure in full (paths tried, loader errors), when it was longer or the backend gave one. */
  initDetail?: string;
  /** init() found an optional library not installed (NotInstalledError): not a failure. */
  notInstalled?: boolean;
  initPromise?: Promise<void>;
  availability?: Availability;
}

const backendsByName = new Map<string, RegisteredBackend>();
const namespaceOwner = new Map<string, string>();
let generation = 0;

/** Bumped on every registration or availability change; the dispatcher's caches key on it. */
export function registryGeneration(): number {
  return generation;
}
export function bumpGeneration(): void {
  generation++;
}

/** Records a checked registration (register.ts does the checks). */
export function addToRegistry(entry: RegisteredBackend): void {
  backendsByName.set(entry.def.name, entry);
  markPackageLoaded(entry.def.packageName ?? entry.def.name);
  for (const ns of entry.def.namespaces ?? []) namespaceOwner.set(ns, entry.def.name);
  bumpGeneration();
}

/** The backend that answers for `ns`, by name (undefined when none does). */
export function namespaceOwnerOf(ns: string): string | undefined {
  return namespaceOwner.get(ns);
}

export function getBackend(name: string): RegisteredBackend | undefined {
  return backendsByName.get(name);
}

export function listBackends(): RegisteredBackend[] {
  return [...backendsByName.values()];
}

export function backendForNamespace(ns: string): RegisteredBackend | undefined {
  const owner = namespaceOwner.get(ns);
  return owner ? backendsByName.get(owner) : undefined;
}

/** Availability of a registered backend, cached; a thrown isAvailable() becomes the reason. */
export function availabilityOf(b: RegisteredBackend): Availability {
  if (!b.availability) {
    try {
      b.availability = availabilityAnswer("isAvailable", b.def.isAvailable());
    } catch (e) {
      b.availability = { available: false, reason: `isAvailable() threw: ${thrownText(e)}` };
    }
  }
  return b.availability;
}

/**
 * A hook's answer (isAvailable(), isBuilt()) as an Availability whose reason and detail are
 * text or absent: reasons are cut and joined as strings everywhere (status(), explain()),
 * so a backend's `reason: 42` must not turn backends.status() into a TypeError.
 */
export function availabilityAnswer(hook: string, a: unknown): Availability {
  const given = a as Partial<Record<keyof Availability, unknown>> | null | undefined;
  if (typeof (given as { then?: unknown } | null)?.then === "function") {
    // Nobody awaits it: a rejection must not end the process as an unhandled one.
    Promise.resolve(given).catch(() => {});
    return {
      available: false,
      reason: `${hook}() returned a promise; it must answer at once (wait for libraries in init())`,
    };
  }
  if (given === null || typeof given !== "object" || typeof given.available !== "boolean")
    return {
      available: false,
      reason: `${hook}() returned ${show(a)} instead of { available, reason? }`,
    };
  const { available, reason, detail } = given;
  const more = typeof detail === "string" && detail !== "" ? { detail } : {};
  if (available) return { available, ...more };
  return { available, reason: reasonText(hook, reason), ...more };
}

function reasonText(hook: string, reason: unknown): string {
  if (typeof reason === "string" && reason !== "") return reason;
  if (reason === undefined || reason === "") return `${hook}() gave no reason`;
  return `${hook}() gave a reason that is not text: ${show(reason)}`;
}

/** What a hook threw, as text: an Error's message, or the value itself (`throw null` too). */
export function thrownText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Forget cached availability (after installing a driver, changing a search path...). */
export function refreshAvailability(): void {
  for (const b of backendsByName.values()) b.availability = undefined;
  bumpGeneration();
}

/**
 * Starts (or joins) a backend's lazy initialisation. Sync init completes at once; async
 * init makes its kernels wait ("initialising") until `ready()` resolves.
 */
export function startInit(b: RegisteredBackend): void {
  if (b.initState !== "pending" || !b.def.init) return;
  b.initState = "running";
  const done = () => {
    b.initState = "ready";
    bumpGeneration();
  };
  const fail = (e: unknown) => {
    b.initState = "failed";
    const text = thrownText(e);
    const given = (e as { detail?: unknown } | undefined)?.detail;
    const { reason, detail } = splitReason(text);
    b.initError = reason;
    b.initDetail = typeof given === "string" ? given : detail;
    b.notInstalled = (e as { code?: unknown } | undefined)?.code === "E_NOT_INSTALLED";
    bumpGeneration();
  };
  try {
    const r = b.def.init();
    if (r instanceof Promise) b.initPromise = r.then(done, fail);
    else done();
  } catch (e) {
    fail(e);
  }
}

/**
 * Runs a backend's initialisation again on next use (after a setting it reads changed,
 * e.g. which native library to load). Its kernels wait until it has finished.
 */
export function restartInit(name: string): void {
  const b = backendsByName.get(name);
  if (!b?.def.init) return;
  b.initState = "pending";
  b.initError = undefined;
  b.initDetail = undefined;
  b.notInstalled = undefined;
  b.initPromise = undefined;
  b.availability = undefined;
  bumpGeneration();
}

/**
 * Each name is a registered backend, or one of Backplane's whose package is not imported
 * (nothing to wait for: it resolves, as before); anything else is a typo, said so.
 */
function checkReadyNames(names: readonly unknown[]): void {
  for (const n of names) {
    if (typeof n === "string" && (backendsByName.has(n) || Object.hasOwn(BACKEND_PACKAGES, n)))
      continue;
    const known = [...new Set([...backendsByName.keys(), ...Object.keys(BACKEND_PACKAGES)])];
    const guess = typeof n === "string" ? didYouMean(n, known) : undefined;
    throw new ArgumentError(
      `ready: ${typeof n === "string" ? `no backend is named ${show(n)}` : `backend names are strings, got ${show(n)}`}${guess ? `; did you mean ${guess}?` : ""} (registered: ${[...backendsByName.keys()].join(", ")})`,
    );
  }
}

/** Waits until the named backends (default: all) have initialised. */
export async function ready(...names: string[]): Promise<void> {
  checkReadyNames(names);
  const list =
    names.length > 0
      ? names.map((n) => backendsByName.get(n)).filter((b) => b !== undefined)
      : listBackends();
  for (const b of list) {
    if (availabilityOf(b).available) startInit(b);
  }
  await Promise.all(list.map((b) => b.initPromise));
}
