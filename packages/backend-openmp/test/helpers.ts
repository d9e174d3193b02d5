/** Shared by the test files: buffers in the CPU memory and the pool, ready with workers. */

import { seededRandom } from "@backplane/core";
import { cpuMemory, host, type ParallelTask } from "@backplane/core/cpu";
import { openmpPool, RUNTIME_MODULE, WorkerPool } from "../src/index.ts";

export { RUNTIME_MODULE };

/** The installed pool, with at least one ready worker (so runs can use 2 threads). */
export async function readyPool(threads = 2): Promise<WorkerPool> {
  const pool = openmpPool();
  if (!pool) throw new Error("the openmp pool is not installed here");
  await pool.ready(threads);
  return pool;
}

/** A float64 buffer of n values in the CPU memory; view() re-reads memory.buffer (it grows). */
export function f64Buffer(n: number): { ptr: number; view(): Float64Array; free(): void } {
  const mem = cpuMemory();
  const ptr = mem.allocate(n * 8);
  return {
    ptr,
    view: () => new Float64Array(mem.memory.buffer, ptr, n),
    free: () => mem.free(ptr),
  };
}

/** Values whose sum depends on the order of additions (wide range of magnitudes and signs). */
export function wildValues(n: number, seed: number): Float64Array {
  const r = seededRandom(seed);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = (r() - 0.5) * 10 ** Math.floor(r() * 16 - 4);
  return out;
}

export const g = host;
export const runtimeName: "bun" | "deno" | "node" =
  typeof g.Bun !== "undefined" ? "bun" : typeof g.Deno !== "undefined" ? "deno" : "node";

/** Retries `attempt` (with a growing effort) until it returns true; false if it never does. */
export async function eventually(
  attempt: (effort: number) => boolean | Promise<boolean>,
  tries = 8,
): Promise<boolean> {
  for (let k = 0; k < tries; k++) {
    if (await attempt(2 ** k)) return true;
    await new Promise((r) => setTimeout(r, 5 * 2 ** k));
  }
  return false;
}

/**
 * Runs `fn` with the pool's caller waiting (up to waitMs) for a woken worker to claim a chunk
 * of each parallel run (WorkerPool.helperWaitMs), so a worker surely takes part however
 * the machine schedules its threads.
 */
export function withHelperWait<T>(pool: WorkerPool, fn: () => T, waitMs = 10_000): T {
  const saved = pool.helperWaitMs;
  pool.helperWaitMs = waitMs;
  try {
    return fn();
  } finally {
    pool.helperWaitMs = saved;
  }
}

/** Makes a second pool (its own control block and workers) on the same memory. */
export function newPool(opts: Partial<ConstructorParameters<typeof WorkerPool>[0]> = {}) {
  return new WorkerPool({ memory: cpuMemory().memory, wantedThreads: () => 2, ...opts });
}

/**
 * The runtime module's fillF64 as a task: `items` doubles from `ptr` set to `value`, one
 * chunk a thread (static) or, with `chunk`, dynamic chunks of that many.
 */
export function fillTask(ptr: number, value: number, items: number, chunk?: number): ParallelTask {
  return {
    module: RUNTIME_MODULE,
    fn: "fillF64",
    args: [ptr, 0, value],
    step: [8, 0, 0],
    countArg: 1,
    items,
    ...(chunk === undefined ? {} : { schedule: "dynamic" as const, chunk }),
  };
}
