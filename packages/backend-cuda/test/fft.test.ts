/**
 * cufftPlanCache (per device, LRU, read-only size, maxSize default 4096, clear(), indexing and
 * bare use for the current device) and the fft ops that use it, over a RecordingLayer.
 */
import { ArgumentError, backends, fft, ifft, irfft, randn, rfft, Tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  cudaApi,
  cufftPlanCache,
  launchArg,
  PlanCache,
  planCacheRegistry,
} from "../src/internals.ts";
import { fftLayout } from "../src/kernels/fft/fft.ts";
import { SM80, withRecording } from "./helpers.ts";

function fakeFactory() {
  const log: string[] = [];
  let n = 0;
  return {
    log,
    factory: {
      create: (key: string) => {
        log.push(`create ${key}`);
        return ++n;
      },
      destroy: (plan: number) => void log.push(`destroy ${plan}`),
    },
  };
}

describe("PlanCache (LRU)", () => {
  it("caches by key, evicts the least recently used, honours maxSize and clear()", () => {
    const { log, factory } = fakeFactory();
    const c = new PlanCache<number>(0, () => factory);
    expect(c.maxSize).toBe(4096);
    expect(c.with("a", (p) => p)).toBe(1);
    expect(c.with("b", (p) => p)).toBe(2);
    expect(c.with("a", (p) => p)).toBe(1); // hit: "a" is now the most recent
    expect(c.size).toBe(2);
    expect([c.hits, c.misses]).toEqual([1, 2]);
    c.maxSize = 1;
    expect(c.keys()).toEqual(["a"]);
    expect(log.at(-1)).toBe("destroy 2");
    c.with("c", () => 0);
    expect(c.keys()).toEqual(["c"]);
    c.clear();
    expect(c.size).toBe(0);
    expect(log.filter((l) => l.startsWith("destroy"))).toHaveLength(3);
    expect(() => {
      c.maxSize = -1;
    }).toThrow(ArgumentError);
  });

  it("with maxSize 0 makes a plan per call and destroys it after", () => {
    const { log, factory } = fakeFactory();
    const c = new PlanCache<number>(0, () => factory);
    c.maxSize = 0;
    c.with("a", () => 0);
    c.with("a", () => 0);
    expect(c.size).toBe(0);
    expect(log).toEqual(["create a", "destroy 1", "create a", "destroy 2"]);
  });

  it("the registry indexes devices and means the current device when used bare", () => {
    const caches = new Map<number, PlanCache<number>>();
    let current = 0;
    const reg = planCacheRegistry<number>(
      (d) => {
        let c = caches.get(d);
        if (!c) caches.set(d, (c = new PlanCache<number>(d, () => fakeFactory().factory)));
        return c;
      },
      () => current,
      () => 2,
    );
    reg[1]!.maxSize = 7;
    expect(reg.maxSize).toBe(4096);
    current = 1;
    expect(reg.maxSize).toBe(7);
    reg.maxSize = 9;
    expect(reg[1]!.maxSize).toBe(9);
    expect(reg[0]!.maxSize).toBe(4096);
    expect(() => reg[2]).toThrow(/device index must be an integer in \[0, 2\)/);
    expect(() => {
      (reg as { size: number }).size = 3;
    }).toThrow(/read-only/);
    expect("size" in reg && "clear" in reg && 0 in reg).toBe(true);
  });
});

