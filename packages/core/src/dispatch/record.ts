/** Which kernel ran: record(fn) collects every kernel call dispatched inside fn. */
import { ArgumentError } from "../errors.ts";
import { closeCallList, type KernelCall } from "../flags/context.ts";
import { runWithState } from "../flags/state.ts";

/**
 * Runs fn and returns, with its result, every kernel call dispatched inside it (op,
 * kernel, backend, device, dtype, shape, milliseconds). Holds across awaits; concurrent
 * record() calls each see only their own task's calls, and a task fn starts that outlives
 * it (a timer) adds nothing once fn is done. The time is the kernel call's own
 * (a GPU kernel that returns before its work is done is timed to its return).
 */
export function record<R>(
  fn: () => R,
): R extends Promise<infer T> ? Promise<Recorded<T>> : Recorded<R> {
  if (typeof fn !== "function") throw new ArgumentError("record(fn): fn must be a function");
  const calls: KernelCall[] = [];
  // Closed when fn is done (returned, settled or threw): a task it started that outlives it
  // (a timer, a request handler) keeps its frame, and would add to the list for ever.
  const close = () => closeCallList(calls);
  let result: R;
  try {
    result = runInFrameWithCalls(calls, fn);
  } catch (e) {
    close();
    throw e;
  }
  if (result instanceof Promise)
    return result.finally(close).then((r) => ({ result: r, calls })) as never;
  close();
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

const TEXT_FIELDS = ["op", "kernel", "backend", "device", "dtype", "shape"] as const;

/** A call as record() makes it (an object missing its time threw a TypeError in the table). */
function isKernelCall(c: unknown): c is KernelCall {
  if (c === null || typeof c !== "object") return false;
  const call = c as Record<string, unknown>;
  return typeof call.ms === "number" && TEXT_FIELDS.every((f) => typeof call[f] === "string");
}

/** The calls of a record() as a table, one line per call. */
export function formatCalls(calls: readonly KernelCall[]): string {
  if (!Array.isArray(calls) || !calls.every(isKernelCall))
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
