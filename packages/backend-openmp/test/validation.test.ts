import { ArgumentError, backends } from "@backplane/core";
import { cpuMemory, type ParallelTask } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { parallelSum, WorkerPool } from "../src/index.ts";
import { f64Buffer, fillTask, newPool, readyPool } from "./helpers.ts";

const expectArgError = (f: () => unknown, text: RegExp): void => {
  let caught: unknown;
  try {
    f();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(ArgumentError);
  expect((caught as ArgumentError).code).toBe("E_ARGUMENT");
  expect((caught as Error).message).toMatch(text);
};

describe("bad input is refused with an ArgumentError (not a wrong result)", () => {
  it("setNumThreads refuses 0, negatives, NaN, fractions and strings, naming the value as given", () => {
    const before = backends.openmp.getNumThreads();
    const bad: [unknown, string][] = [
      [0, "got 0"],
      [-1, "got -1"],
      [Number.NaN, "got NaN"],
      [2.5, "got 2.5"],
      ["4", 'got "4"'],
      [undefined, "got undefined"],
    ];
    for (const [n, says] of bad) {
      const set = () => backends.openmp.setNumThreads(n as number);
      expect(set, String(n)).toThrow(ArgumentError);
      expect(set, String(n)).toThrow(says);
    }
    expect(backends.openmp.getNumThreads()).toBe(before);
  });

  it("parallelSum refuses a NaN or fractional thread count instead of returning 0", async () => {
    await readyPool(2);
    const v = new Float64Array(10_000).fill(1);
    expect(parallelSum(v, { threads: 2 })).toBe(10_000);
    for (const threads of [Number.NaN, 0, -1, 1.5, Number.POSITIVE_INFINITY])
      expectArgError(() => parallelSum(v, { threads }), /threads must be an integer >= 1/);
    expectArgError(() => parallelSum(v, null as never), /options must be an object/);
  });

  it("pool.run refuses malformed tasks before running any chunk", async () => {
    const pool = await readyPool(2);
    const buf = f64Buffer(100);
    try {
      const task: ParallelTask = fillTask(buf.ptr, 5, 100, 7);
      const cases: [Partial<ParallelTask> | null, RegExp, number?][] = [
        [{ chunk: Number.NaN }, /chunk must be an integer >= 1/],
        [{ chunk: 0 }, /chunk must be an integer >= 1/],
        [{ items: Number.NaN }, /items must be an integer/],
        [{ items: 2.5 }, /items must be an integer/],
        [{ items: -3 }, /items must be an integer/],
        [{ step: [Number.NaN, 0, 0] }, /step values/],
        [{ step: [8, 0, 0, 0] }, /step must be an array/],
        [{ countArg: 3 }, /countArg must be an argument index/],
        [{ countArg: Number.NaN }, /countArg must be an argument index/],
        [{ threadArgs: [{ index: 9, stride: 8 }] }, /threadArgs index 9/],
        [{ threadArgs: [{ index: 0, stride: Number.NaN }] }, /threadArgs stride/],
        [{ args: undefined }, /args must be an array of numbers/],
        [{ args: [buf.ptr, "x", 5] as never }, /args must be an array of numbers/],
        [{ schedule: "guided" as never }, /schedule must be/],
        [{}, /threads must be an integer/, Number.NaN],
      ];
      for (const [patch, text, threads] of cases)
        expectArgError(() => pool.run({ ...task, ...patch } as ParallelTask, threads ?? 2), text);
      expectArgError(() => pool.run(null as never, 2), /task must be an object, got null/);
      // None of them wrote anything; the valid task still works.
      expect(buf.view().every((x) => x !== 5)).toBe(true);
      pool.run(task, 2);
      expect(buf.view().every((x) => x === 5)).toBe(true);
    } finally {
      buf.free();
    }
  });

  it("WorkerPool refuses bad options", () => {
    expectArgError(() => new WorkerPool({} as never), /memory must be a shared/);
    expectArgError(() => new WorkerPool(null as never), /options object/);
    expectArgError(
      () => new WorkerPool({ memory: cpuMemory().memory, workers: "fibers" as never }),
      /workers must be one of auto, web, worker_threads, got "fibers"/,
    );
    expectArgError(
      () => new WorkerPool({ memory: cpuMemory().memory, stallTimeoutMs: -1 }),
      /stallTimeoutMs must be a number >= 0/,
    );
    const pool = newPool();
    try {
      expectArgError(() => {
        pool.stallTimeoutMs = Number.NaN;
      }, /stallTimeoutMs/);
      pool.stallTimeoutMs = 0;
      expect(pool.stallTimeoutMs).toBe(0);
    } finally {
      void pool.close();
    }
  });
});
