/**
 * The caching allocator: size classes, reuse, splitting and merging, emptyCache, stats, and
 * the out-of-memory path (release the cache, retry once, then a typed error) — over a fake
 * raw memory and over the RecordingLayer's cuMemAlloc through tensors.
 */
import { ArgumentError, DeviceError, empty } from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  CachingAllocator,
  CudaError,
  CudaOutOfMemoryError,
  cudaApi,
  type RawDeviceMemory,
  roundSize,
  segmentSize,
} from "../src/internals.ts";
import { SM80, withRecording } from "./helpers.ts";

const MiB = 1 << 20;

/** A raw memory handing out fake addresses, with a byte budget and an event log. */
function fakeRaw(budget = Number.POSITIVE_INFINITY) {
  const log: string[] = [];
  const live = new Map<bigint, number>();
  let next = 0x100000n;
  let used = 0;
  const raw: RawDeviceMemory = {
    malloc(bytes) {
      if (used + bytes > budget) {
        log.push(`malloc ${bytes} OOM`);
        throw new CudaError("cuMemAlloc_v2", "driver", 2);
      }
      const p = next;
      next += BigInt(bytes) + 0x1000n;
      live.set(p, bytes);
      used += bytes;
      log.push(`malloc ${bytes}`);
      return p;
    },
    free(ptr) {
      used -= live.get(ptr)!;
      live.delete(ptr);
      log.push(`free ${live.size}`);
    },
    synchronize() {
      log.push("sync");
    },
    totalMemory: () => budget,
  };
  return { raw, log, live, used: () => used };
}

describe("size classes", () => {
  it("rounds requests to 512 bytes and picks segment sizes like PyTorch", () => {
    expect(roundSize(0)).toBe(512);
    expect(roundSize(1)).toBe(512);
    expect(roundSize(512)).toBe(512);
    expect(roundSize(513)).toBe(1024);
    expect(segmentSize(512)).toBe(2 * MiB);
    expect(segmentSize(MiB)).toBe(2 * MiB);
    expect(segmentSize(MiB + 512)).toBe(20 * MiB);
    expect(segmentSize(9 * MiB)).toBe(20 * MiB);
    expect(segmentSize(10 * MiB)).toBe(10 * MiB);
    expect(segmentSize(11 * MiB)).toBe(12 * MiB);
  });
});

describe("CachingAllocator", () => {
  it("splits a small segment, reuses freed blocks and merges neighbours", () => {
    const { raw, log } = fakeRaw();
    const a = new CachingAllocator(0, raw);
    const x = a.malloc(1000);
    const y = a.malloc(1000);
    expect(y.ptr).toBe(x.ptr + 1024n);
    expect(log).toEqual([`malloc ${2 * MiB}`]);
    a.free(x);
    const z = a.malloc(900);
    expect(z.ptr).toBe(x.ptr); // best fit: the freed 1024-byte block
    expect(a.stats().cacheHits).toBe(2);
    a.free(y);
    a.free(z);
    const snap = a.snapshot();
    expect(snap).toHaveLength(1);
    expect(snap[0]!.blocks).toEqual([{ ptr: x.ptr, size: 2 * MiB, allocated: false }]);
    const s = a.stats();
    expect(s.allocatedBytes.current).toBe(0);
    expect(s.allocatedBytes.peak).toBe(2048);
    expect(s.requestedBytes.peak).toBe(2000);
    expect(s.reservedBytes.current).toBe(2 * MiB);
    expect(s.inactiveSplitBytes.current).toBe(0);
    expect(() => a.free(z)).toThrow(/double free/);
    expect(() => a.free(z)).toThrow(DeviceError);
  });

  it("refuses a byte count that is not an integer >= 0 with an ArgumentError", () => {
    const a = new CachingAllocator(0, fakeRaw().raw);
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])
      expect(() => a.malloc(bad), String(bad)).toThrow(ArgumentError);
    expect(() => a.malloc(-1)).toThrow(/byte count must be a non-negative integer, got -1/);
    expect(a.stats().allocations.allocated).toBe(0);
  });

  it("serves large requests from 20 MiB segments and keeps small and large pools apart", () => {
    const { raw, log } = fakeRaw();
    const a = new CachingAllocator(0, raw);
    const big = a.malloc(3 * MiB);
    const big2 = a.malloc(5 * MiB);
    expect(big2.ptr).toBe(big.ptr + BigInt(3 * MiB));
    const small = a.malloc(100);
    expect(log).toEqual([`malloc ${20 * MiB}`, `malloc ${2 * MiB}`]);
    expect(a.stats().inactiveSplitBytes.current).toBe(12 * MiB + 2 * MiB - 512);
    a.free(big);
    expect(a.stats().inactiveSplitBytes.current).toBe(15 * MiB + 2 * MiB - 512);
    const huge = a.malloc(50 * MiB);
    expect(huge.size).toBe(50 * MiB);
    expect(log.at(-1)).toBe(`malloc ${50 * MiB}`);
    a.free(small);
    a.free(big2);
    a.free(huge);
    expect(a.stats().segments.current).toBe(3);
  });

  it("emptyCache gives back whole free segments only", () => {
    const { raw, log, live } = fakeRaw();
    const a = new CachingAllocator(0, raw);
    const keep = a.malloc(100);
    const drop = a.malloc(2 * MiB);
    a.free(drop);
    a.emptyCache();
    expect(log).toContain("sync");
    expect(live.size).toBe(1);
    expect(a.stats().reservedBytes.current).toBe(2 * MiB);
    a.free(keep);
    a.emptyCache();
    expect(live.size).toBe(0);
    expect(a.stats().reservedBytes).toMatchObject({ current: 0, peak: 22 * MiB });
    a.resetPeakStats();
    expect(a.stats().reservedBytes.peak).toBe(0);
  });

  it("on cuMemAlloc running out of memory releases the cache and retries once", () => {
    const { raw, log } = fakeRaw(24 * MiB);
    const a = new CachingAllocator(0, raw);
    a.free(a.malloc(3 * MiB)); // caches a 20 MiB segment
    const b = a.malloc(12 * MiB); // fits in the cached segment
    a.free(b);
    const c = a.malloc(21 * MiB); // needs a new 22 MiB segment: OOM, empty cache, retry
    expect(c.size).toBe(22 * MiB); // a 1 MiB remainder is not split off a large block
    expect(log).toEqual([
      `malloc ${20 * MiB}`,
      `malloc ${22 * MiB} OOM`,
      "sync",
      "free 0",
      `malloc ${22 * MiB}`,
    ]);
    expect(a.stats().numAllocRetries).toBe(1);
    let err: unknown;
    try {
      a.malloc(4 * MiB);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CudaOutOfMemoryError);
    expect((err as Error).message).toMatch(
      /CUDA out of memory on cuda:0\. Tried to allocate 4\.00 MiB .*22\.00 MiB is allocated/,
    );
    expect(a.stats().numOoms).toBe(1);
  });

  it("lets errors other than out-of-memory through", () => {
    const a = new CachingAllocator(0, {
      malloc: () => {
        throw new CudaError("cuMemAlloc_v2", "driver", 201);
      },
      free: () => {},
      synchronize: () => {},
    });
    expect(() => a.malloc(10)).toThrow(/CUDA_ERROR_INVALID_CONTEXT \(201\)/);
  });
});

