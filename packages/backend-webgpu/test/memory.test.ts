/**
 * Device memory "webgpu": round trips, unaligned byte ranges, the buffer pool, and that
 * a long run of matmuls with dispose() leaves GPU memory flat.
 */
import {
  backends,
  DeviceError,
  empty,
  matmul,
  memoryStats,
  rand,
  Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  emptyCache,
  type GpuHandle,
  poolStats,
  sizeClass,
  type WebGPUPoolStats,
  webgpuCapability,
  webgpuMemory,
} from "../src/index.ts";
import { bindingOf, bindRange, viewSpan } from "../src/memory.ts";
import { BufferPool, largestBuffer } from "../src/pool.ts";
import { gpuIt, values } from "./helpers.ts";

const handleOf = (t: Tensor) => t.storage.handle as GpuHandle;

describe("backends.webgpu's own members", () => {
  it("poolStats() and emptyCache() are the package's, typed as the README uses them", () => {
    // tsc checks this file (npx tsc -p tsconfig.json): before the core typed them on
    // backends.webgpu, both were error TS2339 here.
    const stats: WebGPUPoolStats = backends.webgpu.poolStats();
    expect(stats).toEqual(poolStats());
    const freed: number = backends.webgpu.emptyCache();
    expect(freed).toBeGreaterThanOrEqual(0);
  });
});

