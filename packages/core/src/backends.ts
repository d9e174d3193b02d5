/**
 * The `backends` object: every namespace of the API (cpu, cuda, cudnn, mkl, ...) with its
 * flags and functions, plus withFlags()/flags() scopes over several namespaces.
 * An unknown namespace throws a message naming the known ones; has() never throws.
 */

import { listBackends, ready } from "./backend.ts";
import { cpuCapabilityInfo } from "./cpu-capability.ts";
import { record } from "./dispatcher.ts";
import { ArgumentError, UnknownNamespaceError } from "./errors.ts";
import type { BUILTIN_FLAGS } from "./flags/builtin.ts";
import {
  allowedText,
  type DeepPartial,
  envNames,
  type FlagValues,
  typeText,
} from "./flags/spec.ts";
import {
  checkChanges,
  type FlagScope,
  flagChoices,
  flagReaders,
  flagSpec,
  flatten,
  getFlag,
  isInert,
  openScope,
  runWithState,
  setFlag,
  warnIfInert,
} from "./flags/state.ts";
import { show } from "./format.ts";
import {
  extendNamespace,
  extendNamespaceGetters,
  type Namespace,
  type NamespaceBase,
  type NamespaceStatus,
  namespaceNames,
  namespaceObject,
  PROBES,
  setFlagReadFilter,
  statusOf,
} from "./namespaces.ts";
import { runtime } from "./runtime.ts";
import {
  canUseCudnnAttention,
  canUseEfficientAttention,
  canUseFlashAttention,
  isFlashAttentionAvailable,
  SDPAParams,
  SDPBackend,
  sdpaKernel,
  sdpKernel,
  sdpSwitches,
  withSdpaKernel,
} from "./sdpa-select.ts";
import { didYouMean } from "./suggest.ts";
import { fromTorchName, TORCH_NAMES } from "./torch-names.ts";

type B = typeof BUILTIN_FLAGS;

/** torch.backends.cuda.cufft_plan_cache[i]: backend-cuda installs the real caches. */
export interface CufftPlanCache {
  readonly size: number;
  maxSize: number;
  clear(): void;
}

class PlanCacheSlot implements CufftPlanCache {
  private max = 4096;
  constructor(readonly device: number) {}
  get size(): number {
    return 0; // no cuFFT without backend-cuda: nothing is ever cached
  }
  get maxSize(): number {
    return this.max;
  }
  set maxSize(n: number) {
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0)
      throw new ArgumentError(`cufftPlanCache.maxSize must be an integer >= 0, got ${show(n)}`);
    this.max = n;
  }
  clear(): void {}
}

/**
 * Indexing picks a device; bare use (size, maxSize, clear) means device 0 until
 * backend-cuda says otherwise. Any other member, or a bad index, is a typed error.
 */
function planCacheRegistry(): CufftPlanCache & { [device: number]: CufftPlanCache } {
  const slots = new Map<number, PlanCacheSlot>();
  const slot = (d: number) => {
    if (!Number.isInteger(d) || d < 0 || d > 1023)
      throw new ArgumentError(
        `cufftPlanCache[${String(d)}]: the device index must be an integer in [0, 1023]`,
      );
    let s = slots.get(d);
    if (!s) slots.set(d, (s = new PlanCacheSlot(d)));
    return s;
  };
  const MEMBERS = ["size", "maxSize", "clear"];
  return new Proxy({} as CufftPlanCache & { [device: number]: CufftPlanCache }, {
    get(_, prop) {
      if (typeof prop === "symbol" || PROBES.has(prop)) return undefined;
      if (/^-?\d+(\.\d+)?$/.test(prop) || prop === "NaN" || prop === "Infinity")
        return slot(Number(prop));
      const cur = slot(0);
      if (prop === "clear") return () => cur.clear();
      if (prop === "size" || prop === "maxSize") return cur[prop];
      const guess = didYouMean(prop, MEMBERS);
      throw new ArgumentError(
        `cufftPlanCache.${prop}: no such member${guess ? `; did you mean ${guess}?` : ""} (index a device, cufftPlanCache[0], or use size, maxSize, clear())`,
      );
    },
    has(_, prop) {
      return MEMBERS.includes(prop as string) || (typeof prop === "string" && /^\d+$/.test(prop));
    },
    set(_, prop, value) {
      if (prop === "maxSize") {
        slot(0).maxSize = value;
        return true;
      }
      throw new ArgumentError(
        `cufftPlanCache.${String(prop)} is read-only; maxSize is the one setting`,
      );
    },
  });
}

