/// <reference types="@webgpu/types" />
/**
 * Finding a GPU and opening the device: navigator.gpu (browsers, Deno) or the `webgpu`
 * npm package (dawn.node) on Node and Bun, imported lazily. isAvailable() is synchronous,
 * so it answers from what it can see at once (is there a navigator.gpu, is the package
 * installed) and from the last probe; the adapter itself is requested by init().
 */

import { getFlag, refreshAvailability, runtime } from "@backplane/core";
import type { Availability } from "@backplane/core/backend";
import { builtinModule, host } from "@backplane/core/cpu";
import { preferVulkanOnDeno } from "./deno-vulkan.ts";
import { measureLoopBudget } from "./loop-budget.ts";
import { driverOutput, withNativeStderrCaptured } from "./native-stderr.ts";

/** Device-level facts every kernel reads (limits are the device's, after requestDevice). */
export interface GpuState {
  /** Which device this is (1, 2... after reinitialize()); storages remember theirs. */
  readonly generation: number;
  readonly gpu: GPU;
  /** Where the GPU object came from. */
  readonly source: string;
  readonly adapter: GPUAdapter;
  readonly device: GPUDevice;
  readonly info: AdapterInfo;
  /** Features enabled on the device. */
  readonly features: ReadonlySet<string>;
  readonly limits: DeviceLimits;
  readonly f16: boolean;
  readonly timestamps: boolean;
  readonly powerPreference: GPUPowerPreference;
  /**
   * Loop iterations one invocation may run before the driver cuts its loops short
   * (65,535 on llvmpipe); Infinity where none was seen (loop-budget.ts).
   */
  readonly loopBudget: number;
  /** Set when the device was lost; kernels refuse with it. */
  lost?: string;
  /** Validation / out-of-memory errors the device reported that nobody caught. */
  readonly errors: string[];
}

export interface AdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
}

/** The limits kernels check in supports(). */
export interface DeviceLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupStorageSize: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupSizeX: number;
  maxComputeWorkgroupSizeY: number;
  maxComputeWorkgroupsPerDimension: number;
  maxStorageBuffersPerShaderStage: number;
  minStorageBufferOffsetAlignment: number;
}

const LIMIT_NAMES: (keyof DeviceLimits)[] = [
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupsPerDimension",
  "maxStorageBuffersPerShaderStage",
  "minStorageBufferOffsetAlignment",
];
/** Limits we ask the adapter's maximum of (the rest stay at the WebGPU defaults). */
const RAISED: (keyof DeviceLimits)[] = [
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxStorageBuffersPerShaderStage",
];

export interface WebGPUConfig {
  /** A GPU object to use instead of navigator.gpu / the webgpu package (tests, custom setups); null: back to those. */
  gpu?: GPU | null;
  /** Options for the webgpu package's create() (Dawn toggles, "backend=vulkan", "adapter=..."). */
  dawnOptions?: string[];
  /** Most bytes the buffer pool keeps for reuse before it destroys freed buffers (default 256 MiB). */
  poolLimitBytes?: number;
}

export const config: Required<Omit<WebGPUConfig, "gpu">> & { gpu?: GPU } = {
  dawnOptions: [],
  poolLimitBytes: 256 * 2 ** 20,
};

let state: GpuState | undefined;
let generation = 0;
let opening: Promise<GpuState> | undefined;
/** The last probe's verdict: undefined until init() has run once. */
let verdict: Availability | undefined;
const onOpen = new Set<(s: GpuState) => void>();
const onClose = new Set<() => void>();

export function gpuState(): GpuState | undefined {
  return state;
}

/** Hooks for the memory and the pipeline cache, which hold per-device objects. */
export function onDeviceOpen(f: (s: GpuState) => void): void {
  onOpen.add(f);
}
export function onDeviceClose(f: () => void): void {
  onClose.add(f);
}

const g = host;
const isServerJs = () => runtime().name === "node" || runtime().name === "bun";

function nodeRequireResolve(spec: string): string | undefined {
  try {
    const mod = builtinModule<typeof import("node:module")>("node:module");
    if (!mod?.createRequire) return "(unknown)"; // cannot tell synchronously: let init() try
    return mod.createRequire(import.meta.url).resolve(spec);
  } catch {
    return undefined;
  }
}

