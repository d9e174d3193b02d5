/**
 * The `backends` object: every namespace of the API (cpu, cuda, cudnn, mkl, ...) with its
 * flags and functions, plus withFlags()/flags() scopes over several namespaces.
 * An unknown namespace throws a message naming the known ones; has() never throws.
 */

import type { CalibrationReport } from "../dispatch/calibrate.ts";
import { ensureCalibrated } from "../dispatch/calibrate.ts";
import { record } from "../dispatch/record.ts";
import { ArgumentError, UnknownNamespaceError } from "../errors.ts";
import type { BUILTIN_FLAGS } from "../flags/builtin.ts";
import type { DeepPartial, FlagValues } from "../flags/spec.ts";
import {
  checkChanges,
  type FlagScope,
  flatten,
  openScope,
  runWithState,
  warnIfInert,
} from "../flags/state.ts";
import { describeFlag, type FlagDescription } from "../namespaces/describe.ts";
import { getBackend, listBackends, ready } from "../registry/backends.ts";
import { setReservedNamespaceTest } from "../registry/register.ts";
import type { cpuCapabilityInfo } from "../runtime/cpu-capability.ts";
import { show } from "../util/format.ts";
import { didYouMean } from "../util/suggest.ts";
import type { ParallelService } from "../wasm/parallel.ts";
import type { CufftPlanCache } from "./cufft-plan-cache.ts";
import type {
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
// The core's own members of each namespace (cpu.getCpuCapability, mkl.verbose...).
import "./members.ts";
import {
  hasNamespace,
  type Namespace,
  type NamespaceBase,
  type NamespaceStatus,
  namespaceNames,
  namespaceObject,
  namespaceStatus,
  PROBES,
} from "../namespaces/namespace.ts";
import type { VERBOSE } from "./members.ts";
import type {
  CudnnMembers,
  NnpackMembers,
  OptEinsumApi,
  WebGPUMembers,
} from "./package-members.ts";

export type { FlagDescription } from "../namespaces/describe.ts";
export type { CufftPlanCache } from "./cufft-plan-cache.ts";

type B = typeof BUILTIN_FLAGS;

type NS<K extends keyof B> = Namespace<B[K]>;

/** The typed shape of `backends`; backends and third parties add members at run time. */
export interface Backends {
  /** Backplane's own switches: verbose trace, kernel ranking, strict mode, determinism. */
  core: NS<"core">;
  cpu: NS<"cpu"> & {
    getCpuCapability(): string;
    getCpuCapabilityInfo(): ReturnType<typeof cpuCapabilityInfo>;
    /** Times the CPU backends' kernels anew, ranks them by the figures and caches them. */
    calibrate(): Promise<CalibrationReport>;
    /** The figures the CPU kernels are ranked by (undefined before the first ready()). */
    calibration(): CalibrationReport | undefined;
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
  /** diagnostics() and the plan cache come with @backplane/backend-cudnn. */
  cudnn: NS<"cudnn"> & CudnnMembers;
  cusparselt: NamespaceBase;
  mha: NS<"mha"> & { getFastpathEnabled(): boolean; setFastpathEnabled(b: boolean): void };
  mps: NS<"mps"> & { isMacosOrNewer(major: number, minor: number): boolean };
  mkl: NS<"mkl"> & typeof VERBOSE & { verbose(level: number): FlagScope; isEnabled(): boolean };
  mkldnn: NS<"mkldnn"> &
    typeof VERBOSE & { VERBOSE_ON_CREATION: 2; verbose(level: number): FlagScope };
  /** algorithmFor() and the transform cache come with @backplane/backend-nnpack. */
  nnpack: NS<"nnpack"> & { setFlags(enabled: boolean): [boolean] } & NnpackMembers;
  openmp: NS<"openmp"> & {
    isEnabled(): boolean;
    getNumThreads(): number;
    setNumThreads(n: number): void;
    numThreadsScope(n: number): FlagScope;
    /** backend-openmp's worker pool: undefined where threads are unavailable (or it is not imported). */
    pool(): ParallelService | undefined;
  };
  optEinsum: NS<"optEinsum"> & {
    /**
     * The path API of @backplane/backend-opt-einsum (torch returns opt_einsum); undefined
     * until that package is imported, as torch returns None: isAvailable() tells.
     */
    getOptEinsum(): OptEinsumApi;
  };
  quantized: NS<"quantized"> & { readonly supportedEngines: string[] };
  xnnpack: NS<"xnnpack">;
  xeon: NamespaceBase & { runCpu(...args: unknown[]): unknown };
  /** The buffer pool's poolStats() and emptyCache() come with @backplane/backend-webgpu. */
  webgpu: NS<"webgpu"> & WebGPUMembers;
  nn: NamespaceBase & {
    attention: {
      sdpaKernel: typeof sdpaKernel;
      withSdpaKernel: typeof withSdpaKernel;
      SDPBackend: typeof SDPBackend;
    };
  };
  /**
   * A namespace a plugin added: typed by the plugin's declaration merging on Backends,
   * else reached through namespace(name).
   */
  [name: string]: unknown;
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
  /** The namespace `name` (any plugin's too); an unknown name is an UnknownNamespaceError. */
  namespace(name: string): NamespaceBase & Record<string, unknown>;
  /** Type, default, current value, PyTorch name and readers of a flag ("cudnn.benchmark"). */
  describe(name: string): FlagDescription;
  /** Runs fn and returns its result with every kernel call made inside it. */
  record: typeof record;
}

/**
 * ready(): waits for the backends' initialisation, then ranks the CPU kernels by
 * measurement (calibrate.ts; a file read when this machine's figures are cached).
 */
export async function readyAndRanked(...names: string[]): Promise<void> {
  await ready(...names);
  if (names.length === 0 || names.some((n) => getBackend(n)?.def.devices.includes("cpu")))
    ensureCalibrated();
}

const root: BackendsRoot = {
  has: (name) => typeof name === "string" && hasNamespace(name),
  names: () => namespaceNames(),
  status: () => namespaceNames().map(namespaceStatus),
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
  ready: (...names) => readyAndRanked(...names),
  registered: () => listBackends().map((b) => b.def.name),
  namespace: (name) => {
    if (typeof name !== "string" || !hasNamespace(name)) {
      const guess = typeof name === "string" ? didYouMean(name, namespaceNames()) : undefined;
      throw new UnknownNamespaceError(
        `backends.namespace(${show(name)}): no such namespace${guess ? `; did you mean ${guess}?` : ""} (known: ${namespaceNames().join(", ")})`,
      );
    }
    return namespaceObject(name) as NamespaceBase & Record<string, unknown>;
  },
  describe: describeFlag,
  record,
};

// A namespace named like a member of backends (has, flags, toString) would be shadowed by
// it, and one named like a probe (then) would make backends a thenable: refused.
setReservedNamespaceTest((ns) => ns in root || PROBES.has(ns));

export const backends: BackendsRoot & Backends = new Proxy(root as BackendsRoot & Backends, {
  get(target, prop) {
    if (typeof prop === "symbol" || prop in target) return Reflect.get(target, prop);
    if (hasNamespace(prop)) return namespaceObject(prop);
    if (PROBES.has(prop)) return undefined;
    const guess = didYouMean(prop, namespaceNames());
    throw new UnknownNamespaceError(
      `backends.${prop} does not exist${guess ? `; did you mean backends.${guess}?` : ""} (known namespaces: ${namespaceNames().join(", ")})`,
    );
  },
  has(target, prop) {
    return prop in target || (typeof prop === "string" && hasNamespace(prop));
  },
  ownKeys(target) {
    return [...Reflect.ownKeys(target), ...namespaceNames()];
  },
  getOwnPropertyDescriptor(target, prop) {
    if (typeof prop === "string" && hasNamespace(prop)) {
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