const VERBOSE = { VERBOSE_OFF: 0, VERBOSE_ON: 1 } as const;

function checkVersionPart(fn: string, name: string, v: unknown): void {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0)
    throw new ArgumentError(`mps.${fn}: ${name} must be an integer >= 0, got ${show(v)}`);
}

// Functions of each namespace (flags are added by namespaceObject from the schemas).
extendNamespace("cpu", {
  /** torch.backends.cpu.get_cpu_capability() */
  getCpuCapability: () => cpuCapabilityInfo().capability,
  /** Every feature behind the answer. */
  getCpuCapabilityInfo: () => cpuCapabilityInfo(),
});
extendNamespace("cuda", {
  cufftPlanCache: planCacheRegistry(),
  preferredBlasLibrary: (b?: "cublas" | "cublaslt") => {
    if (b !== undefined) setFlag("cuda.preferredBlasLibrary", b);
    return getFlag("cuda.preferredBlasLibrary");
  },
  preferredLinalgLibrary: (b?: "default" | "cusolver" | "magma") => {
    if (b !== undefined) setFlag("cuda.preferredLinalgLibrary", b);
    return getFlag("cuda.preferredLinalgLibrary");
  },
  SDPAParams,
  SDPBackend,
  ...sdpSwitches,
  isFlashAttentionAvailable,
  canUseFlashAttention,
  canUseEfficientAttention,
  canUseCudnnAttention,
  sdpKernel,
});
extendNamespace("mha", {
  getFastpathEnabled: () => getFlag("mha.fastpathEnabled"),
  setFastpathEnabled: (b: boolean) => setFlag("mha.fastpathEnabled", b),
});
extendNamespace("mkl", {
  ...VERBOSE,
  /** A scope that sets MKL's verbose level and restores the previous one (torch resets to OFF). */
  verbose: (level: number) => openScope(checkChanges({ "mkl.verbose": level })),
  isEnabled: () => statusOf("mkl").available,
});
extendNamespace("mkldnn", {
  ...VERBOSE,
  VERBOSE_ON_CREATION: 2,
  verbose: (level: number) => openScope(checkChanges({ "mkldnn.verbose": level })),
});
extendNamespace("nnpack", {
  /** torch.backends.nnpack.set_flags: sets enabled, returns the previous value. */
  setFlags: (enabled: boolean) => {
    const prev = getFlag("nnpack.enabled");
    setFlag("nnpack.enabled", enabled);
    return [prev];
  },
});
extendNamespace("openmp", {
  isEnabled: () => statusOf("openmp").available,
  /** Threads CPU kernels use: the setting, or the cores available when it is 0. */
  getNumThreads: () => (getFlag("openmp.numThreads") as number) || runtime().hardwareConcurrency,
  setNumThreads: (n: number) => {
    if (!Number.isInteger(n) || n < 1)
      throw new ArgumentError(`openmp.setNumThreads: n must be an integer >= 1, got ${show(n)}`);
    setFlag("openmp.numThreads", n);
  },
  /** `using _ = backends.openmp.numThreadsScope(1)` */
  numThreadsScope: (n: number) => openScope(checkChanges({ "openmp.numThreads": n })),
});
extendNamespace("optEinsum", {
  /** The path-finding API, once backend-opt-einsum is imported (torch returns the opt_einsum module or None). */
  getOptEinsum: () => undefined,
});
extendNamespace("xeon", {
  runCpu: () => {
    throw new UnknownNamespaceError(
      "backends.xeon.runCpu needs @backplane/backend-openmp (npm i @backplane/backend-openmp, then import it)",
    );
  },
});
extendNamespaceGetters("quantized", {
  /** torch.backends.quantized.supported_engines: "none" and the engines imported packages provide. */
  supportedEngines: () => flagChoices("quantized.engine"),
});
extendNamespace("mps", {
  /**
   * torch.backends.mps.is_macos_or_newer(major, minor): false where MPS is not built, as
   * in torch; @backplane/backend-mps answers from the running macOS.
   */
  isMacosOrNewer: (major: number, minor: number) => {
    checkVersionPart("isMacosOrNewer", "major", major);
    checkVersionPart("isMacosOrNewer", "minor", minor);
    return false;
  },
});
// opt_einsum.enabled reads true only where the plugin can run, as torch's does.
setFlagReadFilter("optEinsum.enabled", (v) => v === true && statusOf("optEinsum").available);
extendNamespace("nn", {
  attention: { sdpaKernel, withSdpaKernel, SDPBackend },
});
namespaceObject("cusparselt");

