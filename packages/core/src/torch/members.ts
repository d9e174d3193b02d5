/**
 * The functions and constants the core puts in each namespace (cpu.getCpuCapability,
 * cuda's SDP switches, mkl.verbose(level), openmp.setNumThreads...). Flags come from the
 * schemas; a backend package adds or replaces members through registerBackend({ api }).
 */

import { calibrate, calibration } from "../dispatch/calibrate.ts";
import { ArgumentError, UnknownNamespaceError } from "../errors.ts";
import { checkChanges, flagChoices, getFlag, openScope, setFlag } from "../flags/state.ts";
import {
  extendNamespace,
  extendNamespaceGetters,
  namespaceObject,
  namespaceStatus,
  setFlagReadFilter,
} from "../namespaces/namespace.ts";
import { ready } from "../registry/backends.ts";
import { cpuCapabilityInfo } from "../runtime/cpu-capability.ts";
import { runtime } from "../runtime/detect.ts";
import { show } from "../util/format.ts";
import { planCacheRegistry } from "./cufft-plan-cache.ts";
import type { CudnnMembers, NnpackMembers, WebGPUMembers } from "./package-members.ts";
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

export const VERBOSE = { VERBOSE_OFF: 0, VERBOSE_ON: 1 } as const;

function checkVersionPart(fn: string, name: string, v: unknown): void {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0)
    throw new ArgumentError(`mps.${fn}: ${name} must be an integer >= 0, got ${show(v)}`);
}

/** A member a backend package provides: until that package is imported, calling it says so. */
function fromPackage(member: string, pkg: string): () => never {
  return () => {
    throw new UnknownNamespaceError(
      `backends.${member} needs ${pkg} (npm i ${pkg}, then import it)`,
    );
  };
}

// Functions of each namespace (flags are added by namespaceObject from the schemas).
extendNamespace("cpu", {
  /** torch.backends.cpu.get_cpu_capability() */
  getCpuCapability: () => cpuCapabilityInfo().capability,
  /** Every feature behind the answer. */
  getCpuCapabilityInfo: () => cpuCapabilityInfo(),
  /** Times the CPU backends' kernels anew (after their init) and ranks them by the figures. */
  calibrate: async () => {
    await ready();
    return calibrate();
  },
  calibration: () => calibration(),
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
  isEnabled: () => namespaceStatus("mkl").available,
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
  isEnabled: () => namespaceStatus("openmp").available,
  /** Threads CPU kernels use: the setting, or the cores available when it is 0. */
  getNumThreads: () => (getFlag("openmp.numThreads") as number) || runtime().hardwareConcurrency,
  setNumThreads: (n: number) => {
    if (!Number.isInteger(n) || n < 1)
      throw new ArgumentError(`openmp.setNumThreads: n must be an integer >= 1, got ${show(n)}`);
    setFlag("openmp.numThreads", n);
  },
  /** `using _ = backends.openmp.numThreadsScope(1)` */
  numThreadsScope: (n: number) => openScope(checkChanges({ "openmp.numThreads": n })),
  /** backend-openmp's worker pool; none without it. */
  pool: () => undefined,
});
extendNamespace("optEinsum", {
  /** The path-finding API, once backend-opt-einsum is imported (torch returns the opt_einsum module or None). */
  getOptEinsum: () => undefined,
});
extendNamespace("xeon", { runCpu: fromPackage("xeon.runCpu", "@backplane/backend-openmp") });
// Typed in Backends (package-members.ts); each package replaces them as it registers.
// Record<keyof ...>: a member the type declares and no stub answers for fails to compile.
function stubs<M>(ns: string, pkg: string, members: Record<keyof M, true>): void {
  const names = Object.keys(members);
  extendNamespace(ns, Object.fromEntries(names.map((m) => [m, fromPackage(`${ns}.${m}`, pkg)])));
}
stubs<NnpackMembers>("nnpack", "@backplane/backend-nnpack", {
  algorithmFor: true,
  clearTransformCache: true,
  transformCacheInfo: true,
  setTransformCacheLimit: true,
  setTransformCacheEnabled: true,
});
stubs<CudnnMembers>("cudnn", "@backplane/backend-cudnn", {
  diagnostics: true,
  clearPlanCache: true,
  plans: true,
});
stubs<WebGPUMembers>("webgpu", "@backplane/backend-webgpu", { poolStats: true, emptyCache: true });
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
setFlagReadFilter("optEinsum.enabled", (v) => v === true && namespaceStatus("optEinsum").available);
extendNamespace("nn", {
  attention: { sdpaKernel, withSdpaKernel, SDPBackend },
});
namespaceObject("cusparselt");