describe("fft ops on cuFFT (RecordingLayer)", () => {
  it("backends.cuda.cufftPlanCache is the package's per-device cache", () => {
    expect(backends.cuda.cufftPlanCache).toBe(cufftPlanCache);
    expect(cufftPlanCache.size).toBe(0);
    expect(cufftPlanCache.maxSize).toBe(4096);
  });

  it("plans once per layout, executes per call, normalises with a scale kernel", async () => {
    await withRecording({ devices: [SM80, SM80] }, (layer) => {
      const x = randn([4, 16, 2], { seed: 1 }).to("cuda");
      const cache = backends.cuda.cufftPlanCache;
      const y = fft(x);
      expect(y.shape).toEqual([4, 16, 2]);
      fft(x);
      expect(layer.callsOf("cufftMakePlanMany")).toHaveLength(1);
      expect(layer.callsOf("cufftExecC2C").map((c) => c.args[3])).toEqual([-1, -1]);
      expect(cache.size).toBe(1);
      expect(cache[1]!.size).toBe(0);
      const plan = layer.callsOf("cufftMakePlanMany")[0]!;
      // plan, rank 1, n, inembed, istride, idist, onembed, ostride, odist, type, batch, workSize
      expect([plan.args[1], (plan.args[2] as Int32Array)[0], plan.args[4], plan.args[5]]).toEqual([
        1, 16, 1, 16,
      ]);
      expect([plan.args[9], plan.args[10]]).toEqual([0x29, 4]);
      // Auto-allocation is off: the work area comes from the caching allocator.
      expect(layer.callsOf("cufftSetAutoAllocation")[0]!.args[1]).toBe(0);
      expect(layer.callsOf("cufftSetWorkArea")).toHaveLength(2);
      // ifft: the inverse direction and a 1/n scale.
      layer.clear();
      ifft(x);
      expect(layer.callsOf("cufftExecC2C")[0]!.args[3]).toBe(1);
      const scale = layer.launches.find((l) => l.kernel === "scale_f32")!;
      expect(launchArg(scale, 2, "f32")).toBeCloseTo(1 / 16, 7);
      expect(cache.size).toBe(1); // same layout and type: same plan
      // Another length is another plan; maxSize evicts.
      fft(x, { n: 32 });
      expect(cache.size).toBe(2);
      cache.maxSize = 1;
      expect(cache.size).toBe(1);
      expect(layer.callsOf("cufftDestroy")).toHaveLength(1);
      cache.clear();
      expect(cache.size).toBe(0);
      cache.maxSize = 4096;
    });
  });

  it("rfft / irfft use R2C / C2R, pad or trim, and copy C2R inputs", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      const r = randn([3, 10], { seed: 2 }).to("cuda");
      const spec = rfft(r);
      expect(spec.shape).toEqual([3, 6, 2]);
      expect(layer.callsOf("cufftExecR2C")).toHaveLength(1);
      layer.clear();
      const back = irfft(spec, { n: 10 });
      expect(back.shape).toEqual([3, 10]);
      expect(layer.callsOf("cufftExecC2R")).toHaveLength(1);
      // The gather, then the imaginary parts of DC and Nyquist zeroed (n = 10 is even).
      expect(layer.launches.map((l) => l.kernel)).toEqual([
        "copy2d_b4",
        "copy2d_b4",
        "copy2d_b4",
        "scale_f32",
      ]);
      layer.clear();
      rfft(r, { n: 16, norm: "ortho" }); // zero-padded to 16
      expect(layer.callsOf("cuMemsetD8Async")).toHaveLength(1);
      const s = layer.launches.find((l) => l.kernel === "scale_f32")!;
      expect(launchArg(s, 2, "f32")).toBeCloseTo(1 / 4, 7);
      // float64 uses the Z/D transforms.
      fft(randn([5, 2], { seed: 3, dtype: "float64" }).to("cuda"));
      expect(layer.callsOf("cufftExecZ2Z")).toHaveLength(1);
      expect(cudaApi.deviceCount()).toBe(1);
    });
  });

  it("irfft zeroes the imaginary parts of the DC and Nyquist bins it hands to C2R", async () => {
    // cuFFT leaves a non-Hermitian C2R input undefined; torch and the reference ignore them.
    await withRecording({ devices: [SM80] }, (layer) => {
      const spec = randn([2, 5, 3, 2], { seed: 6, dtype: "float64" }).to("cuda");
      const zeroing = (n: number) => {
        layer.clear();
        irfft(spec, { dim: 1, n });
        const [gather, ...rest] = layer.launches.filter((l) => l.kernel === "copy2d_b8");
        const buf = launchArg(gather!, 0, "ptr") as bigint;
        return rest.map((l) => {
          // dst, src, table, srcBatch, batch, rows, cols, sRow, sCol, dBatch, dRow, dCol
          const args = [3, 4, 5, 6, 7, 8, 9, 10, 11].map((i) => Number(launchArg(l, i, "i64")));
          return [Number((launchArg(l, 0, "ptr") as bigint) - buf) / 8, ...args];
        });
      };
      // [outer 2, nIn 5, inner 3, 2]: imag of bin k at k*6 + 1, every 5*6 per outer, 2 per inner.
      expect(zeroing(8)).toEqual([
        [1, 0, 2, 3, 1, 0, 0, 30, 2, 1],
        [25, 0, 2, 3, 1, 0, 0, 30, 2, 1],
      ]);
      // Odd n has no Nyquist bin; n = 9 keeps all 5 bins.
      expect(zeroing(9)).toEqual([[1, 0, 2, 3, 1, 0, 0, 30, 2, 1]]);
      expect(layer.callsOf("cufftExecZ2D")).toHaveLength(2);
    });
  });

  it("gathers a view at an odd offset: cuFFT takes only inputs aligned to its complex type", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      const base = randn([17], { seed: 5 }).to("cuda");
      // An H200 answered CUFFT_INVALID_VALUE for this view's pointer (4-byte aligned).
      const odd = new Tensor(base.storage, "float32", [16], [1], 1);
      rfft(odd);
      expect(layer.launches.map((l) => l.kernel)).toEqual(["copy2d_b4"]);
      layer.clear();
      const even = new Tensor(base.storage, "float32", [14], [1], 2);
      rfft(even);
      expect(layer.launches).toHaveLength(0);
      expect(layer.callsOf("cufftExecR2C")).toHaveLength(1);
    });
  });

  it("transforms along an inner dim batch over the trailing elements", () => {
    const x = randn([2, 8, 3, 2], { seed: 4 });
    const p = { x, kind: "fft", complexInput: true, dim: 1, n: 8, norm: "forward" } as const;
    expect(
      fftLayout({ ...p, outShape: [2, 8, 3, 2], deviceType: "cpu", dtype: "float32" }),
    ).toMatchObject({
      outer: 2,
      len: 8,
      inner: 3,
      comps: 2,
      nIn: 8,
      nOut: 8,
      type: 0x29,
      direction: -1,
      scale: 1 / 8,
    });
  });
});
