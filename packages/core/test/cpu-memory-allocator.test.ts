/**
 * The CPU device's allocator (src/wasm/memory.ts) held to what it promises: blocks never
 * overlap (a distinct byte pattern in every live block survives every step of random
 * alloc/free sequences), freed large blocks coalesce and are reused, growth past the limit
 * is a DeviceError that leaves everything as it was, bad sizes are typed errors, and the
 * device statistics return to where they started.
 */
import {
  ArgumentError,
  DeviceError,
  empty,
  memoryStats,
  randn,
  seededRandom,
  type Tensor,
} from "@backplane/core";
import { allocateStorage, setAllocationHook } from "@backplane/core/backend";
import { HEAP_BASE, WasmCpuMemory } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { Storage } from "../src/tensor/memory.ts";
import { Tensor as TensorClass } from "../src/tensor/tensor.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

/** Sizes that stress the size classes: 0, 1, each class boundary and its neighbours, multi-MiB. */
function sizeSampler(seed: number): () => number {
  const r = seededRandom(seed);
  const edges: number[] = [0, 1, 2, 63];
  for (let c = 64; c <= MiB; c *= 2) edges.push(c - 1, c, c + 1);
  edges.push(MiB + 64, MiB + 65, 2 * MiB + 1, 3 * MiB - 7);
  return () => {
    const u = r();
    if (u < 0.6) return edges[Math.floor(r() * edges.length)];
    if (u < 0.9) return Math.floor(r() * 70 * KiB);
    return MiB + Math.floor(r() * 4 * MiB);
  };
}

interface Live {
  ptr: number;
  bytes: number;
  tag: number;
}

const tagByte = (tag: number): number => (tag % 251) + 1;

function writePattern(m: WasmCpuMemory, b: Live): void {
  new Uint8Array(m.memory.buffer, b.ptr, b.bytes).fill(tagByte(b.tag));
}

/** First wrong byte of a block, or -1 (every byte when `full`, else a sample). */
function patternBreak(m: WasmCpuMemory, b: Live, full: boolean): number {
  const v = new Uint8Array(m.memory.buffer, b.ptr, b.bytes);
  const want = tagByte(b.tag);
  const step = full ? 1 : Math.max(1, Math.floor(b.bytes / 16));
  for (let i = 0; i < v.length; i += step) if (v[i] !== want) return i;
  if (v.length > 0 && v[v.length - 1] !== want) return v.length - 1;
  return -1;
}

/** What is wrong with the layout, or "": aligned, inside the heap, distinct, no overlap. */
function layoutProblem(m: WasmCpuMemory, live: Live[]): string {
  const { heapTop, memoryBytes } = m.stats();
  if (!(heapTop <= memoryBytes)) return `heap top ${heapTop} past the memory (${memoryBytes})`;
  const sorted = [...live].sort((a, b) => a.ptr - b.ptr);
  for (let i = 0; i < sorted.length; i++) {
    const b = sorted[i];
    const end = b.ptr + Math.max(1, b.bytes);
    if (b.ptr % 64 !== 0) return `block ${b.tag} at ${b.ptr} is not 64-byte aligned`;
    if (!(b.ptr >= HEAP_BASE && end <= heapTop)) return `block ${b.tag} is outside the heap`;
    const a = sorted[i - 1];
    if (a && a.ptr + Math.max(1, a.bytes) > b.ptr) return `block ${a.tag} overlaps ${b.tag}`;
  }
  return "";
}

function checkLayout(m: WasmCpuMemory, live: Live[]): void {
  expect(layoutProblem(m, live)).toBe("");
}

/** Blocks whose pattern was overwritten. */
const brokenPatterns = (m: WasmCpuMemory, live: Live[], full: boolean): number[] =>
  live.filter((b) => patternBreak(m, b, full) >= 0).map((b) => b.tag);

describe("WasmCpuMemory: blocks never overlap", () => {
  for (const seed of [1, 2, 3]) {
    it(`random alloc/free of mixed sizes keeps every block's pattern (seed ${seed})`, () => {
      const m = new WasmCpuMemory({ shared: seed === 2, maxPages: 8192 });
      const size = sizeSampler(seed);
      const r = seededRandom(100 + seed);
      const live: Live[] = [];
      for (let step = 0; step < 1500; step++) {
        if (live.length > 0 && (r() < 0.45 || live.length > 60)) {
          const [gone] = live.splice(Math.floor(r() * live.length), 1);
          m.free(gone.ptr);
        } else {
          const b: Live = { bytes: size(), ptr: 0, tag: step };
          b.ptr = m.allocate(b.bytes);
          live.push(b);
          writePattern(m, b);
        }
        const problem = layoutProblem(m, live);
        if (problem) expect(problem, `step ${step}`).toBe("");
        const broken = brokenPatterns(m, live, step % 100 === 0);
        if (broken.length > 0) expect(broken, `step ${step}: blocks overwritten`).toEqual([]);
      }
      for (const b of live) m.free(b.ptr);
    });
  }
});