/** What isAvailable() can see without awaiting. */
export interface StaticEnvironment {
  runtime: string;
  /** A GPU object was given with configureWebGPU({ gpu }). */
  configured: boolean;
  hasNavigatorGpu: boolean;
  /** Whether the webgpu package resolves (Node, Bun); undefined: cannot tell synchronously. */
  packageResolves: boolean | undefined;
}

/** The verdict from what can be seen at once; the adapter itself is checked by init(). */
export function staticAvailability(env: StaticEnvironment): Availability {
  if (env.configured || env.hasNavigatorGpu) return { available: true };
  if (env.runtime === "node" || env.runtime === "bun") {
    if (env.packageResolves === false) {
      return {
        available: false,
        reason: `the webgpu package is not installed: ${env.runtime} has no navigator.gpu; npm i webgpu (Dawn's Node bindings) to use WebGPU here`,
      };
    }
    return { available: true };
  }
  return {
    available: false,
    reason:
      "navigator.gpu is undefined: this runtime or browser has no WebGPU (browsers expose it only in secure contexts)",
  };
}

/** Synchronous availability: the last probe's verdict, else what can be seen without awaiting. */
export function isAvailableNow(): Availability {
  if (verdict) return verdict;
  const name = runtime().name;
  const server = name === "node" || name === "bun";
  const resolved = server && !g.navigator?.gpu && !config.gpu ? nodeRequireResolve("webgpu") : "";
  return staticAvailability({
    runtime: name,
    configured: config.gpu !== undefined,
    hasNavigatorGpu: Boolean(g.navigator?.gpu),
    packageResolves: resolved === "(unknown)" ? undefined : resolved !== undefined,
  });
}

async function acquireGpu(): Promise<{ gpu: GPU; source: string }> {
  if (config.gpu) return { gpu: config.gpu, source: "configureWebGPU({ gpu })" };
  if (g.navigator?.gpu) return { gpu: g.navigator.gpu as GPU, source: "navigator.gpu" };
  if (!isServerJs()) throw new Error("navigator.gpu is undefined");
  // A variable specifier keeps bundlers and Deno's graph from resolving the optional peer.
  const spec = "webgpu";
  let mod: { create(options: string[]): GPU };
  try {
    mod = await import(/* @vite-ignore */ spec);
  } catch (e) {
    const msg = (e as Error)?.message ?? String(e);
    throw new Error(
      /cannot find|not found|ERR_MODULE_NOT_FOUND/i.test(msg)
        ? "the webgpu package is not installed (npm i webgpu)"
        : `the webgpu package did not load: ${msg}`,
    );
  }
  return {
    gpu: mod.create(config.dawnOptions),
    source: `webgpu package (dawn.node) on ${runtime().name}`,
  };
}

function adapterInfo(adapter: GPUAdapter): AdapterInfo {
  // info and isFallbackAdapter are newer than some implementations: read them defensively.
  const a = adapter as GPUAdapter & { info?: Partial<GPUAdapterInfo>; isFallbackAdapter?: boolean };
  const i: Partial<GPUAdapterInfo> & { isFallbackAdapter?: boolean } = a.info ?? {};
  return {
    vendor: String(i.vendor ?? ""),
    architecture: String(i.architecture ?? ""),
    device: String(i.device ?? ""),
    description: String(i.description ?? ""),
    isFallbackAdapter: Boolean(i.isFallbackAdapter ?? a.isFallbackAdapter ?? false),
  };
}

/** The adapter and device, from whichever GPU object this runtime has. */
async function requestGpuDevice() {
  const { gpu, source } = await acquireGpu();
  const vulkanOnly = source === "navigator.gpu" ? preferVulkanOnDeno() : undefined;
  const powerPreference = getFlag("webgpu.powerPreference") as GPUPowerPreference;
  const adapter = await gpu.requestAdapter({ powerPreference });
  if (!adapter)
    throw new Error(
      `requestAdapter() returned null (${source})${vulkanOnly ? `; ${vulkanOnly}` : ""}${noAdapterHint()}`,
    );
  const wanted = ["shader-f16", "timestamp-query"].filter((f) =>
    adapter.features.has(f as GPUFeatureName),
  );
  const requiredLimits: Record<string, number> = {};
  for (const k of RAISED) {
    const v = (adapter.limits as unknown as Record<string, unknown>)[k];
    if (typeof v === "number") requiredLimits[k] = v;
  }
  const device = await adapter.requestDevice({
    requiredFeatures: wanted as GPUFeatureName[],
    requiredLimits,
    label: "backplane",
  });
  return { gpu, source, adapter, device, powerPreference };
}

