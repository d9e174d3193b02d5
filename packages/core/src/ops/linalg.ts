/** linalg: cholesky, inv, solve, luFactor, qr, eigh, svd over [..., m, n] batches (torch.linalg). */

import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import {
  checkBool,
  checkFiniteLinalg,
  checkFloat,
  checkOptions,
  checkRank,
  checkSame,
  checkTensor,
} from "./validate.ts";

export interface LinalgParams extends OpParams {
  a: Tensor;
  /** Right-hand side of solve. */
  b: Tensor | null;
  /** b was a vector [..., n] (solve returns a vector). */
  bVector: boolean;
  batchShape: number[];
  m: number;
  n: number;
  upper: boolean;
  mode: "reduced" | "complete";
  fullMatrices: boolean;
}

type Extra = Partial<Pick<LinalgParams, "upper" | "mode" | "fullMatrices" | "b">>;

function base(op: string, a: Tensor, square: boolean, extra: Extra = {}): LinalgParams {
  checkTensor(op, "A", a);
  checkFloat(op, "A", a);
  checkRank(op, "A", a, 2, Number.POSITIVE_INFINITY);
  const m = a.shape[a.rank - 2];
  const n = a.shape[a.rank - 1];
  if (square && m !== n)
    throw new ShapeError(
      `${op}: A must be square (or a batch of square matrices), got shape [${a.shape}]`,
    );
  checkFiniteLinalg(op, "A", a);
  return {
    a,
    b: null,
    bVector: false,
    batchShape: a.shape.slice(0, -2),
    m,
    n,
    upper: false,
    mode: "reduced",
    fullMatrices: true,
    deviceType: a.deviceType,
    dtype: a.dtype,
    ...extra,
  };
}

const key = (p: LinalgParams) => `${p.a.shape.join("x")}${p.b ? `,${p.b.shape.join("x")}` : ""}`;

export const choleskyOp: OpRecord<LinalgParams, [a: Tensor, opts?: { upper?: boolean }], Tensor> =
  defineOp({
    name: "cholesky",
    prepare: (a: Tensor, opts?: { upper?: boolean }) =>
      base("cholesky", a, true, {
        upper: checkBool(
          "cholesky",
          "upper",
          checkOptions("cholesky", opts, ["upper"]).upper,
          false,
        ),
      }),
    shapeKey: key,
  });
export const invOp: OpRecord<LinalgParams, [a: Tensor], Tensor> = defineOp({
  name: "inv",
  prepare: (a: Tensor) => base("inv", a, true),
  shapeKey: key,
});
export const luFactorOp: OpRecord<LinalgParams, [a: Tensor], { LU: Tensor; pivots: Tensor }> =
  defineOp({
    name: "luFactor",
    prepare: (a: Tensor) => base("luFactor", a, true),
    shapeKey: key,
  });
export const eighOp: OpRecord<
  LinalgParams,
  [a: Tensor],
  { eigenvalues: Tensor; eigenvectors: Tensor }
> = defineOp({
  name: "eigh",
  prepare: (a: Tensor) => base("eigh", a, true),
  shapeKey: key,
});
export const qrOp: OpRecord<
  LinalgParams,
  [a: Tensor, opts?: { mode?: "reduced" | "complete" }],
  { Q: Tensor; R: Tensor }
> = defineOp({
  name: "qr",
  prepare: (a: Tensor, opts?: { mode?: "reduced" | "complete" }) => {
    const mode = checkOptions("qr", opts, ["mode"]).mode ?? "reduced";
    if (mode !== "reduced" && mode !== "complete")
      throw new ArgumentError(`qr: mode must be "reduced" or "complete", got ${show(mode)}`);
    return base("qr", a, false, { mode });
  },
  shapeKey: key,
});
export const svdOp: OpRecord<
  LinalgParams,
  [a: Tensor, opts?: { fullMatrices?: boolean }],
  { U: Tensor; S: Tensor; Vh: Tensor }
> = defineOp({
  name: "svd",
  prepare: (a: Tensor, opts?: { fullMatrices?: boolean }) =>
    base("svd", a, false, {
      fullMatrices: checkBool(
        "svd",
        "fullMatrices",
        checkOptions("svd", opts, ["fullMatrices"]).fullMatrices,
        true,
      ),
    }),
  shapeKey: key,
});
export const solveOp: OpRecord<LinalgParams, [a: Tensor, b: Tensor], Tensor> = defineOp({
  name: "solve",
  prepare: (a: Tensor, b: Tensor) => {
    const p = base("solve", a, true);
    checkTensor("solve", "B", b);
    checkSame("solve", ["A", "B"], [a, b]);
    checkFiniteLinalg("solve", "B", b);
    // torch: B is a vector when its shape is A's batch shape plus [n].
    const bVector =
      b.rank === 1 ||
      (b.rank === a.rank - 1 && b.shape.slice(0, -1).join() === p.batchShape.join());
    const rows = bVector ? b.shape[b.rank - 1] : b.shape[b.rank - 2];
    if (b.rank < 1 || rows !== p.n)
      throw new ShapeError(`solve: B [${b.shape}] must have ${p.n} rows to match A [${a.shape}]`);
    const bBatch = bVector ? b.shape.slice(0, -1) : b.shape.slice(0, -2);
    if (bBatch.join() !== p.batchShape.join() && bBatch.length > 0) {
      throw new ShapeError(
        `solve: B's batch dims [${bBatch}] must equal A's [${p.batchShape}] (or be absent)`,
      );
    }
    return { ...p, b, bVector };
  },
  shapeKey: key,
});

/** L with A = L L^T (or U with A = U^T U when upper). Throws LinalgError when A is not positive definite. */
export function cholesky(a: Tensor, opts?: { upper?: boolean }): Tensor {
  return dispatch(choleskyOp, choleskyOp.prepare(a, opts));
}
export function inv(a: Tensor): Tensor {
  return dispatch(invOp, invOp.prepare(a));
}
/** X with A X = B. */
export function solve(a: Tensor, b: Tensor): Tensor {
  return dispatch(solveOp, solveOp.prepare(a, b));
}
/** Packed LU with partial pivoting; pivots are 1-based (LAPACK getrf), int32. */
export function luFactor(a: Tensor): { LU: Tensor; pivots: Tensor } {
  return dispatch(luFactorOp, luFactorOp.prepare(a));
}
export function qr(a: Tensor, opts?: { mode?: "reduced" | "complete" }): { Q: Tensor; R: Tensor } {
  return dispatch(qrOp, qrOp.prepare(a, opts));
}
/** Eigen-decomposition of symmetric A (lower triangle used): ascending eigenvalues, eigenvectors as columns. */
export function eigh(a: Tensor): { eigenvalues: Tensor; eigenvectors: Tensor } {
  return dispatch(eighOp, eighOp.prepare(a));
}
/** A = U diag(S) Vh, singular values descending. */
export function svd(
  a: Tensor,
  opts?: { fullMatrices?: boolean },
): { U: Tensor; S: Tensor; Vh: Tensor } {
  return dispatch(svdOp, svdOp.prepare(a, opts));
}
