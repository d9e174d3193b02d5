import {
  type DType,
  type Explanation,
  explain,
  FLOAT_DTYPES,
  randn,
  type Tensor,
  tensor,
} from "@backplane/core";
import { dispatch, getOp } from "@backplane/core/backend";
import { UsageError } from "./args.ts";

/**
 * The random inputs for `explain <op> --shapes ...`. cholesky gets B Bᵀ + n I (positive
 * definite): a plain randn matrix almost never is, so `--run` always failed with a LinalgError.
 * Integer and bool dtypes get small random integers: randn takes floating dtypes only, so
 * `--dtype int32` failed there even for ops (add, relu) that take int32.
 */
export function inputsFor(op: string, shapes: number[][], dtype: DType, device: string): Tensor[] {
  return shapes.map((s, i) => {
    const n = s.at(-1) ?? 0;
    const floating = (FLOAT_DTYPES as readonly string[]).includes(dtype);
    if (op === "cholesky" && s.length >= 2 && s.at(-2) === n) {
      const b = randn(s, { dtype: "float64", seed: i + 1 }).toFloat64();
      return tensor(positiveDefinite(b, n), { shape: s, dtype, device });
    }
    if (floating) return randn(s, { dtype, device, seed: i + 1 });
    const x = randn(s, { dtype: "float64", seed: i + 1 }).toFloat64();
    return tensor(integersFor(x, dtype), { shape: s, dtype, device });
  });
}

/** Standard normal draws made values of an integer or bool dtype: small, and mostly nonzero. */
function integersFor(x: Float64Array, dtype: DType): Float64Array {
  if (dtype === "bool") return x.map((v) => (v > 0 ? 1 : 0));
  if (dtype === "uint8") return x.map((v) => Math.round(Math.abs(4 * v)));
  return x.map((v) => Math.round(4 * v));
}

/** Each n x n matrix of the batch `b` made B Bᵀ + n I. */
function positiveDefinite(b: Float64Array, n: number): Float64Array {
  const out = new Float64Array(b.length);
  for (let m = 0; m < b.length; m += n * n) {
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        let acc = i === j ? n : 0;
        for (let k = 0; k < n; k++) acc += b[m + i * n + k] * b[m + j * n + k];
        out[m + i * n + j] = acc;
      }
    }
  }
  return out;
}

/** einsum's index letters (torch's: a-z then A-Z), one per dimension of all the operands. */
const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/**
 * The op's arguments: `einsum`'s equation is made up from the shapes' ranks, a distinct letter
 * per dimension (an outer product). Letters are never reused: a repeated one would make a
 * diagonal or a contraction the user did not ask for (and a size mismatch error).
 */
function argsFor(op: string, args: Tensor[]): unknown[] {
  if (op !== "einsum") return args;
  const dims = args.reduce((n, t) => n + t.shape.length, 0);
  if (dims > LETTERS.length)
    throw new UsageError(
      `explain einsum: the shapes have ${dims} dimensions in all; einsum has ${LETTERS.length} index letters (a-z, A-Z)`,
    );
  let next = 0;
  const terms = args.map((t) => t.shape.map(() => LETTERS[next++]).join(""));
  return [terms.join(","), ...args];
}

/** explain() with `einsum`'s equation supplied from the shapes' ranks when the op needs one. */
export function explainCall(op: string, args: Tensor[]): Explanation {
  try {
    return explain(op, ...argsFor(op, args));
  } catch (e) {
    throw missingOperand(op, args.length, e) ?? e;
  }
}

/**
 * The core's error for an operand the op needs and the shapes did not give ("b must be a
 * Tensor, got undefined (wrap data with tensor(...))") as advice for the command line.
 */
function missingOperand(op: string, given: number, e: unknown): UsageError | undefined {
  const name =
    e instanceof Error ? /(\w+) must be a Tensor, got undefined/.exec(e.message)?.[1] : undefined;
  if (name === undefined) return undefined;
  return new UsageError(
    `explain ${op}: ${given} shape${given === 1 ? "" : "s"} given, and ${op} takes another operand (${name}): add its shape to --shapes, e.g. --shapes 2x3,3x4`,
  );
}

/** Runs the op once through the dispatcher (inside backends.record() for --run). */
export function runCall(op: string, args: Tensor[]): unknown {
  const rec = getOp(op);
  if (!rec) throw new Error(`unknown op ${op}`);
  return dispatch(rec, rec.prepare(...argsFor(op, args)));
}