describe("WasmCpuMemory: freed large blocks are reused", () => {
  it("a large block taken whole (remainder under 1 MiB) is given back whole", () => {
    const m = new WasmCpuMemory({ shared: false, maxPages: 1024 });
    const a = m.allocate(2.5 * MiB);
    const guard = m.allocate(64); // keeps `a` from going back to the bump region
    m.free(a);
    const b = m.allocate(2 * MiB); // fits in a's block with 0.5 MiB to spare: takes it whole
    expect(b).toBe(a);
    m.free(b);
    // The whole 2.5 MiB is free again: a block of that size goes where `a` was.
    const c = m.allocate(2.5 * MiB);
    expect(c).toBe(a);
    m.free(c);
    m.free(guard);
  });

  it("neighbouring frees coalesce into one block that a larger request reuses", () => {
    const m = new WasmCpuMemory({ shared: false, maxPages: 1024 });
    const r = seededRandom(7);
    const blocks = Array.from({ length: 6 }, () => m.allocate(MiB + 64 + Math.floor(r() * MiB)));
    const guard = m.allocate(100);
    const top = m.stats().heapTop;
    const span = guard - blocks[0];
    for (const i of [3, 0, 5, 1, 4, 2]) m.free(blocks[i]);
    const whole = m.allocate(span);
    expect(whole).toBe(blocks[0]);
    expect(m.stats().heapTop).toBe(top);
    m.free(whole);
    m.free(guard);
  });

  it("a steady alloc/free loop of varying large sizes stays within twice its peak", () => {
    const m = new WasmCpuMemory({ shared: false, maxPages: 4096 });
    const size = sizeSampler(11);
    const r = seededRandom(12);
    const keep = m.allocate(100); // something live below, as in a real program
    let peakLive = 0;
    for (let iter = 0; iter < 300; iter++) {
      const sizes = Array.from({ length: 8 }, () => (r() < 0.5 ? size() : MiB + r() * 3 * MiB));
      peakLive = Math.max(
        peakLive,
        sizes.reduce((a, b) => a + b, 0),
      );
      const ptrs = sizes.map((bytes) => m.allocate(bytes));
      // free in random order
      while (ptrs.length > 0) m.free(ptrs.splice(Math.floor(r() * ptrs.length), 1)[0]);
    }
    // (freed remainders once went missing, so the heap kept growing past this)
    expect(m.stats().memoryBytes).toBeLessThanOrEqual(2 * peakLive + HEAP_BASE);
    m.free(keep);
  });
});

describe("WasmCpuMemory: limits and bad input", () => {
  it("growth past maxPages is a DeviceError that leaves the allocator as it was", () => {
    const m = new WasmCpuMemory({ shared: false, maxPages: 64 }); // 4 MiB
    const live: Live[] = [];
    let caught: unknown;
    for (let tag = 0; tag < 100 && caught === undefined; tag++) {
      const before = m.stats();
      try {
        const b: Live = { ptr: m.allocate(300 * KiB), bytes: 300 * KiB, tag };
        live.push(b);
        writePattern(m, b);
      } catch (e) {
        caught = e;
        expect(m.stats()).toEqual(before);
      }
    }
    expect(caught).toBeInstanceOf(DeviceError);
    expect((caught as Error).message).toMatch(/out of memory.*dispose tensors/);
    for (const bytes of [64 * MiB, 2 ** 40, Number.POSITIVE_INFINITY])
      expect(() => m.allocate(bytes)).toThrow(DeviceError);
    expect(brokenPatterns(m, live, true)).toEqual([]);
    // Freed memory is usable again.
    const freed = live.pop() as Live;
    m.free(freed.ptr);
    const again = m.allocate(300 * KiB);
    expect(again).toBe(freed.ptr);
    checkLayout(m, [...live, { ptr: again, bytes: 300 * KiB, tag: -1 }]);
  });

  it("when the host refuses the generous growth, the growth that is needed is tried", () => {
    const m = new WasmCpuMemory({ shared: false, maxPages: 4096 });
    const grow = m.memory.grow.bind(m.memory);
    const first = m.allocate(4 * MiB); // grows freely: ~66 pages
    // From now on a host that can map at most 8 more pages at a time (short of address space).
    Object.defineProperty(m.memory, "grow", {
      value: (pages: number) => {
        if (pages > 8) throw new RangeError("WebAssembly.Memory.grow(): Out of memory");
        return grow(pages);
      },
    });
    const pagesBefore = m.stats().memoryBytes / 65536;
    const p = m.allocate(256 * KiB); // needs ~4 pages; a quarter of the memory would be 17
    const q = m.allocate(400 * KiB);
    expect(m.stats().memoryBytes / 65536 - pagesBefore).toBeLessThanOrEqual(16);
    expect(() => m.allocate(2 * MiB)).toThrow(DeviceError); // needs 32 pages: refused, typed
    checkLayout(m, [
      { ptr: first, bytes: 4 * MiB, tag: 0 },
      { ptr: p, bytes: 256 * KiB, tag: 1 },
      { ptr: q, bytes: 400 * KiB, tag: 2 },
    ]);
  });

  it("a NaN, negative or non-number size is an ArgumentError and changes nothing", () => {
    const m = new WasmCpuMemory({ shared: false, maxPages: 256 });
    const before = m.stats();
    for (const bad of [Number.NaN, -1, -64, "64", undefined])
      expect(() => m.allocate(bad as number), String(bad)).toThrow(ArgumentError);
    expect(m.stats()).toEqual(before);
    const a = m.allocate(10);
    const b = m.allocate(10);
    expect(Number.isInteger(a) && Number.isInteger(b) && a !== b).toBe(true);
  });

  it("a double free or a foreign pointer is harmless: no block is handed out twice", () => {
    const m = new WasmCpuMemory({ shared: false, maxPages: 256 });
    for (const bytes of [0, 100, 3 * MiB]) {
      const p = m.allocate(bytes);
      m.free(p);
      m.free(p);
      for (const foreign of [p + 64, 12345, -1, Number.NaN, 2 ** 40]) m.free(foreign);
      const x = m.allocate(bytes);
      const y = m.allocate(bytes);
      expect(x).not.toBe(y);
      checkLayout(m, [
        { ptr: x, bytes, tag: 0 },
        { ptr: y, bytes, tag: 1 },
      ]);
      m.free(x);
      m.free(y);
    }
  });
});

