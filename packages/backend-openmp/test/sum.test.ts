import { backends, fromFloat64, ready } from "@backplane/core";
import { cpuMemory } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { openmpPool, parallelSum, SUM_CHUNK } from "../src/index.ts";
import { readyPool, wildValues, withHelperWait } from "./helpers.ts";

/** The same additions, in the same order, as sumChunksF64 + sumF64 (runtime.ts). */
function referenceSum(v: Float64Array, chunk: number): number {
  let total = 0;
  for (let start = 0; start < v.length; start += chunk) {
    const end = Math.min(start + chunk, v.length);
    const len = end - start;
    let a0 = 0;
    let a1 = 0;
    let b0 = 0;
    let b1 = 0;
    let i = 0;
    for (; i + 4 <= len; i += 4) {
      a0 += v[start + i];
      a1 += v[start + i + 1];
      b0 += v[start + i + 2];
      b1 += v[start + i + 3];
    }
    let part = a0 + b0 + (a1 + b1);
    for (; i < len; i++) part += v[start + i];
    total += part;
  }
  return total;
}

describe("deterministic reductions", () => {
  it("parallelSum is bit-identical for 1 and 2 threads, and equals the fixed-order reference", async () => {
    await ready("openmp");
    const pool = await readyPool(2);
    const n = 3_000_017;
    const host = wildValues(n, 7);
    const mem = cpuMemory();
    const ptr = mem.allocate(n * 8);
    try {
      new Float64Array(mem.memory.buffer, ptr, n).set(host);
      const view = () => new Float64Array(mem.memory.buffer, ptr, n);
      const one = parallelSum(view(), { threads: 1 });
      expect(Object.is(one, referenceSum(host, SUM_CHUNK))).toBe(true);
      // The order matters for these values: a plain left-to-right sum differs.
      let naive = 0;
      for (let i = 0; i < n; i++) naive += host[i];
      expect(naive === one).toBe(false);
      // Two threads, a worker surely taking part.
      const before = pool.stats().workerChunks;
      const two = withHelperWait(pool, () => parallelSum(view(), { threads: 2 }));
      expect(Object.is(two, one)).toBe(true);
      expect(pool.stats().workerChunks).toBeGreaterThan(before);
      // A copy (a Float64Array outside the CPU memory) and a tensor give the same bits.
      expect(Object.is(parallelSum(host, { threads: 2 }), one)).toBe(true);
      const t = fromFloat64(host, [n], "float64");
      expect(Object.is(parallelSum(t, { threads: 2 }), one)).toBe(true);
      t.dispose();
      // Through backends.openmp's thread setting (cpuThreads()), too.
      using _ = backends.openmp.numThreadsScope(2);
      expect(Object.is(parallelSum(view()), one)).toBe(true);
    } finally {
      mem.free(ptr);
    }
  });

  it("float32 values, empty input and a custom chunk", async () => {
    await readyPool(2);
    const v = new Float32Array(10_001).map((_, i) => (i % 7) - 3);
    let expected = 0;
    for (const x of v) expected += x;
    expect(parallelSum(v, { threads: 2 })).toBe(expected);
    expect(parallelSum(new Float64Array(0))).toBe(0);
    const w = wildValues(50_000, 3);
    expect(
      Object.is(
        parallelSum(w, { chunk: 1000, threads: 1 }),
        parallelSum(w, { chunk: 1000, threads: 2 }),
      ),
    ).toBe(true);
    expect(() => parallelSum(w, { chunk: 0 })).toThrow(/chunk must be an integer/);
    // A chunk past the length (even past the WASM's i32 range) is one chunk of it.
    const whole = referenceSum(w, w.length);
    for (const chunk of [w.length, 2 ** 31, 2 ** 32 + 5, 2 ** 53])
      expect(Object.is(parallelSum(w, { chunk, threads: 2 }), whole), `chunk ${chunk}`).toBe(true);
    // The two-thread sums above ran on the pool: its workers are up.
    expect(openmpPool()?.stats().workers).toBeGreaterThanOrEqual(1);
  });
});
