/// <reference types="@webgpu/types" />
/**
 * The WebGPU backend's definition: the device state, the kernels, the namespace's API.
 * index.ts registers it.
 */
import { ArgumentError } from "@backplane/core";
import {
  type AnyKernelDefinition,
  type Availability,
  type BackendDefinition,
  bool,
  type WebGPUPoolStats as CoreWebGPUPoolStats,
  defineBackend,
  initBackends,
  mhaCompositions,
  restartInit,
  type WebGPUMembers,
} from "@backplane/core/backend";
import { getPools, pipelineCount } from "./exec.ts";
import {
  type AdapterInfo,
  closeDevice,
  config,
  type DeviceLimits,
  gpuState,
  isAvailableNow,
  openDevice,
  probe,
  type WebGPUConfig,
} from "./gpu.ts";
import { baseChecks, FLOAT_DTYPES } from "./kernels/common.ts";
import { conv2dKernel } from "./kernels/conv2d.ts";
import { elementwiseKernels } from "./kernels/elementwise.ts";
import { matmulKernel } from "./kernels/matmul.ts";
import { sdpaKernel } from "./kernels/sdpa.ts";
import { softmaxKernels } from "./kernels/softmax.ts";
import { webgpuMemory } from "./memory.ts";
import type { PoolCounters } from "./pool.ts";

export const WEBGPU_BACKEND = "webgpu";
const VERSION = "0.1.0";

/** What backends.webgpu.poolStats() returns (the core's type). */
export type WebGPUPoolStats = CoreWebGPUPoolStats;

const emptyCounters = (): PoolCounters => ({
  created: 0,
  destroyed: 0,
  requests: 0,
  reused: 0,
  liveBuffers: 0,
  liveBytes: 0,
  pooledBuffers: 0,
  pooledBytes: 0,
  peakBytes: 0,
});

/** The buffer pool's counters (GPU buffers, not tensors: memoryStats("webgpu") counts those). */
export function poolStats(): WebGPUPoolStats {
  const p = getPools();
  return {
    ...(p ? { ...p.storage.stats } : emptyCounters()),
    limitBytes: config.poolLimitBytes,
    staging: p ? { ...p.staging.stats } : emptyCounters(),
  };
}

/** Destroys every pooled (unused) buffer, as torch.cuda.empty_cache(). Returns the bytes freed. */
export function emptyCache(): number {
  const p = getPools();
  return p ? p.storage.trim() + p.staging.trim() : 0;
}

export interface WebGPUCapability {
  /** Where the GPU object came from: navigator.gpu, the webgpu package... */
  source: string;
  adapter: AdapterInfo;
  powerPreference: string;
  features: { shaderF16: boolean; timestampQuery: boolean; all: string[] };
  limits: DeviceLimits;
  /**
   * Loop iterations a shader invocation may run before the driver cuts its loops short
   * (65535 on llvmpipe), or null where none was seen; kernels past it refuse.
   */
  loopBudget: number | null;
  pipelines: number;
  pool: WebGPUPoolStats;
  /** Validation and out-of-memory errors the device reported outside any error scope (the last 100). */
  errors: string[];
}

/** Adapter, features and limits of the open device (undefined until it is open). */
export function webgpuCapability(): WebGPUCapability | undefined {
  const s = gpuState();
  if (!s) return undefined;
  return {
    source: s.source,
    adapter: { ...s.info },
    powerPreference: s.powerPreference,
    features: {
      shaderF16: s.f16,
      timestampQuery: s.timestamps,
      all: [...s.features].sort(),
    },
    limits: { ...s.limits },
    loopBudget: Number.isFinite(s.loopBudget) ? s.loopBudget : null,
    pipelines: pipelineCount(),
    pool: poolStats(),
    errors: [...s.errors],
  };
}

/**
 * Opens the device if it is not open yet and says whether WebGPU works here, with the
 * reason when not ("navigator.gpu is undefined", "requestAdapter() returned null", "the
 * webgpu package is not installed"). Never throws. Tests use it to skip.
 */
export function webgpuAvailability(): Promise<Availability> {
  return probe();
}

/**
 * Settings read when the device opens (a GPU object to use, Dawn options); the pool limit
 * applies at once. Call reinitialize() for the others to take effect on an open device.
 */
