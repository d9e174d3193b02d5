/** Reference linalg kernels: the float64 routines of linalg-math.ts, looped over batches. */

import type { LinalgParams } from "../ops/linalg.ts";
import { empty, fromFloat64, type Tensor } from "../tensor.ts";
import * as M from "./linalg-math.ts";

/** Each matrix of the batch as its own row-major Float64Array. */
function matrices(_p: LinalgParams, t: Tensor, rows: number, cols: number): Float64Array[] {
  const all = t.toFloat64();
  const size = rows * cols;
  const count = size === 0 ? t.shape.slice(0, -2).reduce((a, b) => a * b, 1) : all.length / size;
  return Array.from({ length: count }, (_, i) => all.subarray(i * size, (i + 1) * size));
}

function stack(parts: Float64Array[], shape: number[], p: LinalgParams): Tensor {
  const total = parts.reduce((a, x) => a + x.length, 0);
  const flat = new Float64Array(total);
  let o = 0;
  for (const x of parts) {
    flat.set(x, o);
    o += x.length;
  }
  return fromFloat64(flat, shape, p.dtype);
}

function transposed(a: Float64Array, n: number): Float64Array {
  const t = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) t[j * n + i] = a[i * n + j];
  return t;
}

export function choleskyReference(p: LinalgParams): Tensor {
  const ls = matrices(p, p.a, p.n, p.n).map((a) => {
    const l = M.cholesky(a, p.n);
    return p.upper ? transposed(l, p.n) : l;
  });
  return stack(ls, [...p.a.shape], p);
}

export function invReference(p: LinalgParams): Tensor {
  return stack(
    matrices(p, p.a, p.n, p.n).map((a) => M.inv(a, p.n)),
    [...p.a.shape],
    p,
  );
}

export function solveReference(p: LinalgParams): Tensor {
  const b = p.b!;
  const nrhs = p.bVector ? 1 : b.shape[b.rank - 1];
  const as = matrices(p, p.a, p.n, p.n);
  const flatB = b.toFloat64();
  const per = p.n * nrhs;
  // B without batch dims is shared by every A of the batch.
  // B without batch dims is shared by every matrix of A's batch.
  const shared = b.rank === (p.bVector ? 1 : 2);
  const xs = as.map((a, i) => {
    const off = shared ? 0 : i * per;
    return M.solve(a, p.n, flatB.subarray(off, off + per), nrhs);
  });
  const shape = [...p.batchShape, p.n];
  if (!p.bVector) shape.push(nrhs);
  return stack(xs, shape, p);
}

export function luFactorReference(p: LinalgParams): { LU: Tensor; pivots: Tensor } {
  const res = matrices(p, p.a, p.n, p.n).map((a) => M.luFactor(a, p.n));
  const LU = stack(
    res.map((r) => r.lu),
    [...p.a.shape],
    p,
  );
  const pivots = empty([...p.batchShape, p.n], { dtype: "int32" });
  const pv = pivots.hostData() as Int32Array;
  for (let i = 0; i < res.length; i++) pv.set(res[i].pivots, i * p.n);
  return { LU, pivots };
}

export function qrReference(p: LinalgParams): { Q: Tensor; R: Tensor } {
  const { m, n, mode } = p;
  const k = Math.min(m, n);
  const res = matrices(p, p.a, m, n).map((a) => M.qr(a, m, n, mode));
  const qCols = mode === "complete" ? m : k;
  const rRows = mode === "complete" ? m : k;
  return {
    Q: stack(
      res.map((r) => r.q),
      [...p.batchShape, m, qCols],
      p,
    ),
    R: stack(
      res.map((r) => r.r),
      [...p.batchShape, rRows, n],
      p,
    ),
  };
}

export function eighReference(p: LinalgParams): { eigenvalues: Tensor; eigenvectors: Tensor } {
  const res = matrices(p, p.a, p.n, p.n).map((a) => M.eigh(a, p.n));
  return {
    eigenvalues: stack(
      res.map((r) => r.values),
      [...p.batchShape, p.n],
      p,
    ),
    eigenvectors: stack(
      res.map((r) => r.vectors),
      [...p.a.shape],
      p,
    ),
  };
}

export function svdReference(p: LinalgParams): { U: Tensor; S: Tensor; Vh: Tensor } {
  const { m, n, fullMatrices } = p;
  const k = Math.min(m, n);
  const res = matrices(p, p.a, m, n).map((a) => M.svd(a, m, n, fullMatrices));
  return {
    U: stack(
      res.map((r) => r.u),
      [...p.batchShape, m, fullMatrices ? m : k],
      p,
    ),
    S: stack(
      res.map((r) => r.s),
      [...p.batchShape, k],
      p,
    ),
    Vh: stack(
      res.map((r) => r.vh),
      [...p.batchShape, fullMatrices ? n : k, n],
      p,
    ),
  };
}