describe("the device memory registry", () => {
  it("memoryStats return to the start after disposing tensors and their views", () => {
    const start = memoryStats("cpu");
    const r = seededRandom(5);
    const made: Tensor[] = [];
    for (let i = 0; i < 40; i++) {
      const shape = [1 + Math.floor(r() * 30), 1 + Math.floor(r() * 30)];
      const t = randn(shape, { dtype: r() < 0.5 ? "float32" : "float64" });
      made.push(t, t.transpose(0, 1), t.reshape([-1]), empty([0]));
    }
    const mid = memoryStats("cpu");
    expect(mid.liveBuffers - start.liveBuffers).toBe(80);
    for (const t of made) t.dispose();
    const end = memoryStats("cpu");
    expect(end.allocatedBytes).toBe(start.allocatedBytes);
    expect(end.liveBuffers).toBe(start.liveBuffers);
  });

  it("a view keeps its storage alive after the base is disposed", () => {
    const base = randn([64, 33], { dtype: "float64" });
    const want = base.toFloat64();
    const view = base.transpose(0, 1);
    base.dispose();
    // New tensors must not get the view's memory.
    const others = Array.from({ length: 20 }, () => randn([64, 33], { dtype: "float64" }));
    const got = view.transpose(0, 1).toFloat64();
    expect(got).toEqual(want);
    view.dispose();
    for (const t of others) t.dispose();
  });

  it("a throwing allocation hook does not leave the storage counted", () => {
    const start = memoryStats("cpu");
    const prev = setAllocationHook(() => {
      throw new Error("hook failed on purpose");
    });
    try {
      expect(() => empty([1000])).toThrow("hook failed on purpose");
    } finally {
      setAllocationHook(prev);
    }
    const end = memoryStats("cpu");
    expect(end.allocatedBytes).toBe(start.allocatedBytes);
    expect(end.liveBuffers).toBe(start.liveBuffers);
  });

  it("allocateStorage refuses a NaN or negative size instead of making the stats NaN", () => {
    const start = memoryStats("cpu");
    for (const bad of [Number.NaN, -8, 1.5, Number.POSITIVE_INFINITY])
      expect(() => allocateStorage("cpu", bad), String(bad)).toThrow(ArgumentError);
    expect(memoryStats("cpu")).toEqual(start);
  });

  it("hostData() after the memory grew reads and writes the live buffer (plain memory)", () => {
    const m = new WasmCpuMemory({ shared: false, maxPages: 4096 });
    const n = 1000;
    // (its own device name: this storage is not counted in the "cpu" statistics)
    const storage = new Storage(m, m.allocate(n * 8), n * 8, "plaintest");
    const t = new TensorClass(storage, "float64", [n]);
    const r = seededRandom(9);
    const want = Float64Array.from({ length: n }, () => r() - 0.5);
    (t.hostData() as Float64Array).set(want);
    const oldBuffer = m.memory.buffer;
    const big = m.allocate(64 * MiB); // grows (and detaches the old ArrayBuffer)
    expect(m.memory.buffer).not.toBe(oldBuffer);
    expect(oldBuffer.byteLength).toBe(0);
    const data = t.hostData() as Float64Array;
    expect(data.buffer).toBe(m.memory.buffer);
    expect(Array.from(data.subarray(0, n))).toEqual(Array.from(want));
    data[3] = 42;
    expect(t.toFloat64()[3]).toBe(42);
    m.free(big);
    t.dispose();
  });
});