type NS<K extends keyof B> = Namespace<B[K]>;

/** The typed shape of `backends`; backends and third parties add members at run time. */
export interface Backends {
  cpu: NS<"cpu"> & {
    getCpuCapability(): string;
    getCpuCapabilityInfo(): ReturnType<typeof cpuCapabilityInfo>;
  };
  cuda: NS<"cuda"> &
    typeof sdpSwitches & {
      cufftPlanCache: CufftPlanCache & { [device: number]: CufftPlanCache };
      preferredBlasLibrary(b?: "cublas" | "cublaslt"): "cublas" | "cublaslt";
      preferredLinalgLibrary(
        b?: "default" | "cusolver" | "magma",
      ): "default" | "cusolver" | "magma";
      SDPAParams: typeof SDPAParams;
      SDPBackend: typeof SDPBackend;
      isFlashAttentionAvailable: typeof isFlashAttentionAvailable;
      canUseFlashAttention: typeof canUseFlashAttention;
      canUseEfficientAttention: typeof canUseEfficientAttention;
      canUseCudnnAttention: typeof canUseCudnnAttention;
      sdpKernel: typeof sdpKernel;
    };
  cudnn: NS<"cudnn">;
  cusparselt: NamespaceBase;
  mha: NS<"mha"> & { getFastpathEnabled(): boolean; setFastpathEnabled(b: boolean): void };
  mps: NamespaceBase & { isMacosOrNewer(major: number, minor: number): boolean };
  mkl: NS<"mkl"> & typeof VERBOSE & { verbose(level: number): FlagScope; isEnabled(): boolean };
  mkldnn: NS<"mkldnn"> &
    typeof VERBOSE & { VERBOSE_ON_CREATION: 2; verbose(level: number): FlagScope };
  nnpack: NS<"nnpack"> & { setFlags(enabled: boolean): [boolean] };
  openmp: NS<"openmp"> & {
    isEnabled(): boolean;
    getNumThreads(): number;
    setNumThreads(n: number): void;
    numThreadsScope(n: number): FlagScope;
  };
  optEinsum: NS<"optEinsum"> & { getOptEinsum(): unknown };
  quantized: NS<"quantized"> & { readonly supportedEngines: string[] };
  xnnpack: NS<"xnnpack">;
  xeon: NamespaceBase & { runCpu(...args: unknown[]): unknown };
  webgpu: NS<"webgpu">;
  nn: NamespaceBase & {
    attention: {
      sdpaKernel: typeof sdpaKernel;
      withSdpaKernel: typeof withSdpaKernel;
      SDPBackend: typeof SDPBackend;
    };
  };
  /** Any namespace a plugin added. */
  [name: string]: any;
}

export type AllFlags = { [K in keyof B]: FlagValues<B[K]> };

/** Members of `backends` itself (not namespaces). */
export interface BackendsRoot {
  /** Whether a namespace exists; never throws. */
  has(name: string): boolean;
  /** Names of every namespace. */
  names(): string[];
  /** built / available / reason of every namespace. */
  status(): NamespaceStatus[];
  /** Runs fn with flags of several namespaces changed; holds across awaits, per task. */
  withFlags<R>(changes: DeepPartial<AllFlags> & Record<string, unknown>, fn: () => R): R;
  /** A sync scope over several namespaces: `using _ = backends.flags({ cudnn: { benchmark: true } })`. */
  flags(changes: DeepPartial<AllFlags> & Record<string, unknown>): FlagScope;
  /** Waits for backends with async initialisation (WebGPU adapters...). */
  ready(...names: string[]): Promise<void>;
  /** Registered backends by name. */
  registered(): string[];
  /** Type, default, current value, PyTorch name and readers of a flag ("cudnn.benchmark"). */
  describe(name: string): FlagDescription;
  /** Runs fn and returns its result with every kernel call made inside it. */
  record: typeof record;
}

