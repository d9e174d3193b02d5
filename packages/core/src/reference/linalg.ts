/** Reference linalg kernels: the float64 routines of linalg-math.ts, looped over batches. */

import { linalgFailure } from "../errors.ts";
import type { LinalgParams } from "../ops/linalg.ts";
import type { DType } from "../tensor/dtype.ts";
import { empty, fromFloat64, type Tensor } from "../tensor/tensor.ts";
import * as M from "./linalg-math.ts";

/** Each matrix of a [..., rows, cols] tensor as its own row-major Float64Array (any dtype, any strides). */
export function matricesOf(t: Tensor, rows: number, cols: number): Float64Array[] {
  const all = t.toFloat64();
  const size = rows * cols;
  const count = t.shape.slice(0, -2).reduce((a, b) => a * b, 1);
  return Array.from({ length: count }, (_, i) => all.subarray(i * size, (i + 1) * size));
}

/** One CPU tensor of `dtype` from row-major float64 parts laid end to end. */
export function stackMatrices(parts: Float64Array[], shape: number[], dtype: DType): Tensor {
  const flat = new Float64Array(parts.reduce((a, x) => a + x.length, 0));
  let o = 0;
  for (const x of parts) {
    flat.set(x, o);
    o += x.length;
  }
  return fromFloat64(flat, shape, dtype);
}

function transposed(a: Float64Array, n: number): Float64Array {
  const t = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) t[j * n + i] = a[i * n + j];
  return t;
}

export function choleskyReference(p: LinalgParams): Tensor {
  const ls = matricesOf(p.a, p.n, p.n).map((a) => {
    const l = M.cholesky(a, p.n, p.upper);
    return p.upper ? transposed(l, p.n) : l;
  });
  return stackMatrices(ls, [...p.a.shape], p.dtype);
}

export function invReference(p: LinalgParams): Tensor {
  return stackMatrices(
    matricesOf(p.a, p.n, p.n).map((a) => M.inv(a, p.n)),
    [...p.a.shape],
    p.dtype,
  );
}

/** The right-hand sides of solve as one n x nrhs matrix per matrix of A (shared when B has no batch). */
export function rightHandSides(p: LinalgParams): { bs: Float64Array[]; nrhs: number } {
  const b = p.b!;
  const nrhs = p.bVector ? 1 : b.shape[b.rank - 1];
  const flatB = b.toFloat64();
  const per = p.n * nrhs;
  const shared = b.rank === (p.bVector ? 1 : 2);
  const count = p.batchShape.reduce((x, y) => x * y, 1);
  const bs = Array.from({ length: count }, (_, i) => {
    const off = shared ? 0 : i * per;
    return flatB.subarray(off, off + per);
  });
  return { bs, nrhs };
}

export function solveOutputShape(p: LinalgParams, nrhs: number): number[] {
  return p.bVector ? [...p.batchShape, p.n] : [...p.batchShape, p.n, nrhs];
}

export function solveReference(p: LinalgParams): Tensor {
  const { bs, nrhs } = rightHandSides(p);
  const xs = matricesOf(p.a, p.n, p.n).map((a, i) => M.solve(a, p.n, bs[i], nrhs));
  return stackMatrices(xs, solveOutputShape(p, nrhs), p.dtype);
}

export function luFactorReference(p: LinalgParams): { LU: Tensor; pivots: Tensor } {
  const res = matricesOf(p.a, p.n, p.n).map((a) => {
    const r = M.luFactor(a, p.n);
    // torch.linalg.lu_factor raises on an exactly zero pivot (lu_factor_ex would not).
    if (r.info > 0) throw linalgFailure.singular("luFactor", r.info);
    return r;
  });
  const LU = stackMatrices(
    res.map((r) => r.lu),
    [...p.a.shape],
    p.dtype,
  );
  return {
    LU,
    pivots: pivotsTensor(
      res.map((r) => r.pivots),
      p,
    ),
  };
}

export function pivotsTensor(parts: Int32Array[], p: LinalgParams): Tensor {
  const pivots = empty([...p.batchShape, p.n], { dtype: "int32" });
  const pv = pivots.hostData() as Int32Array;
  for (let i = 0; i < parts.length; i++) pv.set(parts[i], i * p.n);
  return pivots;
}

/** Output shapes of qr and svd, shared by every backend. */
export function qrShapes(p: LinalgParams): { q: number[]; r: number[] } {
  const k = Math.min(p.m, p.n);
  const complete = p.mode === "complete";
  return {
    q: [...p.batchShape, p.m, complete ? p.m : k],
    r: [...p.batchShape, complete ? p.m : k, p.n],
  };
}
export function svdShapes(p: LinalgParams): { u: number[]; s: number[]; vh: number[] } {
  const k = Math.min(p.m, p.n);
  const full = p.fullMatrices;
  return {
    u: [...p.batchShape, p.m, full ? p.m : k],
    s: [...p.batchShape, k],
    vh: [...p.batchShape, full ? p.n : k, p.n],
  };
}

export function qrReference(p: LinalgParams): { Q: Tensor; R: Tensor } {
  const res = matricesOf(p.a, p.m, p.n).map((a) => M.qr(a, p.m, p.n, p.mode));
  const s = qrShapes(p);
  return {
    Q: stackMatrices(
      res.map((r) => r.q),
      s.q,
      p.dtype,
    ),
    R: stackMatrices(
      res.map((r) => r.r),
      s.r,
      p.dtype,
    ),
  };
}

export function eighReference(p: LinalgParams): { eigenvalues: Tensor; eigenvectors: Tensor } {
  const res = matricesOf(p.a, p.n, p.n).map((a) => M.eigh(a, p.n));
  return {
    eigenvalues: stackMatrices(
      res.map((r) => r.values),
      [...p.batchShape, p.n],
      p.dtype,
    ),
    eigenvectors: stackMatrices(
      res.map((r) => r.vectors),
      [...p.a.shape],
      p.dtype,
    ),
  };
}

export function svdReference(p: LinalgParams): { U: Tensor; S: Tensor; Vh: Tensor } {
  const res = matricesOf(p.a, p.m, p.n).map((a) => M.svd(a, p.m, p.n, p.fullMatrices));
  const s = svdShapes(p);
  return {
    U: stackMatrices(
      res.map((r) => r.u),
      s.u,
      p.dtype,
    ),
    S: stackMatrices(
      res.map((r) => r.s),
      s.s,
      p.dtype,
    ),
    Vh: stackMatrices(
      res.map((r) => r.vh),
      s.vh,
      p.dtype,
    ),
  };
}
