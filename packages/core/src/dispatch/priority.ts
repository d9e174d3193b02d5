/** The user's kernel priority per op: set for good, as a sync scope, or for an async task. */
import { ArgumentError } from "../errors.ts";
import {
  changeOf,
  type FlagScope,
  openChangeScope,
  runWithState,
  setState,
} from "../flags/state.ts";
import { getOp, opNames } from "../registry/kernels.ts";
import { show } from "../util/format.ts";
import { didYouMean } from "../util/suggest.ts";

/** Kernel and family names of an op, cached until a kernel is added (scopes open in hot loops). */
const knownCache = new Map<string, { count: number; names: Set<string> }>();
function knownNames(op: string): Set<string> {
  const kernels = getOp(op)?.kernels ?? [];
  const hit = knownCache.get(op);
  if (hit && hit.count === kernels.length) return hit.names;
  const names = new Set(kernels.flatMap((k) => (k.family ? [k.name, k.family] : [k.name])));
  knownCache.set(op, { count: kernels.length, names });
  return names;
}

/** `op` names a defined op: else "has no kernel named ..." would blame the kernel names. */
function checkOp(op: unknown): void {
  if (typeof op === "string" && getOp(op) !== undefined) return;
  const guess = typeof op === "string" ? didYouMean(op, opNames()) : undefined;
  throw new ArgumentError(
    `kernel priority: there is no op ${show(op)}${guess ? `; did you mean ${guess}?` : ""} (ops: ${opNames().join(", ")})`,
  );
}

function checkNames(op: string, names: readonly string[]): void {
  checkOp(op);
  // Array.from visits the holes of a sparse list, which every() skips.
  if (!Array.isArray(names) || !Array.from(names).every((n) => typeof n === "string")) {
    throw new ArgumentError(`kernel priority for ${op} must be a list of kernel names`);
  }
  const known = knownNames(op);
  if (names.every((n) => known.has(n))) return;
  const unknown = names.filter((n) => !known.has(n));
  throw new ArgumentError(
    `${op} has no kernel named ${unknown.join(", ")}; it has: ${[...known].join(", ") || "(none)"}`,
  );
}

/** Tries these kernels of `op` first, in this order, for the current task (null: back to priorities). */
export function setKernelPriority(op: string, names: readonly string[] | null): void {
  if (names === null) checkOp(op);
  else checkNames(op, names);
  setState((s) => s.withPriority(op, names)); // a permanent change: never restored
}

/** The same as a scope: `using _ = kernelPriority("matmul", ["mine"])`. */
export function kernelPriority(op: string, names: readonly string[]): FlagScope {
  checkNames(op, names);
  return openChangeScope({ priorities: { [op]: names } });
}

/** The async-safe form: the order holds inside fn, across awaits, for this task only. */
export function withKernelPriority<R>(op: string, names: readonly string[], fn: () => R): R {
  checkNames(op, names);
  if (typeof fn !== "function")
    throw new ArgumentError(
      `withKernelPriority(op, names, fn): fn must be a function, got ${show(fn)}`,
    );
  return runWithState(changeOf({ priorities: { [op]: names } }), fn);
}
