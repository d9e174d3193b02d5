/**
 * A caching device allocator in the spirit of PyTorch's CUDACachingAllocator: requests are
 * rounded to 512-byte multiples and served from segments obtained with cuMemAlloc; freed
 * blocks stay cached for reuse (best fit, split when the remainder is worth keeping, merged
 * with free neighbours); requests of at most 1 MiB come from 2 MiB segments (the small pool),
 * larger ones from 20 MiB segments below 10 MiB and from segments rounded to 2 MiB above.
 * When cuMemAlloc runs out of memory the cache is released and the allocation retried once.
 * emptyCache() gives unused segments back; stats() reports what torch.cuda.memory_stats() does.
 *
 * All work of a device is ordered on one stream (driver.ts), so a block freed by the host can
 * be handed to the next request at once: any kernel that still reads it was enqueued earlier
 * on the same stream.
 */
import { ArgumentError, DeviceError } from "@backplane/core";
import { CudaError, CudaOutOfMemoryError } from "./errors.ts";

export const MIN_BLOCK_SIZE = 512;
export const SMALL_SIZE = 1 << 20;
export const SMALL_BUFFER = 2 << 20;
export const MIN_LARGE_ALLOC = 10 << 20;
export const LARGE_BUFFER = 20 << 20;
export const ROUND_LARGE = 2 << 20;

/** Where the allocator gets and returns device memory (cuMemAlloc/cuMemFree on one device). */
export interface RawDeviceMemory {
  malloc(bytes: number): bigint;
  free(ptr: bigint): void;
  /** Waits for the device's stream (before memory goes back to the driver). */
  synchronize(): void;
  /** Total memory of the device, for messages. */
  totalMemory?(): number;
}

export type PoolName = "small" | "large";

export interface Segment {
  readonly ptr: bigint;
  readonly size: number;
  readonly pool: PoolName;
}

export interface Block {
  readonly ptr: bigint;
  size: number;
  /** Bytes the caller asked for (size is rounded). */
  requested: number;
  readonly segment: Segment;
  allocated: boolean;
  prev: Block | undefined;
  next: Block | undefined;
}

export interface Stat {
  current: number;
  peak: number;
  allocated: number;
  freed: number;
}

export interface AllocatorStats {
  /** Bytes in blocks handed out (rounded sizes). */
  allocatedBytes: Stat;
  /** Bytes the callers asked for. */
  requestedBytes: Stat;
  /** Bytes in segments obtained from the driver. */
  reservedBytes: Stat;
  /** Free bytes inside segments that also hold allocated blocks. */
  inactiveSplitBytes: Stat;
  allocations: Stat;
  segments: Stat;
  /** Allocations served from the cache without a cuMemAlloc. */
  cacheHits: number;
  /** cuMemAlloc failures that released the cache and retried. */
  numAllocRetries: number;
  /** Allocations that failed even after the retry. */
  numOoms: number;
}

const newStat = (): Stat => ({ current: 0, peak: 0, allocated: 0, freed: 0 });

function add(s: Stat, n: number): void {
  s.current += n;
  if (n > 0) s.allocated += n;
  else s.freed -= n;
  if (s.current > s.peak) s.peak = s.current;
}

