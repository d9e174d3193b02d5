/// <reference types="@webgpu/types" />
/**
 * The buffer pool: GPU buffers are created in size classes and, when a tensor lets go of
 * one, kept for the next request of the same class instead of destroyed. Reuse is safe
 * without waiting for the GPU because every use goes through the one queue, in order.
 */
import { DeviceError } from "@backplane/core";
import type { WebGPUPoolCounters } from "@backplane/core/backend";

/** GPUBufferUsage / GPUMapMode bits (the globals are absent on Node without polyfills). */
export const Usage = {
  MAP_READ: 0x1,
  COPY_SRC: 0x4,
  COPY_DST: 0x8,
  STORAGE: 0x80,
  QUERY_RESOLVE: 0x200,
} as const;
export const MAP_READ_MODE = 0x1;

const MIB = 2 ** 20;

/** The largest buffer this backend makes: maxBufferSize down to whole 4-byte words. */
export const largestBuffer = (maxBufferSize: number): number => Math.floor(maxBufferSize / 4) * 4;

/**
 * Size classes: 256 bytes at least, powers of two up to 1 MiB, then eighths of the next
 * power of two (at most 12.5% waste for big tensors). A class past the device's
 * `maxBufferSize` is capped at largestBuffer() for the requests that fit it (a buffer of
 * 1.9 GiB under a 2^31 - 1 limit would otherwise round up to 2 GiB, past the limit);
 * a request that does not fit keeps its class, above the limit.
 */
export function sizeClass(byteLength: number, maxBufferSize = Number.POSITIVE_INFINITY): number {
  if (byteLength <= 256) return 256;
  const p = 2 ** Math.ceil(Math.log2(byteLength));
  if (p <= MIB) return p;
  const step = p / 8;
  const size = Math.ceil(byteLength / step) * step;
  const cap = largestBuffer(maxBufferSize);
  return byteLength <= cap ? Math.min(size, cap) : size;
}

/** created, destroyed, requests, reused, live, pooled and peak (the core's type: poolStats()). */
export type PoolCounters = WebGPUPoolCounters;

export class BufferPool {
  private readonly free = new Map<number, GPUBuffer[]>();
  readonly stats: PoolCounters = {
    created: 0,
    destroyed: 0,
    requests: 0,
    reused: 0,
    liveBuffers: 0,
    liveBytes: 0,
    pooledBuffers: 0,
    pooledBytes: 0,
    peakBytes: 0,
  };

  constructor(
    private device: GPUDevice | undefined,
    readonly usage: number,
    readonly label: string,
    /** Most bytes kept in the pool; a buffer freed beyond it is destroyed. */
    public limitBytes: number,
  ) {}

  /**
   * A buffer of at least `byteLength` bytes; `size` is what it really has (its class).
   * A DeviceError where that is more than the device's maxBufferSize.
   */
  acquire(byteLength: number): { buffer: GPUBuffer; size: number } {
    const device = this.device;
    if (!device) throw new Error(`${this.label}: no device`);
    const max = device.limits.maxBufferSize;
    const size = sizeClass(byteLength, max);
    if (size > max)
      throw new DeviceError(
        `${this.label}: a buffer of ${byteLength} bytes is more than the device's maxBufferSize (${max}) allows (${largestBuffer(max)} bytes in whole 4-byte words)`,
      );
    const s = this.stats;
    s.requests++;
    const list = this.free.get(size);
    let buffer = list?.pop();
    if (buffer) {
      s.reused++;
      s.pooledBuffers--;
      s.pooledBytes -= size;
    } else {
      buffer = device.createBuffer({ size, usage: this.usage, label: `${this.label}:${size}` });
      s.created++;
    }
    s.liveBuffers++;
    s.liveBytes += size;
    const total = s.liveBytes + s.pooledBytes;
    if (total > s.peakBytes) s.peakBytes = total;
    return { buffer, size };
  }

  /** Gives a buffer back: pooled for reuse, or destroyed when the pool is full. */
  release(buffer: GPUBuffer, size: number): void {
    const s = this.stats;
    s.liveBuffers--;
    s.liveBytes -= size;
    if (!this.device) return; // the device is gone; so is the buffer
    if (s.pooledBytes + size > this.limitBytes) {
      buffer.destroy();
      s.destroyed++;
      return;
    }
    let list = this.free.get(size);
    if (!list) this.free.set(size, (list = []));
    list.push(buffer);
    s.pooledBuffers++;
    s.pooledBytes += size;
  }

  /** Destroys every pooled buffer (torch.cuda.empty_cache). Live buffers are untouched. */
  trim(): number {
    let freed = 0;
    for (const list of this.free.values()) {
      for (const b of list) {
        b.destroy();
        this.stats.destroyed++;
        freed += b.size;
      }
    }
    this.free.clear();
    this.stats.pooledBuffers = 0;
    this.stats.pooledBytes = 0;
    return freed;
  }

  /** Forgets the device (after it was destroyed): nothing pooled survives. */
  detach(): void {
    this.free.clear();
    this.device = undefined;
    const s = this.stats;
    s.pooledBuffers = 0;
    s.pooledBytes = 0;
  }

  resetPeak(): void {
    this.stats.peakBytes = this.stats.liveBytes + this.stats.pooledBytes;
  }
}