describe("the allocator behind cuda tensors (RecordingLayer)", () => {
  it("reports torch-style stats and raises CudaOutOfMemoryError when the device is full", async () => {
    await withRecording(
      { devices: [{ name: "Small GPU", major: 8, minor: 0, totalMemory: 64 * MiB }] },
      (layer) => {
        const a = empty([1024], { device: "cuda" });
        const b = empty([(4 * MiB) / 4], { device: "cuda" });
        expect(cudaApi.memoryAllocated()).toBe(4096 + 4 * MiB);
        expect(cudaApi.memoryReserved()).toBe(2 * MiB + 20 * MiB);
        b.dispose();
        expect(cudaApi.memoryAllocated()).toBe(4096);
        expect(() => empty([(63 * MiB) / 4], { device: "cuda" })).toThrow(CudaOutOfMemoryError);
        expect(cudaApi.memoryStats().numAllocRetries).toBe(1);
        expect(layer.callsOf("cuMemFree_v2").length).toBeGreaterThan(0);
        a.dispose();
        cudaApi.emptyCache();
        expect(cudaApi.memoryReserved()).toBe(0);
        expect(cudaApi.memGetInfo()).toEqual({ free: 64 * MiB, total: 64 * MiB });
      },
    );
  });

  it("refuses a device that does not exist, as torch does (no allocator made up for it)", async () => {
    await withRecording({ devices: [SM80] }, async () => {
      const gone = /cuda:5 does not exist: 1 CUDA device \(cuda:0\)/;
      expect(() => cudaApi.memoryStats(5)).toThrow(gone);
      expect(() => cudaApi.memoryAllocated(5)).toThrow(DeviceError);
      expect(() => cudaApi.memoryReserved("cuda:5")).toThrow(gone);
      expect(() => cudaApi.maxMemoryAllocated(1)).toThrow(/cuda:1 does not exist/);
      expect(() => cudaApi.resetPeakMemoryStats(5)).toThrow(gone);
      expect(() => cudaApi.memorySnapshot(5)).toThrow(gone);
      expect(() => cudaApi.memGetInfo(5)).toThrow(gone);
      await expect(cudaApi.synchronize(5)).rejects.toThrow(gone);
      expect(() => cudaApi.memoryStats(-1)).toThrow(ArgumentError);
      // The real device still answers.
      expect(cudaApi.memoryStats(0).allocatedBytes.current).toBe(0);
      await cudaApi.synchronize(0);
    });
  });
});
