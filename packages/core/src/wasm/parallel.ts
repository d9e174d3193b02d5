/**
 * The CPU parallel-for contract. A CPU kernel describes its work as calls to an export of
 * a registered WASM module over a range of items; backend-openmp (when imported and
 * available) runs the chunks on a pool of workers that instantiate the same modules on
 * the same memory; without it the core runs every chunk here, one after another.
 * Kernels never import backend-openmp: they ask the core.
 */
import { ArgumentError, BackplaneError } from "../errors.ts";
import { getFlag } from "../flags/state.ts";
import { runtime } from "../runtime/detect.ts";
import { wasmModule } from "./modules.ts";

/**
 * `items` units of work; the chunk [i0, i0 + count) is the call
 * `module.fn(...args)` where args[j] += i0 * step[j], args[countArg] = count, and
 * args[t.index] += thread * t.stride for each per-thread argument (private scratch).
 */
export interface ParallelTask {
  module: string;
  fn: string;
  args: number[];
  step?: number[];
  countArg?: number;
  threadArgs?: { index: number; stride: number }[];
  items: number;
  /** "static": one contiguous share per thread; "dynamic": chunks of `chunk` taken in turn. */
  schedule?: "static" | "dynamic";
  chunk?: number;
  /** Label for errors ("gemm rows"). */
  label?: string;
}

/** What backend-openmp provides. */
export interface ParallelService {
  /** Threads a task may use now (the caller's thread included). */
  threads(): number;
  /** Runs the task to completion; throws a WorkerError if a worker fails or dies. */
  run(task: ParallelTask, threads: number): void;
  /**
   * Resolves once `threads` threads are up (workers start asynchronously), with the count
   * that could start. Tests and benchmarks await it before relying on a thread count.
   */
  ready?(threads: number): Promise<number>;
}

/** A worker failed or died while running a parallel task. */
export class WorkerError extends BackplaneError {
  constructor(message: string) {
    super("E_WORKER", message);
  }
}

let service: ParallelService | undefined;

/** backend-openmp installs itself here; `undefined` goes back to running on this thread. */
export function setParallelService(s: ParallelService | undefined): void {
  service = s;
}
export function parallelService(): ParallelService | undefined {
  return service;
}

/** The thread count asked for: the openmp setting, else the cores available. */
export const requestedThreads = (): number =>
  (getFlag("openmp.numThreads") as number) || runtime().hardwareConcurrency;

/** The thread count CPU kernels should use now: the one asked for, within the pool's. */
export function cpuThreads(): number {
  const n = requestedThreads();
  return Math.max(1, service ? Math.min(n, service.threads()) : 1);
}

/**
 * A value as an error shows it: strings quoted ("3" is not 3), and never a TypeError of its
 * own (String() throws on an object without toString).
 */
function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  try {
    return String(v);
  } catch {
    return typeof v;
  }
}

/** Whether every element is a number; a hole counts as none (every() would skip it). */
function allNumbers(a: readonly unknown[]): boolean {
  for (let i = 0; i < a.length; i++) if (typeof a[i] !== "number") return false;
  return true;
}

const isIndex = (v: unknown, below: number): v is number =>
  Number.isInteger(v) && (v as number) >= 0 && (v as number) < below;

/**
 * Refuses a malformed task before any chunk runs: a NaN chunk or thread count used to make
 * the chunk loop run zero times, so the run "succeeded" having written nothing. parallelFor
 * checks every task (threaded or not); a ParallelService may call it too.
 */
export function validateTask(task: ParallelTask, threads: number): void {
  const bad = (what: string): never => {
    throw new ArgumentError(`parallelFor: ${what}`);
  };
  if (task === null || typeof task !== "object")
    bad(`the task must be an object, got ${task === null ? "null" : typeof task}`);
  if (typeof task.module !== "string" || typeof task.fn !== "string")
    bad("the task needs a string module and fn");
  if (!Array.isArray(task.args) || !allNumbers(task.args))
    bad(`task ${task.module}.${task.fn}: args must be an array of numbers`);
  const nargs = task.args.length;
  if (!Number.isInteger(threads) || threads < 1)
    bad(`threads must be an integer >= 1, got ${show(threads)}`);
  if (!Number.isInteger(task.items) || task.items < 0 || task.items > 0x7fffffff)
    bad(`items must be an integer in [0, 2^31), got ${show(task.items)}`);
  if (task.schedule !== undefined && task.schedule !== "static" && task.schedule !== "dynamic")
    bad(`schedule must be "static" or "dynamic", got ${show(task.schedule)}`);
  if (task.chunk !== undefined && (!Number.isInteger(task.chunk) || task.chunk < 1))
    bad(`chunk must be an integer >= 1, got ${show(task.chunk)}`);
  if (task.step !== undefined) {
    if (!Array.isArray(task.step) || task.step.length > nargs)
      bad(`step must be an array of at most ${nargs} numbers (one per argument)`);
    if (!task.step.every((v) => Number.isFinite(v))) bad("step values must be finite numbers");
  }
  if (task.countArg !== undefined && !isIndex(task.countArg, nargs))
    bad(`countArg must be an argument index in [0, ${nargs}), got ${show(task.countArg)}`);
  if (task.threadArgs !== undefined) {
    if (!Array.isArray(task.threadArgs)) bad("threadArgs must be an array");
    for (const t of task.threadArgs) {
      if (t === null || typeof t !== "object" || !isIndex(t.index, nargs))
        bad(`threadArgs index ${show(t?.index)} is outside the ${nargs} arguments`);
      if (!Number.isFinite(t.stride)) bad(`threadArgs stride must be a finite number`);
    }
  }
}

/** Argument values of the chunk starting at i0 with `count` items, on thread `thread`. */
export function chunkArgs(task: ParallelTask, i0: number, count: number, thread: number): number[] {
  const a = task.args.slice();
  if (task.step) for (let j = 0; j < a.length; j++) a[j] += i0 * (task.step[j] ?? 0);
  if (task.countArg !== undefined) a[task.countArg] = count;
  for (const t of task.threadArgs ?? []) a[t.index] += thread * t.stride;
  return a;
}

/** The chunks of a task for `threads` threads: [i0, count] pairs in the order they are taken. */
export function chunksOf(task: ParallelTask, threads: number): [number, number][] {
  const out: [number, number][] = [];
  const size =
    task.schedule === "dynamic"
      ? Math.max(1, task.chunk ?? 1)
      : Math.ceil(task.items / Math.max(1, threads));
  for (let i0 = 0; i0 < task.items; i0 += size) out.push([i0, Math.min(size, task.items - i0)]);
  return out;
}

function exportOf(task: ParallelTask): (...args: number[]) => unknown {
  const e = wasmModule(task.module);
  if (!e)
    throw new ArgumentError(
      `parallelFor: no WASM module ${JSON.stringify(task.module)} is registered`,
    );
  const fn = e.instance.exports[task.fn];
  if (typeof fn !== "function")
    throw new ArgumentError(`parallelFor: module ${task.module} has no export ${task.fn}`);
  return fn as (...args: number[]) => unknown;
}

/**
 * Runs a parallel task: on backend-openmp's workers when it is installed and more than
 * one thread is asked for, else here, chunk by chunk, in the same order.
 */
export function parallelFor(task: ParallelTask, threads: number = cpuThreads()): void {
  validateTask(task, threads);
  if (task.items === 0) return;
  if (service && threads > 1) {
    service.run(task, threads);
    return;
  }
  const fn = exportOf(task);
  for (const [i0, count] of chunksOf(task, 1)) fn(...chunkArgs(task, i0, count, 0));
}
