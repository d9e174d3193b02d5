import { type Explanation, explain, type Tensor } from "@backplane/core";
import { dispatch, getOp } from "@backplane/core/backend";

/** The op's arguments: `einsum`'s equation is made up from the shapes' ranks. */
function argsFor(op: string, args: Tensor[]): unknown[] {
  if (op !== "einsum") return args;
  const letters = "abcdefghijklmnopqrstuvwxyz";
  let next = 0;
  const terms = args.map((t) => t.shape.map(() => letters[next++ % 26]).join(""));
  return [terms.join(","), ...args];
}

/** explain() with `einsum`'s equation supplied from the shapes' ranks when the op needs one. */
export function explainCall(op: string, args: Tensor[]): Explanation {
  return explain(op, ...argsFor(op, args));
}

/** Runs the op once through the dispatcher (inside backends.record() for --run). */
export function runCall(op: string, args: Tensor[]): unknown {
  const rec = getOp(op);
  if (!rec) throw new Error(`unknown op ${op}`);
  return dispatch(rec, rec.prepare(...argsFor(op, args)));
}