export function configureWebGPU(c: WebGPUConfig): void {
  checkConfig(c);
  if ("gpu" in c) config.gpu = c.gpu ?? undefined;
  if (c.dawnOptions !== undefined) config.dawnOptions = [...c.dawnOptions];
  if (c.poolLimitBytes !== undefined) {
    config.poolLimitBytes = c.poolLimitBytes;
    const p = getPools();
    if (p) p.storage.limitBytes = c.poolLimitBytes;
  }
}

const CONFIG_KEYS = ["gpu", "dawnOptions", "poolLimitBytes"];

/**
 * An ArgumentError for what configureWebGPU() cannot use, before anything is changed: a
 * string pool limit disabled the limit (every comparison with it false), a string of Dawn
 * options was spread into single characters, a misspelt key was ignored.
 */
function checkConfig(c: unknown): asserts c is WebGPUConfig {
  const what = "configureWebGPU";
  if (typeof c !== "object" || c === null || Array.isArray(c))
    throw new ArgumentError(
      `${what}: expected an object ({ gpu, dawnOptions, poolLimitBytes }), got ${String(c)}`,
    );
  const o = c as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !CONFIG_KEYS.includes(k));
  if (unknown.length > 0)
    throw new ArgumentError(
      `${what}: unknown option ${unknown.join(", ")}; the options are ${CONFIG_KEYS.join(", ")}`,
    );
  const { gpu, dawnOptions, poolLimitBytes } = o;
  if (gpu != null && (typeof gpu !== "object" || typeof (gpu as GPU).requestAdapter !== "function"))
    throw new ArgumentError(
      `${what}: gpu must be a GPU object (with requestAdapter()), or null to go back to navigator.gpu / the webgpu package`,
    );
  if (
    dawnOptions !== undefined &&
    !(Array.isArray(dawnOptions) && dawnOptions.every((x) => typeof x === "string"))
  )
    throw new ArgumentError(
      `${what}: dawnOptions must be an array of strings (["backend=vulkan"]), got ${JSON.stringify(dawnOptions)}`,
    );
  if (
    poolLimitBytes !== undefined &&
    !(typeof poolLimitBytes === "number" && Number.isFinite(poolLimitBytes) && poolLimitBytes >= 0)
  )
    throw new ArgumentError(
      `${what}: poolLimitBytes must be a finite number of bytes >= 0 (0 pools nothing), got ${String(poolLimitBytes)}`,
    );
}

/**
 * Closes the device (every webgpu tensor becomes unusable) and opens a new one on next
 * use, reading backends.webgpu.powerPreference and configureWebGPU() again.
 */
export async function reinitialize(): Promise<Availability> {
  closeDevice();
  restartInit(WEBGPU_BACKEND);
  await initBackends(WEBGPU_BACKEND).catch(() => {});
  return probe();
}

/** The GPUDevice in use, for interop (undefined until open). */
export function webgpuDevice(): GPUDevice | undefined {
  return gpuState()?.device;
}

export const webgpuKernels: AnyKernelDefinition[] = [
  matmulKernel,
  ...elementwiseKernels,
  ...softmaxKernels,
  conv2dKernel,
  sdpaKernel,
  // multiHeadAttention: the core's compositions, each step (matmul, add, sdpa) on the WGSL
  // kernels, gated as they are (an open device; float16 only with shader-f16).
  ...(mhaCompositions("webgpu", FLOAT_DTYPES, (p) => {
    const s = baseChecks(p.dtype, [p.query, p.key, p.value], 0);
    return typeof s === "string" ? s : true;
  }) as AnyKernelDefinition[]),
];

export const webgpuBackend: BackendDefinition = defineBackend({
  name: WEBGPU_BACKEND,
  namespaces: ["webgpu"],
  devices: ["webgpu"],
  packageName: "@backplane/backend-webgpu",
  version: () => VERSION,
  isAvailable: isAvailableNow,
  capability: webgpuCapability,
  flags: {
    webgpu: {
      verbose: bool(false, {
        env: "BACKPLANE_WEBGPU_VERBOSE",
        doc: "trace webgpu kernels with their GPU time (timestamp queries where available)",
      }),
    },
  },
  kernels: webgpuKernels,
  memories: [webgpuMemory],
  api: {
    webgpu: {
      // The core types these two on backends.webgpu (WebGPUMembers): satisfies keeps them so.
      ...({ poolStats, emptyCache } satisfies WebGPUMembers),
      availability: webgpuAvailability,
      configure: configureWebGPU,
      reinitialize,
      device: webgpuDevice,
    },
  },
  async init() {
    await openDevice();
  },
});
