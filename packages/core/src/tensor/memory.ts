/**
 * The device memory contract. Each device type (cpu, cuda, webgpu, mps, or one a third
 * party adds) has one DeviceMemory; tensors hold a handle from it and never look inside.
 * Sync forms are optional because some devices (WebGPU) can only read back asynchronously.
 */

import { ArgumentError, DeviceError } from "../errors.ts";
import { show } from "../util/format.ts";
import type { DType } from "./dtype.ts";

export interface MemoryStats {
  /** Bytes currently held by live storages. */
  allocatedBytes: number;
  /** Highest allocatedBytes since start or the last resetPeak(). */
  peakBytes: number;
  /** Live storages. */
  liveBuffers: number;
  /** Allocations made since start. */
  totalAllocations: number;
}

export interface DeviceMemory<H = unknown> {
  /** Device type this memory serves: "cpu", "cuda", "webgpu"... */
  readonly deviceType: string;
  /** True when `hostView` gives zero-copy access (CPU memory, WASM memory). */
  readonly hostVisible: boolean;
  allocate(byteLength: number, device: string): H;
  free(handle: H): void;
  /** Host -> device. May only enqueue (a CUDA stream, a WebGPU queue); `sync()` waits. */
  upload(handle: H, byteOffset: number, src: Uint8Array): void;
  /** Device -> host, always available. */
  download(handle: H, byteOffset: number, byteLength: number): Promise<Uint8Array>;
  /** Device -> host without awaiting, where the device allows it. */
  downloadSync?(handle: H, byteOffset: number, byteLength: number): Uint8Array;
  /** Device -> device within this memory. */
  copy(src: H, srcOffset: number, dst: H, dstOffset: number, byteLength: number): void;
  /** Waits for enqueued work on `device`. */
  sync(device: string): Promise<void>;
  /** Zero-copy bytes of a host-visible handle. */
  hostView?(handle: H, byteOffset: number, byteLength: number): Uint8Array;
  /**
   * On the device, dst[i] = src[offset + sum(index_d * strides[d])] for every row-major
   * index of `shape` (offset and strides in elements of `elementBytes`): how contiguous()
   * and to() copy a strided view of memory that is not host-visible.
   */
  gather?(
    src: H,
    offset: number,
    shape: readonly number[],
    strides: readonly number[],
    elementBytes: number,
    dst: H,
  ): void;
  /**
   * On the device, dst[i] = src[...] (walked as gather() walks it) converted from `from`
   * to `to` with the rounding the host's astype() applies: how astype() converts memory
   * that is not host-visible and cannot be read synchronously. Throws a DTypeError for a
   * pair it does not convert.
   */
  convert?(
    src: H,
    offset: number,
    shape: readonly number[],
    strides: readonly number[],
    from: DType,
    to: DType,
    dst: H,
  ): void;
}

/** One allocation, shared by a tensor and its views; freed when the last holder lets go. */
export class Storage {
  refs = 1;
  freed = false;
  constructor(
    readonly memory: DeviceMemory,
    readonly handle: unknown,
    readonly byteLength: number,
    readonly device: string,
  ) {}
  retain(): void {
    this.refs++;
  }
  release(): void {
    if (this.freed || --this.refs > 0) return;
    this.freed = true;
    this.memory.free(this.handle);
    const s = statsOf(this.device);
    s.allocatedBytes -= this.byteLength;
    s.liveBuffers--;
  }
}

const memories = new Map<string, DeviceMemory>();
const stats = new Map<string, MemoryStats>();

const zeroStats = (): MemoryStats => ({
  allocatedBytes: 0,
  peakBytes: 0,
  liveBuffers: 0,
  totalAllocations: 0,
});

function statsOf(device: string): MemoryStats {
  let s = stats.get(device);
  if (!s) stats.set(device, (s = zeroStats()));
  return s;
}

/** Makes `memory` the allocator for its device type (a backend does this when imported). */
export function registerDeviceMemory(memory: DeviceMemory): void {
  memories.set(memory.deviceType, memory);
}

export function deviceMemory(deviceType: string): DeviceMemory | undefined {
  return memories.get(deviceType);
}

export function deviceTypes(): string[] {
  return [...memories.keys()];
}

let allocationHook: ((storage: Storage) => void) | undefined;

