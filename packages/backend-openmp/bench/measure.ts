/**
 * Bench-only instrumentation of the worker pool: wake-up latency and the cost of an empty
 * parallel task (bench/wakeup.ts prints them; BENCHMARKS.md records them). The pool
 * itself keeps only the one-wake-up probe these loops time.
 */
import type { ParallelTask } from "@backplane/core/cpu";
import type { WorkerPool } from "../src/pool.ts";
import { DEBUG_MODULE } from "../src/protocol.ts";

const nowMs = (): number => performance.now();

/**
 * Wake-up latency: from the caller's notify to the caller seeing a worker start a
 * one-chunk task that the caller leaves to it (median and 10th/90th percentiles,
 * microseconds), with idle workers spinning for `spinMicros`, or with no spinning
 * (spinMicros: 0: they sleep in Atomics.wait at once). Records the median in
 * pool.wakeLatencyMicros when measured with the pool's own spin.
 */
export async function measureWakeLatency(
  pool: WorkerPool,
  opts: { samples?: number; spinMicros?: number; warmup?: number } = {},
): Promise<{ median: number; p10: number; p90: number; samples: number }> {
  await pool.ready(2);
  const saved = pool.spinMicros;
  const spin = opts.spinMicros ?? saved;
  pool.spinMicros = spin;
  const out: number[] = [];
  try {
    const samples = opts.samples ?? 200;
    const warmup = opts.warmup ?? 200;
    for (let i = 0; i < warmup + samples; i++) {
      // Spinning: the next wake-up follows at once (the worker is still spinning).
      // Not spinning: wait until the worker is surely asleep.
      if (spin === 0) await new Promise((r) => setTimeout(r, 1));
      else if (i % 64 === 63) await new Promise((r) => setTimeout(r, 0));
      const us = pool.probeWake();
      if (i >= warmup && Number.isFinite(us)) out.push(us);
    }
  } finally {
    pool.spinMicros = saved;
  }
  out.sort((a, b) => a - b);
  const at = (q: number) => out[Math.min(out.length - 1, Math.floor(q * out.length))] ?? NaN;
  const median = at(0.5);
  if (spin === saved && out.length > 0) pool.wakeLatencyMicros = Math.round(median * 10) / 10;
  return { median, p10: at(0.1), p90: at(0.9), samples: out.length };
}

/**
 * Microseconds of one run() of an empty task of `threads` no-op chunks (static), on
 * `threads` threads: the mean of back-to-back runs, or with `pauseMs`, the median of runs
 * each made after that long a pause (the workers then sleep unless they spin longer).
 */
export async function measureEmptyTask(
  pool: WorkerPool,
  opts: { runs?: number; threads?: number; spinMicros?: number; pauseMs?: number } = {},
): Promise<number> {
  const threads = opts.threads ?? 2;
  await pool.ready(threads);
  const saved = pool.spinMicros;
  pool.spinMicros = opts.spinMicros ?? saved;
  try {
    const task: ParallelTask = { module: DEBUG_MODULE, fn: "noop", args: [], items: threads };
    const runs = opts.runs ?? 2000;
    for (let i = 0; i < 500; i++) pool.run(task, threads);
    if (!opts.pauseMs) {
      const t0 = nowMs();
      for (let i = 0; i < runs; i++) pool.run(task, threads);
      return ((nowMs() - t0) * 1000) / runs;
    }
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      await new Promise((r) => setTimeout(r, opts.pauseMs));
      const t0 = nowMs();
      pool.run(task, threads);
      times.push((nowMs() - t0) * 1000);
    }
    times.sort((a, b) => a - b);
    return times[times.length >> 1];
  } finally {
    pool.spinMicros = saved;
  }
}
