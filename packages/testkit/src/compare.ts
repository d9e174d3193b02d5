/**
 * How an output is judged: elementwise against the float64 reference (relative to the
 * reference's largest magnitude), or, for decompositions that are unique only up to
 * signs (QR, eigh, SVD), by reconstruction and orthogonality.
 */
import type { DType, Tensor } from "@backplane/core";

/** Tolerances per dtype: the worst relative error allowed. */
export type Tolerances = Partial<Record<DType, number>>;

export const DEFAULT_TOLERANCES: Required<
  Pick<Tolerances, "float64" | "float32" | "float16" | "bfloat16">
> = {
  float64: 1e-10,
  float32: 2e-5,
  float16: 4e-3,
  bfloat16: 3e-2,
};

/** Ops whose float32 error grows with the problem (factorizations, long reductions) get this factor. */
export const OP_TOLERANCE_FACTOR: Record<string, number> = {
  inv: 20,
  solve: 20,
  luFactor: 10,
  qr: 10,
  eigh: 20,
  svd: 20,
  fft: 5,
  ifft: 5,
  rfft: 5,
  irfft: 5,
  // Three rounded stages: the in-projections, the attention, the out-projection.
  multiHeadAttention: 5,
};

export interface Judgement {
  /** Worst relative error found. */
  error: number;
  /** Where: the output name and flat index. */
  where: string;
}

/** max |out - ref| / max |ref|; NaN anywhere (a poisoned, unwritten element) is an infinite error. */
export function relativeError(out: Float64Array, ref: Float64Array, name = "out"): Judgement {
  if (out.length !== ref.length)
    return {
      error: Number.POSITIVE_INFINITY,
      where: `${name}: ${out.length} elements, expected ${ref.length}`,
    };
  let scale = 0;
  for (let i = 0; i < ref.length; i++)
    if (Number.isFinite(ref[i])) scale = Math.max(scale, Math.abs(ref[i]));
  scale = scale || 1;
  let worst = 0;
  let at = -1;
  for (let i = 0; i < ref.length; i++) {
    const r = ref[i];
    const o = out[i];
    let e: number;
    if (Number.isNaN(r)) e = Number.isNaN(o) ? 0 : Number.POSITIVE_INFINITY;
    else if (!Number.isFinite(r)) e = o === r ? 0 : Number.POSITIVE_INFINITY;
    else e = Number.isNaN(o) ? Number.POSITIVE_INFINITY : Math.abs(o - r) / scale;
    if (e > worst || at < 0) {
      worst = Math.max(worst, e);
      if (e >= worst) at = i;
    }
  }
  return { error: worst, where: `${name}[${at}]` };
}

/** Row-major matmul of m x k by k x n, float64. */
export function mm(
  a: Float64Array,
  b: Float64Array,
  m: number,
  k: number,
  n: number,
): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let p = 0; p < k; p++) {
      const x = a[i * k + p];
      for (let j = 0; j < n; j++) c[i * n + j] += x * b[p * n + j];
    }
  return c;
}

export function transpose(a: Float64Array, m: number, n: number): Float64Array {
  const t = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) t[j * m + i] = a[i * n + j];
  return t;
}

/** ||Q^T Q - I||max for the k columns of m x k Q. */
export function orthogonalityError(q: Float64Array, m: number, k: number): number {
  const g = mm(transpose(q, m, k), q, k, m, k);
  let e = 0;
  for (let i = 0; i < k; i++)
    for (let j = 0; j < k; j++) e = Math.max(e, Math.abs(g[i * k + j] - (i === j ? 1 : 0)));
  return e;
}

export function worst(...js: Judgement[]): Judgement {
  return js.reduce((a, b) => (b.error > a.error ? b : a), { error: 0, where: "-" });
}

/** Largest |a - b| over two tensors of one shape; a NaN anywhere is an infinite difference. */
export function maxAbsDiff(a: Tensor, b: Tensor): number {
  if (a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i]))
    throw new Error(`maxAbsDiff: shapes [${a.shape}] and [${b.shape}] differ`);
  const x = a.toFloat64();
  const y = b.toFloat64();
  let d = 0;
  for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i] - y[i]));
  return Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
}
