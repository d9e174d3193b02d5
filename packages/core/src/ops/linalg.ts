/** linalg: cholesky, inv, solve, luFactor, qr, eigh, svd over [..., m, n] batches (torch.linalg). */

import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, LinalgError, ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import { allFinite, empty, leadingBroadcastStrides, Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import {
  broadcastShapes,
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
  /**
   * solve with left false (X A = B): a and b hold Aᵀ and Bᵀ, so the kernels solve
   * Aᵀ Xᵀ = Bᵀ as any A X = B, and solve() transposes their result back.
   */
  left?: boolean;
}

type Extra = Partial<Pick<LinalgParams, "upper" | "mode" | "fullMatrices" | "b">>;

function base(
  op: string,
  a: Tensor,
  square: boolean,
  extra: Extra = {},
  checkFinite = true,
): LinalgParams {
  checkTensor(op, "A", a);
  checkFloat(op, "A", a);
  checkRank(op, "A", a, 2, Number.POSITIVE_INFINITY);
  const m = a.shape[a.rank - 2];
  const n = a.shape[a.rank - 1];
  if (square && m !== n)
    throw new ShapeError(
      `${op}: A must be square (or a batch of square matrices), got shape [${a.shape}]`,
    );
  if (checkFinite) checkFiniteLinalg(op, "A", a);
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

/** NaN or infinity in the lower triangle of any matrix of a square [..., n, n] A raises. */
function checkFiniteLower(op: string, a: Tensor): void {
  if (allFinite(a)) return; // also true for device memory, which is not read here
  const n = a.shape[a.rank - 1];
  const all = a.toFloat64();
  for (let o = 0; o < all.length; o += n * n) {
    for (let i = 0; i < n; i++) {
      for (let j = 0; j <= i; j++) {
        if (!Number.isFinite(all[o + i * n + j]))
          throw new LinalgError(
            op,
            "A contains NaN or infinity in the triangle it reads; linear algebra takes finite input only",
          );
      }
    }
  }
}

/**
 * Params of cholesky and eigh, which read one triangle of a square A (torch ignores the
 * other, NaN included). The kernels read the lower one: for the upper one they get Aᵀ, a
 * view that cholesky() and eigh() dispose (other callers of prepare leave it to the GC).
 */
function oneTriangle(op: string, a: Tensor, upper: boolean, extra: Extra): LinalgParams {
  const p = base(op, a, true, extra, false);
  const view = upper ? a.transpose(-2, -1) : a;
  try {
    checkFiniteLower(op, view);
  } catch (e) {
    if (view !== a) view.dispose();
    throw e;
  }
  return { ...p, a: view };
}

const key = (p: LinalgParams) => `${p.a.shape.join("x")}${p.b ? `,${p.b.shape.join("x")}` : ""}`;

export const choleskyOp: OpRecord<LinalgParams, [a: Tensor, opts?: { upper?: boolean }], Tensor> =
  defineOp({
    name: "cholesky",
    prepare: (a: Tensor, opts?: { upper?: boolean }) => {
      const upper = checkBool(
        "cholesky",
        "upper",
        checkOptions("cholesky", opts, ["upper"]).upper,
        false,
      );
      return oneTriangle("cholesky", a, upper, { upper });
    },
    shapeKey: key,
  });
export const invOp: OpRecord<LinalgParams, [a: Tensor], Tensor> = defineOp({
  name: "inv",
  prepare: (a: Tensor) => base("inv", a, true),
  shapeKey: key,
});
export interface LuFactorOptions {
  /** Partial pivoting, as torch's pivot: only true (the default) runs, as torch on the CPU. */
  pivot?: boolean;
}

export const luFactorOp: OpRecord<
  LinalgParams,
  [a: Tensor, opts?: LuFactorOptions],
  { LU: Tensor; pivots: Tensor }
> = defineOp({
  name: "luFactor",
  prepare: (a: Tensor, opts?: LuFactorOptions) => {
    const pivot = checkBool(
      "luFactor",
      "pivot",
      checkOptions("luFactor", opts, ["pivot"]).pivot,
      true,
    );
    if (!pivot)
      throw new ArgumentError(
        "luFactor: pivot: false (LU without pivoting) is not implemented, as in torch on the CPU; leave pivot out (partial pivoting)",
      );
    return base("luFactor", a, true);
  },
  shapeKey: key,
});
export interface EighOptions {
  /** The triangle of A read, as torch's UPLO: "L" (default) or "U" (either case). */
  UPLO?: "L" | "U";
}

export const eighOp: OpRecord<
  LinalgParams,
  [a: Tensor, opts?: EighOptions],
  { eigenvalues: Tensor; eigenvectors: Tensor }
> = defineOp({
  name: "eigh",
  prepare: (a: Tensor, opts?: EighOptions) => {
    const upper = uploIsUpper(checkOptions("eigh", opts, ["UPLO"]).UPLO);
    return oneTriangle("eigh", a, upper, {});
  },
  shapeKey: key,
});

/** torch's UPLO check: "L" or "U", in either case. */
function uploIsUpper(uplo: unknown): boolean {
  if (uplo === undefined) return false;
  if (typeof uplo === "string" && /^[lu]$/i.test(uplo)) return uplo.toUpperCase() === "U";
  throw new ArgumentError(`eigh: UPLO must be "L" or "U", got ${show(uplo)}`);
}

export interface QrOptions {
  /** "reduced" (default), "complete", or "r" (R only). */
  mode?: "reduced" | "complete" | "r";
}

export const qrOp: OpRecord<LinalgParams, [a: Tensor, opts?: QrOptions], { Q: Tensor; R: Tensor }> =
  defineOp({
    name: "qr",
    prepare: (a: Tensor, opts?: QrOptions) => {
      // Only undefined means the default: a null mode is as wrong as any other value.
      const given = checkOptions("qr", opts, ["mode"]).mode;
      const mode = given === undefined ? "reduced" : given;
      if (mode !== "reduced" && mode !== "complete" && mode !== "r")
        throw new ArgumentError(`qr: mode must be "reduced", "complete" or "r", got ${show(mode)}`);
      // "r" is "reduced" for the kernels; qr() drops Q (an empty tensor, as torch).
      return base("qr", a, false, { mode: mode === "r" ? "reduced" : mode });
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
/**
 * `t` read as `shape` (t's dims aligned to the right): dims that `t` lacks or has as size 1
 * get stride 0. A view over t's storage (holds it until disposed), or `t` itself when the
 * shapes already agree.
 */
function expandedTo(t: Tensor, shape: readonly number[]): Tensor {
  if (shape.length === t.rank && shape.every((d, i) => d === t.shape[i])) return t;
  const strides = leadingBroadcastStrides(t.shape, t.strides, shape);
  t.storage.retain();
  return new Tensor(t.storage, t.dtype, [...shape], strides, t.offset);
}

/**
 * torch.linalg.solve's shapes: B is a vector when it is 1-D or has exactly the shape of A
 * without its last dim ([*, n]); otherwise B is a (batch of) matrix [*, n, k]. The batch
 * dims of A and of a matrix B broadcast against each other; the params hold A and B as
 * (stride-0) views at that broadcast batch, except that a B without batch dims stays
 * shared (rightHandSides), so kernels see p.batchShape on both. solve() disposes those
 * views after the kernel; other callers of prepare (explain, calibration) leave them to
 * the garbage collector, which gives their hold on the storage back.
 */
export const solveOp: OpRecord<LinalgParams, [a: Tensor, b: Tensor, opts?: SolveOptions], Tensor> =
  defineOp({
    name: "solve",
    prepare: (a: Tensor, b: Tensor, opts?: SolveOptions) => {
      const left = checkBool("solve", "left", checkOptions("solve", opts, ["left"]).left, true);
      if (!left) return solveRightParams(a, b);
      const p = base("solve", a, true);
      checkTensor("solve", "B", b);
      checkSame("solve", ["A", "B"], [a, b]);
      checkFiniteLinalg("solve", "B", b);
      if (b.rank < 1)
        throw new ShapeError(`solve: B must have at least 1 dimension, got a scalar (shape [])`);
      const bVector =
        b.rank === 1 || (b.rank === a.rank - 1 && b.shape.every((d, i) => d === a.shape[i]));
      const rows = bVector ? b.shape[b.rank - 1] : b.shape[b.rank - 2];
      if (rows !== p.n) {
        const what = bVector
          ? `a vector of ${rows}`
          : `${b.rank === 2 ? "a" : "a batch of"} ${rows}x${b.shape[b.rank - 1]} matri${b.rank === 2 ? "x" : "ces"}`;
        throw new ShapeError(
          `solve: B [${b.shape}] (${what}) must have ${p.n} rows to match A [${a.shape}] in A X = B (B is a vector only when 1-D or of shape [${a.shape.slice(0, -1)}])`,
        );
      }
      // A vector B is 1-D (shared) or has A's batch dims exactly; a matrix B broadcasts.
      const bBatch = bVector ? b.shape.slice(0, -1) : b.shape.slice(0, -2);
      const batchShape = bVector
        ? p.batchShape
        : broadcastShapes("solve", p.batchShape, bBatch, ["A's batch dims", "B's batch dims"]);
      const av = expandedTo(a, [...batchShape, p.n, p.n]);
      const bv =
        bBatch.length === 0 ? b : expandedTo(b, [...batchShape, ...b.shape.slice(bBatch.length)]);
      return { ...p, a: av, b: bv, bVector, batchShape };
    },
    shapeKey: key,
  });

export interface SolveOptions {
  /** Solve A X = B (true, the default) or X A = B (false), as torch.linalg.solve's left. */
  left?: boolean;
}

/**
 * Params of X A = B (torch's left=False): B is a (batch of) matrix [*, k, n]; a B that
 * torch reads as vectors (1-D, or of A's shape without its last dim) is refused, as torch
 * refuses it. The system is Aᵀ Xᵀ = Bᵀ, made of transposed views.
 */
function solveRightParams(a: Tensor, b: Tensor): LinalgParams {
  // A's checks named in its own shape; its finite scan runs once, in prepare() below.
  const n = base("solve", a, true, {}, false).n;
  checkTensor("solve", "B", b);
  const vectors =
    b.rank < 2 || (b.rank === a.rank - 1 && b.shape.every((d, i) => d === a.shape[i]));
  if (vectors)
    throw new ShapeError(
      `solve: with left: false (X A = B) B [${b.shape}] reads as ${b.rank < 2 ? "a vector" : "vectors (A's shape without its last dim)"}, as in torch; pass matrices [..., k, ${n}] (a row: [1, ${n}])`,
    );
  if (b.shape[b.rank - 1] !== n)
    throw new ShapeError(
      `solve: B [${b.shape}] must have ${n} columns to match A [${a.shape}] in X A = B (left: false)`,
    );
  const at = a.transpose(-2, -1);
  const bt = b.transpose(-2, -1);
  let p: LinalgParams | undefined;
  try {
    p = { ...solveOp.prepare(at, bt), left: false };
    return p;
  } finally {
    // The views prepare kept are the params' (solve() disposes them); the others go now.
    for (const v of [at, bt]) if (v !== p?.a && v !== p?.b) v.dispose();
  }
}

/**
 * L with A = L L^T from A's lower triangle (or U with A = U^T U from its upper triangle when
 * upper, as torch.linalg.cholesky). Throws LinalgError when A is not positive definite.
 */
export function cholesky(a: Tensor, opts?: { upper?: boolean }): Tensor {
  const p = choleskyOp.prepare(a, opts);
  try {
    return dispatch(choleskyOp, p);
  } finally {
    if (p.a !== a) p.a.dispose();
  }
}
export function inv(a: Tensor): Tensor {
  return dispatch(invOp, invOp.prepare(a));
}
/**
 * X with A X = B (torch.linalg.solve): A [*, n, n]; B a vector [n] or [*, n] (exactly A's
 * shape without its last dim), else matrices [*, n, k]; the batch dims broadcast. With
 * left: false, X with X A = B, B matrices [*, k, n].
 */
export function solve(a: Tensor, b: Tensor, opts?: SolveOptions): Tensor {
  const p = solveOp.prepare(a, b, opts);
  try {
    const x = dispatch(solveOp, p);
    if (p.left !== false) return x;
    // The kernels solved Aᵀ Xᵀ = Bᵀ: X is their result transposed.
    const xt = x.transpose(-2, -1);
    x.dispose();
    const out = xt.contiguous();
    xt.dispose();
    return out;
  } finally {
    // The broadcast views prepare made (see solveOp).
    if (p.a !== a) p.a.dispose();
    if (p.b !== b) p.b?.dispose();
  }
}
/**
 * Packed LU with partial pivoting; pivots are 1-based (LAPACK getrf), int32. Throws
 * LinalgError when a pivot is exactly zero, as torch.linalg.lu_factor (not lu_factor_ex).
 */
export function luFactor(a: Tensor, opts?: LuFactorOptions): { LU: Tensor; pivots: Tensor } {
  return dispatch(luFactorOp, luFactorOp.prepare(a, opts));
}
/** QR; mode "r" computes R only and gives Q as an empty [0] tensor, as torch.linalg.qr. */
export function qr(a: Tensor, opts?: QrOptions): { Q: Tensor; R: Tensor } {
  const out = dispatch(qrOp, qrOp.prepare(a, opts));
  if (opts?.mode !== "r") return out;
  const Q = empty([0], { dtype: out.Q.dtype, device: out.Q.device });
  out.Q.dispose();
  return { Q, R: out.R };
}
/**
 * Eigen-decomposition of symmetric A from its lower triangle (the upper one with UPLO "U"):
 * ascending eigenvalues, eigenvectors as columns.
 */
export function eigh(a: Tensor, opts?: EighOptions): { eigenvalues: Tensor; eigenvectors: Tensor } {
  const p = eighOp.prepare(a, opts);
  try {
    return dispatch(eighOp, p);
  } finally {
    if (p.a !== a) p.a.dispose();
  }
}
/** A = U diag(S) Vh, singular values descending. */
export function svd(
  a: Tensor,
  opts?: { fullMatrices?: boolean },
): { U: Tensor; S: Tensor; Vh: Tensor } {
  return dispatch(svdOp, svdOp.prepare(a, opts));
}