describe("webgpu device memory", () => {
  gpuIt("round-trips float32, odd-length float16 and bool tensors", async () => {
    const f32 = new Float32Array([1.5, -2, 3.25, 1e-7, -0, 65504, 7]);
    const a = tensor(f32, { device: "webgpu" });
    expect(a.device).toBe("webgpu");
    expect(a.storage.memory.hostView).toBeUndefined();
    expect(() => a.dataSync()).toThrow(/asynchronously/);
    expect(Array.from(await values(a))).toEqual(Array.from(f32));

    const bits = new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x3555, 0x4248]);
    const h = tensor(bits, { dtype: "float16", device: "webgpu" }); // 14 bytes
    expect(Array.from(new Uint16Array((await h.data()).buffer as ArrayBuffer, 0, 7))).toEqual(
      Array.from(bits),
    );
    const b = tensor([true, false, true, true, false], { device: "webgpu" }); // 5 bytes
    expect(await b.array()).toEqual([true, false, true, true, false]);
    for (const t of [a, h, b]) t.dispose();
  });

  gpuIt("uploads, downloads and copies byte ranges at any alignment", async () => {
    const mem = webgpuMemory;
    const t = empty([10], { dtype: "float16", device: "webgpu" }); // 20 bytes
    const u = empty([10], { dtype: "float16", device: "webgpu" });
    const ref = Uint8Array.from({ length: 20 }, (_, i) => i);
    const refU = new Uint8Array(20).fill(0xee);
    mem.upload(handleOf(t), 0, ref.slice());
    mem.upload(handleOf(u), 0, refU.slice());
    // unaligned offset, and an aligned offset with an odd length inside the storage
    mem.upload(handleOf(t), 6, new Uint8Array([100, 101, 102]));
    ref.set([100, 101, 102], 6);
    mem.upload(handleOf(t), 12, new Uint8Array([200, 201]));
    ref.set([200, 201], 12);
    expect(Array.from(await mem.download(handleOf(t), 0, 20))).toEqual(Array.from(ref));
    expect(Array.from(await mem.download(handleOf(t), 3, 9))).toEqual(Array.from(ref.slice(3, 12)));
    // between buffers, unaligned
    mem.copy(handleOf(t), 1, handleOf(u), 5, 7);
    refU.set(ref.slice(1, 8), 5);
    expect(Array.from(await mem.download(handleOf(u), 0, 20))).toEqual(Array.from(refU));
    // within one buffer, overlapping
    mem.copy(handleOf(t), 2, handleOf(t), 9, 5);
    ref.copyWithin(9, 2, 7);
    expect(Array.from(await mem.download(handleOf(t), 0, 20))).toEqual(Array.from(ref));
    // clone() copies buffer to buffer
    const c = t.clone();
    expect(Array.from(await mem.download(handleOf(c), 0, 20))).toEqual(Array.from(ref));
    expect(() => mem.upload(handleOf(t), 18, new Uint8Array(4))).toThrow(/outside the storage/);
    for (const x of [t, u, c]) x.dispose();
  });

  gpuIt(
    "strided views read back and turn contiguous on the device (gather), every element size",
    async () => {
      // [dtype, values]: 4-, 2- and 1-byte elements.
      const cases: [string, number[] | boolean[]][] = [
        ["float32", Array.from({ length: 30 }, (_, i) => i * 1.5 - 7)],
        ["int32", Array.from({ length: 30 }, (_, i) => i * 37 - 500)],
        ["float16", Array.from({ length: 30 }, (_, i) => i - 11)],
        ["bool", Array.from({ length: 30 }, (_, i) => i % 3 === 0)],
      ];
      for (const [dtype, data] of cases) {
        const cpu = tensor(data, { dtype: dtype as "float32", shape: [5, 6] });
        const gpu = cpu.to("webgpu");
        // A view of t's storage (retained, as the core's own views do).
        const view = (t: Tensor, shape: number[], strides: number[], offset: number) => {
          t.storage.retain();
          return new Tensor(t.storage, t.dtype, shape, strides, offset);
        };
        // a transpose; rows 1-3 x columns 1-5 transposed (offset 7); row 2 broadcast (stride 0)
        const views = [
          (t: Tensor) => t.transpose(0, 1),
          (t: Tensor) => view(t, [5, 3], [1, 6], 7),
          (t: Tensor) => view(t, [3, 6], [0, 1], 12),
        ];
        for (const make of views) {
          const [v, w] = [make(cpu), make(gpu)];
          const want = await v.array();
          expect(await w.array(), `${dtype} read back`).toEqual(want);
          const c = w.contiguous();
          expect(c.device).toBe("webgpu");
          expect(c.isContiguous).toBe(true);
          expect(await c.array(), `${dtype} contiguous()`).toEqual(want);
          for (const t of [v, w, c]) t.dispose();
        }
        for (const t of [cpu, gpu]) t.dispose();
      }
    },
  );

  gpuIt("dispose() returns buffers to the pool and the next allocation reuses them", async () => {
    const before = poolStats();
    const t = empty([1000], { device: "webgpu" }); // 4000 bytes: the 4096 class
    expect(handleOf(t).size).toBe(sizeClass(4000));
    expect(sizeClass(4000)).toBe(4096);
    const mid = poolStats();
    t.dispose();
    const after = poolStats();
    expect(after.liveBuffers).toBe(mid.liveBuffers - 1);
    expect(after.pooledBuffers).toBe(mid.pooledBuffers + 1);
    expect(after.pooledBytes).toBe(mid.pooledBytes + 4096);
    const again = empty([900], { device: "webgpu" }); // same class
    const reused = poolStats();
    expect(reused.reused).toBe(after.reused + 1);
    expect(reused.created).toBe(after.created);
    again.dispose();
    expect(poolStats().liveBuffers).toBe(before.liveBuffers);
    expect(sizeClass(1)).toBe(256);
    expect(sizeClass(3 * 2 ** 20 + 1)).toBe(3.5 * 2 ** 20); // eighths of 4 MiB past 1 MiB
  });

  it("size classes stay within maxBufferSize where the request fits it", () => {
    const max = 2 ** 31 - 1; // Deno's lavapipe: 2 GiB - 1
    expect(largestBuffer(max)).toBe(2 ** 31 - 4);
    expect(sizeClass(2147483640)).toBe(2 ** 31); // eighths of 2 GiB, uncapped
    expect(sizeClass(2147483640, max)).toBe(2 ** 31 - 4);
    expect(sizeClass(7 * 2 ** 28 + 1, max)).toBe(2 ** 31 - 4); // past 1.75 GiB
    expect(sizeClass(7 * 2 ** 28, max)).toBe(7 * 2 ** 28); // a class below the cap
    expect(sizeClass(2 ** 31 - 2, max)).toBeGreaterThan(max); // does not fit: not capped
    // The pool asks the device for the capped size, and refuses what cannot fit.
    const sizes: number[] = [];
    const device = {
      limits: { maxBufferSize: max },
      createBuffer(d: { size: number }) {
        sizes.push(d.size);
        return { size: d.size, destroy() {} };
      },
    } as unknown as GPUDevice;
    const pool = new BufferPool(device, 0x80, "test", 0);
    expect(pool.acquire(2147483640).size).toBe(2 ** 31 - 4);
    expect(sizes).toEqual([2 ** 31 - 4]);
    expect(() => pool.acquire(2 ** 31 - 2)).toThrow(DeviceError);
    expect(() => pool.acquire(2 ** 31 - 2)).toThrow(/maxBufferSize \(2147483647\)/);
    expect(sizes.length).toBe(1);
  });

  it("bound ranges: what an access reaches, aligned, in whole words, past 2^31", () => {
    // a view's elements: [5, 3] strides [1, 6] from 7 reaches 7 .. 7 + 4 + 12
    expect(viewSpan(7, [5, 3], [1, 6])).toEqual([7, 24]);
    expect(viewSpan(3, [4, 2], [0, 10])).toEqual([3, 14]); // a broadcast dim reaches nothing
    expect(viewSpan(9, [], [])).toEqual([9, 10]);
    // bytes [1000, 2001): from 768 (256-aligned) to 2004 (a whole word)
    expect(bindRange(1000, 2001, 256)).toEqual({ offset: 768, size: 1236 });
    expect(bindRange(12, 13, 4)).toEqual({ offset: 8, size: 8 }); // 8-aligned at least
    expect(bindRange(0, 0, 256)).toEqual({ offset: 0, size: 4 });
    expect(bindRange(2 ** 31 + 300, 2 ** 31 + 301, 256)).toEqual({
      offset: 2 ** 31 + 256,
      size: 48,
    });
    // a storage of 2^31 - 2 bytes binds 2^31 bytes (a bitwise round-up wrapped negative)
    const h = { buffer: {} as GPUBuffer, byteLength: 2 ** 31 - 2 } as GpuHandle;
    expect(bindingOf(h).size).toBe(2 ** 31);
  });

  gpuIt(
    "a storage past the binding limit: views and unaligned copies bind their range",
    async () => {
      const lim = webgpuCapability()!.limits;
      const bind = lim.maxStorageBufferBindingSize;
      const bytes = bind + 32 * 2 ** 20;
      if (bind > 256 * 2 ** 20 || bytes > lim.maxBufferSize) {
        console.log(
          `[backend-webgpu] skipped: maxStorageBufferBindingSize ${bind}, maxBufferSize ${lim.maxBufferSize} (a storage past the binding limit needs a binding limit of 256 MiB or less and room above it)`,
        );
        return;
      }
      const n = bytes / 4;
      const host = new Float32Array(n);
      for (let i = 0; i < n; i++) host[i] = i % 4093;
      const big = tensor(host, { device: "webgpu" });
      const hostBytes = new Uint8Array(host.buffer);
      const view = (shape: number[], strides: number[], offset: number) => {
        big.storage.retain();
        return new Tensor(big.storage, "float32", shape, strides, offset);
      };
      // A transposed view at the end: the gather binds what it reads, not the whole storage.
      const t = view([3, 2], [1, 5], n - 10);
      const want = [0, 5, 1, 6, 2, 7].map((k) => (n - 10 + k) % 4093);
      expect(Array.from(await values(t))).toEqual(want);
      const c = t.contiguous();
      expect(Array.from(await values(c))).toEqual(want);
      // A view reaching from the first element to the last: a typed error that says why.
      const wide = view([2], [n - 1], 0);
      expect(() => wide.contiguous()).toThrow(DeviceError);
      expect(() => wide.contiguous()).toThrow(/maxStorageBufferBindingSize/);
      // An unaligned upload near the end (through the byte-copy shader).
      const mem = webgpuMemory;
      const h = big.storage.handle as GpuHandle;
      mem.upload(h, bytes - 7, new Uint8Array([1, 2, 3]));
      hostBytes.set([1, 2, 3], bytes - 7);
      expect(Array.from(await mem.download(h, bytes - 9, 9))).toEqual(
        Array.from(hostBytes.subarray(bytes - 9)),
      );
      // An unaligned copy longer than one binding: in pieces, every byte where it belongs.
      const len = bind + 16 * 2 ** 20 + 1;
      const dst = empty([len + 8], { dtype: "uint8", device: "webgpu" });
      const d = dst.storage.handle as GpuHandle;
      mem.copy(h, 2, d, 1, len);
      // (the first piece ends a little before `bind`: the window takes it for any alignment)
      for (const [at, count] of [
        [0, 40],
        [bind - 600, 1024],
        [len - 40, 40],
      ]) {
        const got = await mem.download(d, 1 + at, count);
        const want = hostBytes.subarray(2 + at, 2 + at + count);
        expect(Array.from(got), `byte ${at}`).toEqual(Array.from(want));
      }
      for (const x of [t, c, wide, dst, big]) x.dispose();
    },
  );

  gpuIt("a storage the device cannot hold is a DeviceError, never a buffer too small", () => {
    const max = webgpuCapability()!.limits.maxBufferSize;
    // 2 bytes past what a buffer of whole words holds (lavapipe: 2^31 - 2 of 2^31 - 1);
    // refused before anything is allocated.
    const elements = (largestBuffer(max) + 2) / 2;
    expect(() => empty([elements], { dtype: "float16", device: "webgpu" })).toThrow(DeviceError);
    expect(() => empty([elements], { dtype: "float16", device: "webgpu" })).toThrow(
      /maxBufferSize/,
    );
  });

  gpuIt("10,000 matmuls with dispose() leave GPU memory flat", async () => {
    const a = rand([8, 8], { seed: 1, device: "webgpu" });
    const b = rand([8, 8], { seed: 2, device: "webgpu" });
    // warm-up: pipelines compiled, the pool holds what one iteration needs
    for (let i = 0; i < 10; i++) matmul(a, b).dispose();
    await webgpuMemory.sync("webgpu");
    const mem0 = memoryStats("webgpu");
    const pool0 = poolStats();
    const t0 = performance.now();
    for (let i = 1; i <= 10_000; i++) {
      matmul(a, b).dispose();
      if (i % 1000 === 0) await webgpuMemory.sync("webgpu");
    }
    const ms = performance.now() - t0;
    const mem1 = memoryStats("webgpu");
    const pool1 = poolStats();
    console.log(
      `[backend-webgpu] 10,000 matmuls 8x8 in ${ms.toFixed(0)} ms: tensors ${mem0.allocatedBytes} -> ${mem1.allocatedBytes} bytes, GPU buffers created ${pool1.created - pool0.created}, pool live ${pool0.liveBytes} -> ${pool1.liveBytes} bytes, pooled ${pool0.pooledBytes} -> ${pool1.pooledBytes} bytes, peak ${pool1.peakBytes} bytes`,
    );
    // Nothing grew. (Tensors other tests dropped without dispose() may be collected
    // meanwhile: their storages come back through the FinalizationRegistry, so counts
    // can only fall; where nothing else is pending they are equal.)
    expect(mem1.allocatedBytes).toBeLessThanOrEqual(mem0.allocatedBytes);
    expect(mem1.liveBuffers).toBeLessThanOrEqual(mem0.liveBuffers);
    expect(mem1.totalAllocations - mem0.totalAllocations).toBe(10_000);
    expect(pool1.created).toBe(pool0.created); // every buffer came from the pool
    expect(pool1.liveBytes).toBeLessThanOrEqual(pool0.liveBytes);
    expect(pool1.liveBytes + pool1.pooledBytes).toBeLessThanOrEqual(
      pool0.liveBytes + pool0.pooledBytes,
    );
    expect(pool1.peakBytes).toBe(pool0.peakBytes);
    expect(pool1.reused - pool0.reused).toBeGreaterThanOrEqual(20_000); // outputs and parameter blocks
    // and the results are still right
    const c = matmul(a, b);
    const [ah, bh, ch] = await Promise.all([values(a), values(b), values(c)]);
    let s = 0;
    for (let k = 0; k < 8; k++) s += ah[k] * bh[k * 8];
    expect(Math.abs(ch[0] - s)).toBeLessThan(1e-5);
    for (const t of [a, b, c]) t.dispose();
  });

  gpuIt("emptyCache() destroys pooled buffers and keeps live ones", async () => {
    const keep = empty([64], { device: "webgpu" });
    empty([5000], { device: "webgpu" }).dispose();
    expect(poolStats().pooledBuffers).toBeGreaterThan(0);
    const before = poolStats();
    const freed = emptyCache();
    const after = poolStats();
    expect(freed).toBe(before.pooledBytes + before.staging.pooledBytes);
    expect(after.pooledBuffers).toBe(0);
    expect(after.pooledBytes).toBe(0);
    expect(after.liveBuffers).toBe(before.liveBuffers);
    await webgpuMemory.sync("webgpu");
    expect((await values(keep)).length).toBe(64);
    keep.dispose();
  });
});
