/** Small helpers the reference kernels share: reading any dtype, walking broadcast batches. */
import { type DType, readNumber, type StorageArray, writeNumber } from "../tensor/dtype.ts";
import { empty, sizeOf, type Tensor } from "../tensor/tensor.ts";

// Where the reference kernels and backends have always imported it from.
export { leadingBroadcastStrides } from "../tensor/tensor.ts";

export type Read = (pos: number) => number;
export type Write = (pos: number, v: number) => void;

/** A reader of t's storage (positions relative to t.offset), fast for float32/64 and int32. */
export function reader(t: Tensor): Read {
  const data = t.hostData();
  const d = t.dtype;
  if (d !== "float16" && d !== "bfloat16" && d !== "int64") {
    const a = data as Float64Array;
    return (pos) => a[pos];
  }
  return (pos) => readNumber(d, data, pos);
}

/** A writer into a fresh contiguous tensor's storage. */
export function writer(t: Tensor): Write {
  const data: StorageArray = t.hostData();
  const d: DType = t.dtype;
  if (d === "float32" || d === "float64") {
    const a = data as Float64Array;
    return (pos, v) => {
      a[pos] = v;
    };
  }
  return (pos, v) => writeNumber(d, data, pos, v);
}

/**
 * For each index of `batch` (row-major), the element offsets into each strided operand:
 * float64, exact to 2^53 (an Int32Array wrapped past 2^31 elements, which a GPU tensor reaches).
 */
export function batchOffsets(
  batch: readonly number[],
  strides: readonly (readonly number[])[],
): Float64Array[] {
  const n = sizeOf(batch);
  const out = strides.map(() => new Float64Array(n));
  const idx = new Array<number>(batch.length).fill(0);
  for (let i = 0; i < n; i++) {
    for (let s = 0; s < strides.length; s++) {
      let off = 0;
      for (let d = 0; d < batch.length; d++) off += idx[d] * strides[s][d];
      out[s][i] = off;
    }
    for (let d = batch.length - 1; d >= 0; d--) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

/** A contiguous CPU output tensor. */
export function output(shape: readonly number[], dtype: DType): Tensor {
  return empty(shape, { dtype });
}
