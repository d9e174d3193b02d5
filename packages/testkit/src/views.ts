/**
 * The same op arguments as views: every tensor argument rebuilt over a new storage as an
 * offset view, a transposed layout, an expanded (stride-0) view or an overlapping view,
 * so every backend is held to reading strides right (issue 21: GEMM read expanded and
 * overlapping operands as dense). Views are made on the CPU, where the reference reads
 * them, and rebuilt on a device over a copy of the same storage.
 */
import { bytesPerElement, fromFloat64, Tensor } from "@backplane/core";
import { contiguousStrides, sizeOf } from "@backplane/core/backend";

export type ViewKind = "offset" | "transposed" | "expanded" | "overlapping";
export const VIEW_KINDS: readonly ViewKind[] = ["offset", "transposed", "expanded", "overlapping"];

/** Ops whose inputs must stay valid matrices (SPD, invertible): no repeated or overlapping rows. */
const MATRIX_OPS = new Set(["cholesky", "inv", "solve", "luFactor", "qr", "eigh", "svd"]);

/** A copy of `t`'s values laid out with `strides` from `offset` in a new storage. */
function layout(
  t: Tensor,
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
): Tensor {
  let span = offset + 1;
  shape.forEach((d, i) => {
    if (d > 0) span += (d - 1) * strides[i]!;
  });
  if (sizeOf(shape) === 0) span = offset;
  const src = t.contiguous();
  const values = src.toFloat64();
  src.dispose();
  // Positions not covered by the view hold 7s, so reading them by mistake shows.
  const store = new Float64Array(span).fill(7);
  const idx = new Array<number>(shape.length).fill(0);
  const n = sizeOf(shape);
  for (let i = 0; i < n; i++) {
    let pos = offset;
    for (let d = 0; d < shape.length; d++) pos += idx[d]! * strides[d]!;
    store[pos] = values[i]!;
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d]! < shape[d]!) break;
      idx[d] = 0;
    }
  }
  const flat = fromFloat64(store, [span], t.dtype);
  flat.storage.retain();
  const view = new Tensor(flat.storage, t.dtype, shape, strides, offset);
  flat.dispose();
  return view;
}

/** `t` as a view of kind `kind`, or undefined when that kind does not apply to it. */
export function viewOf(op: string, t: Tensor, kind: ViewKind): Tensor | undefined {
  const shape = t.shape;
  const rank = shape.length;
  if (rank === 0 || sizeOf(shape) === 0) return undefined;
  const dense = contiguousStrides(shape);
  switch (kind) {
    case "offset":
      return layout(t, shape, dense, 5);
    case "transposed": {
      if (rank < 2) return layout(t, shape, [2], 1); // every other element
      // Stored with the dims reversed (column-major), read back in the original order.
      const rev = contiguousStrides([...shape].reverse()).reverse();
      return layout(t, shape, rev, 0);
    }
    case "expanded": {
      // Stride 0 along the first dim of size > 1 (for matrix ops: only a batch dim).
      const first = shape.findIndex((d, i) => d > 1 && (!MATRIX_OPS.has(op) || i < rank - 2));
      if (first < 0) return undefined;
      const strides = [...dense];
      strides[first] = 0;
      return layout(t, shape, strides, 0);
    }
    case "overlapping": {
      // Consecutive rows share half their elements.
      if (rank < 2 || MATRIX_OPS.has(op) || shape[rank - 1]! < 2) return undefined;
      const strides = [...dense];
      strides[rank - 2] = Math.max(1, Math.floor(shape[rank - 1]! / 2));
      for (let d = rank - 3; d >= 0; d--) strides[d] = strides[d + 1]! * shape[d + 1]!;
      return layout(t, shape, strides, 0);
    }
  }
}

/** The same view over a copy of its storage on `device`. */
export function viewOnDevice(v: Tensor, device: string): Tensor {
  const elements = v.storage.byteLength / bytesPerElement(v.dtype);
  v.storage.retain();
  const whole = new Tensor(v.storage, v.dtype, [elements]);
  const moved = whole.to(device);
  whole.dispose();
  moved.storage.retain();
  const out = new Tensor(moved.storage, v.dtype, v.shape, v.strides, v.offset);
  moved.dispose();
  return out;
}