/**
 * Calls `hook` with every new storage, before a kernel sees it (the testkit fills new
 * memory with NaN bytes so an element a kernel forgets to write shows). Returns the previous hook.
 */
export function setAllocationHook(
  hook: ((storage: Storage) => void) | undefined,
): ((storage: Storage) => void) | undefined {
  const prev = allocationHook;
  allocationHook = hook;
  return prev;
}

export function allocateStorage(deviceName: string, byteLength: number): Storage {
  // Normalized as memoryStats() reads it: "cuda" (not "cuda:0") or "cpu:0" counted apart.
  const device = normalizeDevice(deviceName);
  const type = deviceTypeOf(device);
  const memory = memories.get(type);
  if (!memory) {
    throw new DeviceError(
      `no backend provides device ${show(device)}; known devices: ${deviceTypes().join(", ")}` +
        (type === "cuda" || type === "webgpu" || type === "mps"
          ? `. Install and import @backplane/backend-${type}`
          : ""),
    );
  }
  // (a NaN size made every later memoryStats() of the device NaN)
  if (!Number.isSafeInteger(byteLength) || byteLength < 0)
    throw new ArgumentError(
      `allocateStorage: byteLength must be an integer >= 0, got ${show(byteLength)}`,
    );
  const handle = memory.allocate(byteLength, device);
  const s = statsOf(device);
  s.allocatedBytes += byteLength;
  s.liveBuffers++;
  s.totalAllocations++;
  if (s.allocatedBytes > s.peakBytes) s.peakBytes = s.allocatedBytes;
  const storage = new Storage(memory, handle, byteLength, device);
  try {
    allocationHook?.(storage);
  } catch (e) {
    // Nobody holds the storage yet: give it back, or the statistics count it forever.
    storage.release();
    throw e;
  }
  return storage;
}

/** Memory statistics of one device ("cpu", "cuda:0"), or of every device used so far. */
export function memoryStats(device: string): MemoryStats;
export function memoryStats(): Record<string, MemoryStats>;
export function memoryStats(device?: string): MemoryStats | Record<string, MemoryStats> {
  // Asking about a device does not add it to the record of every device used.
  if (device !== undefined) return { ...(stats.get(normalizeDevice(device)) ?? zeroStats()) };
  return Object.fromEntries([...stats].map(([k, v]) => [k, { ...v }]));
}

export function resetPeakMemory(device: string): void {
  const s = stats.get(normalizeDevice(device));
  if (s) s.peakBytes = s.allocatedBytes;
}

const normalized = new Map<string, string>([["cpu", "cpu"]]);

/** "cuda" -> "cuda:0"; "cpu" and "cpu:N" are "cpu". Throws on malformed names. */
export function normalizeDevice(device: unknown): string {
  const hit = normalized.get(device as string);
  if (hit !== undefined) return hit;
  if (typeof device !== "string" || !/^[a-z][a-z0-9_-]*(:\d+)?$/.test(device)) {
    throw new DeviceError(
      `device must be a string like "cpu", "cuda:0" or "webgpu", got ${show(device)}`,
    );
  }
  // The CPU is one device whatever its index, as torch's "cpu:0" (cpu:0 and cpu were two
  // devices: add(a, b) across them threw, memoryStats split them).
  const name = device === "cuda" ? "cuda:0" : deviceTypeOf(device) === "cpu" ? "cpu" : device;
  if (normalized.size < 256) normalized.set(device, name);
  return name;
}

export function deviceTypeOf(device: string): string {
  const i = device.indexOf(":");
  return i < 0 ? device : device.slice(0, i);
}

/** The core's CPU memory: plain ArrayBuffers. backend-cpu-mkl replaces it with WASM memory. */
export const jsCpuMemory: DeviceMemory<ArrayBuffer> = {
  deviceType: "cpu",
  hostVisible: true,
  allocate: (n) => new ArrayBuffer(n),
  free: () => {},
  upload: (h, off, src) => new Uint8Array(h, off, src.byteLength).set(src),
  download: async (h, off, n) => new Uint8Array(h, off, n).slice(),
  downloadSync: (h, off, n) => new Uint8Array(h, off, n).slice(),
  copy: (src, so, dst, doff, n) => new Uint8Array(dst, doff, n).set(new Uint8Array(src, so, n)),
  sync: async () => {},
  hostView: (h, off, n) => new Uint8Array(h, off, n),
};
registerDeviceMemory(jsCpuMemory);