function noAdapterHint(): string {
  if (isServerJs() && runtime().platform === "linux")
    return "; without a GPU, point VK_ICD_FILENAMES at a software Vulkan driver (SwiftShader's vk_swiftshader_icd.json, see ci-setup.sh)";
  if (runtime().name === "deno" && runtime().platform === "linux")
    return "; without a GPU, install a software Vulkan driver (apt-get install mesa-vulkan-drivers: lavapipe)";
  return "";
}

async function open(): Promise<GpuState> {
  // dawn.node's drivers write to fd 2 while probing: kept out of the user's terminal.
  const quiet = isServerJs() && !config.gpu && !g.navigator?.gpu;
  let opened: Awaited<ReturnType<typeof requestGpuDevice>>;
  try {
    opened = quiet ? await withNativeStderrCaptured(requestGpuDevice) : await requestGpuDevice();
  } catch (e) {
    // What the drivers said goes with the reason, into status().detail.
    const said = quiet ? driverOutput() : "";
    throw said ? Object.assign(e as Error, { detail: `${(e as Error).message}\n${said}` }) : e;
  }
  const { gpu, source, adapter, device, powerPreference } = opened;
  const limits = {} as DeviceLimits;
  for (const k of LIMIT_NAMES)
    limits[k] = Number((device.limits as unknown as Record<string, unknown>)[k]);
  const features = new Set<string>([...device.features] as string[]);
  const s: GpuState = {
    generation: ++generation,
    gpu,
    source,
    adapter,
    device,
    info: adapterInfo(adapter),
    features,
    limits,
    f16: features.has("shader-f16"),
    timestamps: features.has("timestamp-query"),
    powerPreference,
    loopBudget: await measureLoopBudget(device).catch(() => Number.POSITIVE_INFINITY),
    errors: [],
  };
  // (typed loosely: Deno's and the DOM's GPUUncapturedErrorEvent types differ)
  const onError = (event: unknown) => {
    const ev = event as { error?: { message?: string }; message?: string };
    const msg = String(ev?.error?.message ?? ev?.message ?? ev);
    if (s.errors.length < 100) s.errors.push(msg);
    if (s.errors.length <= 5) console.error(`[backplane] webgpu: ${msg}`);
  };
  if (typeof device.addEventListener === "function")
    device.addEventListener("uncapturederror", onError);
  // (older implementations only have the handler property; not every type set declares it)
  else
    (device as GPUDevice & { onuncapturederror?: (e: Event) => void }).onuncapturederror = onError;
  device.lost.then((info) => {
    if (state !== s) return; // closed on purpose
    s.lost = `the webgpu device was lost (${info.reason}): ${info.message}`;
    verdict = { available: false, reason: s.lost };
    refreshAvailability();
  });
  return s;
}

/** Opens the device once; later calls share it. A failure is remembered as the reason. */
export function openDevice(): Promise<GpuState> {
  if (state) return Promise.resolve(state);
  if (!opening) {
    opening = open().then(
      (s) => {
        state = s;
        verdict = { available: true };
        for (const f of onOpen) f(s);
        return s;
      },
      (e) => {
        const reason = (e as Error)?.message ?? String(e);
        const detail = (e as { detail?: string })?.detail;
        verdict = { available: false, reason, ...(detail ? { detail } : {}) };
        opening = undefined;
        refreshAvailability();
        throw Object.assign(new Error(reason), detail ? { detail } : {});
      },
    );
  }
  return opening;
}

/** Probes (opening the device if none is open): available, or the reason. Never throws. */
export async function probe(): Promise<Availability> {
  if (state) return { available: true };
  if (verdict && !verdict.available) return verdict;
  const now = isAvailableNow();
  if (!now.available) return now;
  try {
    await openDevice();
    return { available: true };
  } catch {
    return verdict ?? { available: false, reason: "unknown" };
  }
}

/** Destroys the device (every webgpu tensor becomes unusable) and forgets the verdict. */
export function closeDevice(): void {
  const s = state;
  state = undefined;
  opening = undefined;
  verdict = undefined;
  for (const f of onClose) f();
  s?.device.destroy();
}

export function requireState(what: string): GpuState {
  const s = state;
  if (!s)
    throw new Error(
      `${what}: the webgpu device is not open; await backends.ready() (or ready("webgpu")) first${verdict && !verdict.available ? ` (${verdict.reason})` : ""}`,
    );
  if (s.lost) throw new Error(`${what}: ${s.lost}`);
  return s;
}
