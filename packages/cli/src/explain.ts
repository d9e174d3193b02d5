import { type Explanation, explain, type Tensor } from "@backplane/core";

/** explain() with `einsum`'s equation supplied from the shapes' ranks when the op needs one. */
export function explainCall(op: string, args: Tensor[]): Explanation {
  if (op === "einsum") {
    const letters = "abcdefghijklmnopqrstuvwxyz";
    let next = 0;
    const terms = args.map((t) => t.shape.map(() => letters[next++ % 26]).join(""));
    return explain(op, terms.join(","), ...args);
  }
  return explain(op, ...args);
}