/** Requests rounded to multiples of 512 bytes (at least 512). */
export function roundSize(bytes: number): number {
  if (bytes < MIN_BLOCK_SIZE) return MIN_BLOCK_SIZE;
  return Math.ceil(bytes / MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE;
}

export function poolFor(size: number): PoolName {
  return size <= SMALL_SIZE ? "small" : "large";
}

/** The segment size cuMemAlloc is asked for when no cached block fits a rounded request. */
export function segmentSize(size: number): number {
  if (size <= SMALL_SIZE) return SMALL_BUFFER;
  if (size < MIN_LARGE_ALLOC) return LARGE_BUFFER;
  return Math.ceil(size / ROUND_LARGE) * ROUND_LARGE;
}

function shouldSplit(block: Block, size: number): boolean {
  const remaining = block.size - size;
  return block.segment.pool === "small" ? remaining >= MIN_BLOCK_SIZE : remaining > SMALL_SIZE;
}

function formatBytes(n: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} bytes` : `${v.toFixed(2)} ${units[i]}`;
}

/** Free blocks of one pool, sorted by (size, address). */
class FreeList {
  readonly blocks: Block[] = [];
  private index(b: Block): number {
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const m = this.blocks[mid]!;
      if (m.size < b.size || (m.size === b.size && m.ptr < b.ptr)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  insert(b: Block): void {
    this.blocks.splice(this.index(b), 0, b);
  }
  remove(b: Block): void {
    const i = this.blocks.indexOf(b);
    if (i >= 0) this.blocks.splice(i, 1);
  }
  /** The smallest block of at least `size` bytes. */
  bestFit(size: number): Block | undefined {
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.blocks[mid]!.size < size) lo = mid + 1;
      else hi = mid;
    }
    return this.blocks[lo];
  }
}

export class CachingAllocator {
  private readonly pools: Record<PoolName, FreeList> = {
    small: new FreeList(),
    large: new FreeList(),
  };
  private readonly segments = new Set<Segment>();
  private readonly heads = new Map<Segment, Block>();
  private readonly s: AllocatorStats = {
    allocatedBytes: newStat(),
    requestedBytes: newStat(),
    reservedBytes: newStat(),
    inactiveSplitBytes: newStat(),
    allocations: newStat(),
    segments: newStat(),
    cacheHits: 0,
    numAllocRetries: 0,
    numOoms: 0,
  };

  constructor(
    readonly device: number,
    private readonly raw: RawDeviceMemory,
  ) {}

  /** A block of at least `bytes` bytes (a zero-byte request still gets a distinct block). */
  malloc(bytes: number): Block {
    if (!(Number.isSafeInteger(bytes) && bytes >= 0))
      throw new ArgumentError(
        `cuda allocator: byte count must be a non-negative integer, got ${bytes}`,
      );
    const size = roundSize(bytes);
    const pool = poolFor(size);
    let block = this.pools[pool].bestFit(size);
    if (block) {
      this.pools[pool].remove(block);
      if (this.isSplit(block)) add(this.s.inactiveSplitBytes, -block.size);
      this.s.cacheHits++;
    } else {
      block = this.newSegment(size, pool);
    }
    if (shouldSplit(block, size)) {
      const rest: Block = {
        ptr: block.ptr + BigInt(size),
        size: block.size - size,
        requested: 0,
        segment: block.segment,
        allocated: false,
        prev: block,
        next: block.next,
      };
      if (block.next) block.next.prev = rest;
      block.next = rest;
      block.size = size;
      this.pools[pool].insert(rest);
      add(this.s.inactiveSplitBytes, rest.size);
    }
    block.allocated = true;
    block.requested = bytes;
    add(this.s.allocatedBytes, block.size);
    add(this.s.requestedBytes, bytes);
    add(this.s.allocations, 1);
    return block;
  }

  /** Returns a block to the cache, merging it with free neighbours. */
  free(block: Block): void {
    if (!block.allocated)
      throw new DeviceError(`cuda allocator: double free of block at 0x${block.ptr.toString(16)}`);
    block.allocated = false;
    add(this.s.allocatedBytes, -block.size);
    add(this.s.requestedBytes, -block.requested);
    add(this.s.allocations, -1);
    block.requested = 0;
    const pool = this.pools[block.segment.pool];
    let merged = block;
    for (const neighbour of [block.prev, block.next]) {
      if (!neighbour || neighbour.allocated) continue;
      pool.remove(neighbour);
      add(this.s.inactiveSplitBytes, -neighbour.size);
      if (neighbour === merged.prev) {
        neighbour.size += merged.size;
        neighbour.next = merged.next;
        if (merged.next) merged.next.prev = neighbour;
        merged = neighbour;
      } else {
        merged.size += neighbour.size;
        merged.next = neighbour.next;
        if (neighbour.next) neighbour.next.prev = merged;
      }
    }
    if (!merged.prev) this.heads.set(merged.segment, merged);
    pool.insert(merged);
    if (this.isSplit(merged)) add(this.s.inactiveSplitBytes, merged.size);
  }

  /** Gives every cached segment with nothing allocated in it back to the driver. */
  emptyCache(): void {
    const free: Block[] = [];
    for (const seg of this.segments) {
      const head = this.heads.get(seg)!;
      if (!head.allocated && !head.next) free.push(head);
    }
    if (free.length === 0) return;
    this.raw.synchronize();
    for (const b of free) {
      this.pools[b.segment.pool].remove(b);
      this.segments.delete(b.segment);
      this.heads.delete(b.segment);
      this.raw.free(b.segment.ptr);
      add(this.s.reservedBytes, -b.segment.size);
      add(this.s.segments, -1);
    }
  }

  stats(): AllocatorStats {
    const copy = (x: Stat): Stat => ({ ...x });
    return {
      allocatedBytes: copy(this.s.allocatedBytes),
      requestedBytes: copy(this.s.requestedBytes),
      reservedBytes: copy(this.s.reservedBytes),
      inactiveSplitBytes: copy(this.s.inactiveSplitBytes),
      allocations: copy(this.s.allocations),
      segments: copy(this.s.segments),
      cacheHits: this.s.cacheHits,
      numAllocRetries: this.s.numAllocRetries,
      numOoms: this.s.numOoms,
    };
  }

  /** torch.cuda.reset_peak_memory_stats: peaks become the current values. */
  resetPeakStats(): void {
    for (const k of [
      "allocatedBytes",
      "requestedBytes",
      "reservedBytes",
      "inactiveSplitBytes",
      "allocations",
      "segments",
    ] as const) {
      this.s[k].peak = this.s[k].current;
    }
  }

  /** Every segment and its blocks, in address order (torch.cuda.memory_snapshot). */
  snapshot(): {
    ptr: bigint;
    size: number;
    pool: PoolName;
    blocks: { ptr: bigint; size: number; allocated: boolean }[];
  }[] {
    return [...this.segments]
      .sort((a, b) => (a.ptr < b.ptr ? -1 : 1))
      .map((seg) => {
        const blocks: { ptr: bigint; size: number; allocated: boolean }[] = [];
        for (let b = this.heads.get(seg); b; b = b.next)
          blocks.push({ ptr: b.ptr, size: b.size, allocated: b.allocated });
        return { ptr: seg.ptr, size: seg.size, pool: seg.pool, blocks };
      });
  }

  private isSplit(b: Block): boolean {
    return b.prev !== undefined || b.next !== undefined;
  }

  private newSegment(size: number, pool: PoolName): Block {
    const bytes = segmentSize(size);
    let ptr: bigint;
    try {
      ptr = this.raw.malloc(bytes);
    } catch (e) {
      if (!(e instanceof CudaError && e.status === 2)) throw e;
      this.s.numAllocRetries++;
      this.emptyCache();
      try {
        ptr = this.raw.malloc(bytes);
      } catch (e2) {
        if (!(e2 instanceof CudaError && e2.status === 2)) throw e2;
        this.s.numOoms++;
        const total = this.raw.totalMemory?.();
        throw new CudaOutOfMemoryError(
          this.device,
          size,
          `Tried to allocate ${formatBytes(size)} (a ${formatBytes(bytes)} segment)${
            total ? `; the device has ${formatBytes(total)} in total` : ""
          }. Of the memory Backplane holds, ${formatBytes(this.s.allocatedBytes.current)} is allocated ` +
            `and ${formatBytes(this.s.reservedBytes.current - this.s.allocatedBytes.current)} is reserved but ` +
            `unallocated (the cache was released and the allocation retried). ${e2.message}`,
        );
      }
    }
    const segment: Segment = { ptr, size: bytes, pool };
    this.segments.add(segment);
    add(this.s.reservedBytes, bytes);
    add(this.s.segments, 1);
    const block: Block = {
      ptr,
      size: bytes,
      requested: 0,
      segment,
      allocated: false,
      prev: undefined,
      next: undefined,
    };
    this.heads.set(segment, block);
    return block;
  }
}