/** What describe() tells of a flag. */
export interface FlagDescription {
  /** Full key: "quantized.engine". */
  name: string;
  /** "boolean", "integer [0, 2]", '"none" | (provided)'... */
  type: string;
  /** What it accepts now, in words. */
  accepts: string;
  default: unknown;
  value: unknown;
  /** The PyTorch name, when the flag mirrors one. */
  torch?: string;
  /** Environment variables read at start. */
  env: readonly string[];
  doc?: string;
  /** The packages whose code reads it, and whether each is loaded. */
  readBy: { package: string; loaded: boolean }[];
  /** No loaded package reads it: setting it changes nothing. */
  inert: boolean;
}

/** Resolves "cudnn.benchmark", "backends.cudnn.benchmark" or "torch.backends.cudnn.benchmark". */
function describeFlag(name: string): FlagDescription {
  if (typeof name !== "string")
    throw new ArgumentError(`backends.describe(name): name must be a string, got ${show(name)}`);
  let key = fromTorchName(name) ?? name;
  if (key.startsWith("backends.")) key = key.slice("backends.".length);
  const spec = flagSpec(key);
  if (!spec) {
    getFlag(key); // throws the did-you-mean error for a key that is not a flag
    throw new ArgumentError(`backends.describe: ${name} is not a flag`);
  }
  const readers = flagReaders(key);
  const loaded = new Set(registeredPackages());
  return {
    name: key,
    type: typeText(spec),
    accepts: allowedText(
      spec,
      flagChoices(key).slice(spec.kind === "enum" ? spec.values.length : 0),
    ),
    default: spec.default,
    value: getFlag(key),
    torch: TORCH_BY_KEY.get(key),
    env: envNames(spec),
    doc: spec.doc,
    readBy: readers.map((p) => ({ package: p, loaded: p === "@backplane/core" || loaded.has(p) })),
    inert: isInert(key),
  };
}

/** Flag key -> torch name, from TORCH_NAMES. */
const TORCH_BY_KEY = new Map(
  Object.entries(TORCH_NAMES)
    .filter(([, v]) => v.startsWith("backends."))
    .map(([t, v]) => [v.slice("backends.".length), t]),
);

function registeredPackages(): string[] {
  return listBackends().map((b) => b.def.packageName ?? b.def.name);
}

const root: BackendsRoot = {
  has: (name) => typeof name === "string" && namespaceNames().includes(name),
  names: () => namespaceNames(),
  status: () => namespaceNames().map(statusOf),
  withFlags: (changes, fn) => {
    const flat = checkChanges(flatten(changes as Record<string, unknown>));
    if (typeof fn !== "function")
      throw new ArgumentError(
        `backends.withFlags(changes, fn): fn must be a function, got ${show(fn)}`,
      );
    for (const key of Object.keys(flat)) warnIfInert(key);
    return runWithState((s) => s.with(flat), fn);
  },
  flags: (changes) => openScope(flatten(changes as Record<string, unknown>)),
  ready: (...names) => ready(...names),
  registered: () => listBackends().map((b) => b.def.name),
  describe: describeFlag,
  record,
};

export const backends = new Proxy(root as BackendsRoot & Backends, {
  get(target, prop) {
    if (typeof prop === "symbol") return (target as any)[prop];
    if (prop in target) return (target as any)[prop];
    if (namespaceNames().includes(prop)) return namespaceObject(prop);
    if (PROBES.has(prop)) return undefined;
    const guess = didYouMean(prop, namespaceNames());
    throw new UnknownNamespaceError(
      `backends.${prop} does not exist${guess ? `; did you mean backends.${guess}?` : ""} (known namespaces: ${namespaceNames().join(", ")})`,
    );
  },
  has(target, prop) {
    return prop in target || (typeof prop === "string" && namespaceNames().includes(prop));
  },
  ownKeys(target) {
    return [...Reflect.ownKeys(target), ...namespaceNames()];
  },
  getOwnPropertyDescriptor(target, prop) {
    if (typeof prop === "string" && namespaceNames().includes(prop)) {
      return { value: namespaceObject(prop), enumerable: true, configurable: true };
    }
    return Reflect.getOwnPropertyDescriptor(target, prop);
  },
  set(_, prop) {
    throw new ArgumentError(
      `backends.${String(prop)} cannot be replaced; set its flags instead (backends.cudnn.benchmark = true)`,
    );
  },
});

/** Adds a namespace with flags (a third-party backend does this through registerBackend's flags). */
export { namespaceObject as defineNamespace };
