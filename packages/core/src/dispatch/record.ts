/** Which kernel ran: record(fn) collects every kernel call dispatched inside fn. */
import { ArgumentError } from "../errors.ts";
import type { KernelCall } from "../flags/context.ts";
import { runWithState } from "../flags/state.ts";

/**
 * Runs fn and returns, with its result, every kernel call dispatched inside it (op,
 * kernel, backend, device, dtype, shape, milliseconds). Holds across awaits; concurrent
 * record() calls each see only their own task's calls. The time is the kernel call's own
 * (a GPU kernel that returns before its work is done is timed to its return).
 */
export function record<R>(
  fn: () => R,
): R extends Promise<infer T> ? Promise<Recorded<T>> : Recorded<R> {
  if (typeof fn !== "function") throw new ArgumentError("record(fn): fn must be a function");
  const calls: KernelCall[] = [];
  const result = runInFrameWithCalls(calls, fn);
  if (result instanceof Promise) return result.then((r) => ({ result: r, calls })) as never;
  return { result, calls } as never;
}

/** What record() returns. */
export interface Recorded<T> {
  result: T;
  calls: KernelCall[];
}

function runInFrameWithCalls<R>(calls: KernelCall[], fn: () => R): R {
  return runWithState((s) => s, fn, calls);
}

/** The calls of a record() as a table, one line per call. */
export function formatCalls(calls: readonly KernelCall[]): string {
  if (!Array.isArray(calls) || !calls.every((c) => c !== null && typeof c === "object"))
    throw new ArgumentError(
      "formatCalls(calls): calls must be the list record() returns ({ result, calls } = record(fn))",
    );
  const rows = calls.map((c) => [
    c.op,
    `${c.kernel} (${c.backend})`,
    c.device,
    c.dtype,
    c.shape,
    `${c.ms.toFixed(3)} ms`,
  ]);
  const head = ["op", "kernel", "device", "dtype", "shape", "time"];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((x, i) => x.padEnd(w[i]))
      .join("  ")
      .trimEnd();
  return [line(head), ...rows.map(line)].join("\n");
}
