/**
 * The parallel-for contract at the thread counts a user can ask for: 1, 2 and 3 threads
 * give the same results (also with fewer items than threads, and none), a kernel that
 * throws in a worker is a WorkerError and the pool goes on, thread-count scopes restore
 * the setting (also when their body throws), and bad counts are typed errors.
 */
import { BackplaneError, backends, FlagError, seededRandom, WorkerError } from "@backplane/core";
import { type ParallelTask, parallelFor } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { DEBUG_MODULE, parallelSum, RUNTIME_MODULE } from "../src/index.ts";
import { eventually, f64Buffer, readyPool, wildValues } from "./helpers.ts";

const iota = (ptr: number, items: number, extra: Partial<ParallelTask> = {}): ParallelTask => ({
  module: RUNTIME_MODULE,
  fn: "iotaF64",
  args: [ptr, 0, 0],
  step: [8, 1, 0],
  countArg: 2,
  items,
  ...extra,
});

describe("1, 2 and 3 threads", () => {
  it("write every item exactly once, for any item count (0, fewer than threads, odd, prime)", async () => {
    await readyPool(3);
    const r = seededRandom(3);
    const counts = [0, 1, 2, 3, 4, 5, 7, 97, 1009, 4099 + Math.floor(r() * 1000)];
    const buf = f64Buffer(counts[counts.length - 1] + 8);
    try {
      for (const items of counts) {
        for (const extra of [{}, { schedule: "dynamic" as const, chunk: 3 }]) {
          for (const threads of [1, 2, 3]) {
            const v0 = buf.view();
            v0.fill(-7);
            parallelFor(iota(buf.ptr, items, extra), threads);
            const v = buf.view();
            let bad = 0;
            for (let i = 0; i < items; i++) if (v[i] !== i) bad++;
            for (let i = items; i < v.length; i++) if (v[i] !== -7) bad++; // nothing past the end
            expect(bad, `${items} items, ${threads} threads, ${JSON.stringify(extra)}`).toBe(0);
          }
        }
      }
    } finally {
      buf.free();
    }
  });

  it("parallelSum is bit-identical on 1, 2 and 3 threads", async () => {
    await readyPool(3);
    for (const n of [1, 2, 3, 5, 1000, 65_537]) {
      const v = wildValues(n, n);
      const sums = [1, 2, 3].map((threads) => parallelSum(v, { threads, chunk: 64 }));
      expect(sums[1], `n ${n}`).toBe(sums[0]);
      expect(sums[2], `n ${n}`).toBe(sums[0]);
      // (and close to the float64 sum in another order)
      const plain = v.reduce((a, b) => a + b, 0);
      const scale = v.reduce((a, b) => a + Math.abs(b), 0);
      expect(Math.abs(sums[0] - plain)).toBeLessThanOrEqual(scale * 1e-12);
    }
  });
});

describe("a kernel that throws on 3 threads", () => {
  it("is a WorkerError, and the pool then runs tasks right on 3 threads", async () => {
    const pool = await readyPool(3);
    let error: unknown;
    const hit = await eventually((effort) => {
      try {
        pool.run(
          {
            module: DEBUG_MODULE,
            fn: "throw",
            args: [200 * effort],
            items: 30,
            schedule: "dynamic",
          },
          3,
        );
        return false; // the caller took every chunk before a worker woke: try again
      } catch (e) {
        error = e;
        return true;
      }
    });
    expect(hit).toBe(true);
    expect(error).toBeInstanceOf(WorkerError);
    expect(error).toBeInstanceOf(BackplaneError);
    expect((error as Error).message).toMatch(/thrown on purpose/);
    const n = 3001;
    const buf = f64Buffer(n);
    try {
      for (let k = 0; k < 20; k++) {
        buf.view().fill(-1);
        pool.run(iota(buf.ptr, n, { schedule: "dynamic", chunk: 17 + k }), 3);
        const v = buf.view();
        let bad = 0;
        for (let i = 0; i < n; i++) if (v[i] !== i) bad++;
        expect(bad, `run ${k} after the failure`).toBe(0);
      }
    } finally {
      buf.free();
    }
  });
});

describe("thread-count settings", () => {
  it("nested scopes restore the count, also when the body throws", () => {
    const before = backends.openmp.getNumThreads();
    {
      using _a = backends.openmp.numThreadsScope(3);
      expect(backends.openmp.getNumThreads()).toBe(3);
      expect(() => {
        using _b = backends.openmp.numThreadsScope(1);
        expect(backends.openmp.getNumThreads()).toBe(1);
        throw new Error("the body failed");
      }).toThrow("the body failed");
      expect(backends.openmp.getNumThreads()).toBe(3);
    }
    expect(backends.openmp.getNumThreads()).toBe(before);
  });

  it("bad counts are typed errors that change nothing", () => {
    const before = backends.openmp.getNumThreads();
    for (const n of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1025, 1e9]) {
      expect(() => backends.openmp.setNumThreads(n), String(n)).toThrow(BackplaneError);
      expect(backends.openmp.getNumThreads()).toBe(before);
    }
    for (const n of [-1, 1.5, Number.NaN, 1025, 1e9]) {
      expect(() => backends.openmp.numThreadsScope(n), String(n)).toThrow(FlagError);
      expect(backends.openmp.getNumThreads()).toBe(before);
    }
  });
});
