/** Seeded inputs: reproducible, never all zeros, and kept away from zero so relative errors mean something. */
import { type DType, seededRandom, type Tensor, tensor } from "@backplane/core";

export type Rng = () => number;
export const makeRng = (seed: number): Rng => seededRandom(seed);

/** Values in ±[0.1, 1.1), rounded to `dtype` when the tensor is made. */
export function randomTensor(shape: number[], dtype: DType, rng: Rng, scale = 1): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float64Array(n);
  for (let i = 0; i < n; i++) data[i] = (rng() < 0.5 ? -1 : 1) * (0.1 + rng()) * scale;
  return tensor(data, { shape, dtype });
}

/** A random symmetric positive definite matrix batch: A A^T + n I. */
export function spdTensor(batch: number[], n: number, dtype: DType, rng: Rng): Tensor {
  const count = batch.reduce((a, b) => a * b, 1);
  const out = new Float64Array(count * n * n);
  for (let b = 0; b < count; b++) {
    const a = Array.from({ length: n * n }, () => rng() * 2 - 1);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        let s = i === j ? n : 0;
        for (let k = 0; k < n; k++) s += a[i * n + k] * a[j * n + k];
        out[b * n * n + i * n + j] = s;
      }
    }
  }
  return tensor(out, { shape: [...batch, n, n], dtype });
}

/** A random boolean mask with at least one true per row of the last dimension. */
/**
 * A copy of an attention mask whose row `row` masks every key (bool: all false; additive:
 * all -Infinity). PyTorch 2.13 gives such a row 0, not NaN, on every backend.
 */
export function maskRow(mask: Tensor, row: number): Tensor {
  const v = mask.toFloat64();
  const last = mask.shape[mask.rank - 1] ?? 1;
  v.fill(mask.dtype === "bool" ? 0 : Number.NEGATIVE_INFINITY, row * last, (row + 1) * last);
  return tensor(v, { shape: [...mask.shape], dtype: mask.dtype });
}

/** A copy of `t` with every `every`-th element (from `first`) set to `value`. */
export function withEvery(t: Tensor, first: number, every: number, value: number): Tensor {
  const v = t.toFloat64();
  for (let i = first; i < v.length; i += every) v[i] = value;
  return tensor(v, { shape: [...t.shape], dtype: t.dtype });
}

export function boolMask(shape: number[], rng: Rng): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const last = shape[shape.length - 1] || 1;
  const data = new Uint8Array(n);
  for (let i = 0; i < n; i++) data[i] = rng() < 0.7 ? 1 : 0;
  for (let r = 0; r < n / last; r++) data[r * last + Math.floor(rng() * last)] = 1;
  return tensor(data, { shape, dtype: "bool" });
}
