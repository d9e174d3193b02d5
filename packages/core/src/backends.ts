/**
 * The `backends` object: every namespace of the API (cpu, cuda, cudnn, mkl, ...) with its
 * flags and functions, plus withFlags()/flags() scopes over several namespaces.
 * An unknown namespace throws a message naming the known ones; has() never throws.
 */

import { listBackends, ready } from "./backend.ts";
import { cpuCapabilityInfo } from "./cpu-capability.ts";
import { ArgumentError, UnknownNamespaceError } from "./errors.ts";
import type { BUILTIN_FLAGS } from "./flags/builtin.ts";
import type { DeepPartial, FlagValues } from "./flags/spec.ts";
import {
  checkChanges,
  type FlagScope,
  flatten,
  getFlag,
  openScope,
  runWithState,
  setFlag,
} from "./flags/state.ts";
import { show } from "./format.ts";
import {
  extendNamespace,
  type Namespace,
  type NamespaceBase,
  type NamespaceStatus,
  namespaceNames,
  namespaceObject,
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
    if (!Number.isInteger(n) || n < 0)
      throw new ArgumentError(`cufftPlanCache.maxSize must be an integer >= 0, got ${show(n)}`);
    this.max = n;
  }
  clear(): void {}
}

/** Indexing picks a device; bare use (size, maxSize, clear) means device 0 until backend-cuda says otherwise. */
function planCacheRegistry(): CufftPlanCache & { [device: number]: CufftPlanCache } {
  const slots = new Map<number, PlanCacheSlot>();
  const slot = (d: number) => {
    if (!Number.isInteger(d) || d < 0)
      throw new ArgumentError(`cufftPlanCache[${String(d)}]: device index must be an integer >= 0`);
    let s = slots.get(d);
    if (!s) slots.set(d, (s = new PlanCacheSlot(d)));
    return s;
  };
  return new Proxy({} as CufftPlanCache & { [device: number]: CufftPlanCache }, {
    get(_, prop) {
      if (typeof prop === "string" && /^\d+$/.test(prop)) return slot(Number(prop));
      const cur = slot(0);
      if (prop === "clear") return () => cur.clear();
      if (prop === "size" || prop === "maxSize") return cur[prop];
      return undefined;
    },
    has(_, prop) {
      return (
        prop === "size" ||
        prop === "maxSize" ||
        prop === "clear" ||
        (typeof prop === "string" && /^\d+$/.test(prop))
      );
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
extendNamespace("nn", {
  attention: { sdpaKernel, withSdpaKernel, SDPBackend },
});
namespaceObject("cusparselt");
namespaceObject("mps");

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
      isFlashAttentionAvailable: typeof isFlashAttentionAvailable;
      canUseFlashAttention: typeof canUseFlashAttention;
      canUseEfficientAttention: typeof canUseEfficientAttention;
      canUseCudnnAttention: typeof canUseCudnnAttention;
      sdpKernel: typeof sdpKernel;
    };
  cudnn: NS<"cudnn">;
  cusparselt: NamespaceBase;
  mha: NS<"mha"> & { getFastpathEnabled(): boolean; setFastpathEnabled(b: boolean): void };
  mps: NamespaceBase;
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
  quantized: NS<"quantized">;
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
}

const root: BackendsRoot = {
  has: (name) => typeof name === "string" && namespaceNames().includes(name),
  names: () => namespaceNames(),
  status: () => namespaceNames().map(statusOf),
  withFlags: (changes, fn) => {
    const flat = checkChanges(flatten(changes as Record<string, unknown>));
    return runWithState((s) => s.with(flat), fn);
  },
  flags: (changes) => openScope(flatten(changes as Record<string, unknown>)),
  ready: (...names) => ready(...names),
  registered: () => listBackends().map((b) => b.def.name),
};

// Names a runtime or a tool may probe on any object; answering undefined keeps them working.
const PROBES = new Set([
  "then",
  "toJSON",
  "constructor",
  "inspect",
  "nodeType",
  "$$typeof",
  "asymmetricMatch",
  "@@__IMMUTABLE_ITERABLE__@@",
]);

export const backends = new Proxy(root as BackendsRoot & Backends, {
  get(target, prop) {
    if (typeof prop === "symbol") return (target as any)[prop];
    if (prop in target) return (target as any)[prop];
    if (namespaceNames().includes(prop)) return namespaceObject(prop);
    if (PROBES.has(prop)) return undefined;
    throw new UnknownNamespaceError(
      `backends.${prop} does not exist; known namespaces: ${namespaceNames().join(", ")}`,
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
