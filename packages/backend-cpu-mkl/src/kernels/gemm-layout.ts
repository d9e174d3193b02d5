/**
 * How each matmul operand reaches a GEMM routine: as stored (row-major), transposed
 * (column-major, e.g. a transpose() view), or, for other strides, as a contiguous copy.
 * Shared by the native (cblas) and WASM kernels.
 */
import type { Tensor } from "@backplane/core";
import { batchOffsets, leadingBroadcastStrides, type MatmulParams } from "@backplane/core/backend";

export interface Operand {
  tensor: Tensor;
  /** True when stored transposed (column-major). */
  trans: boolean;
  /** Leading dimension in elements. */
  ld: number;
  /** Whether `tensor` is a copy the caller must dispose. */
  copied: boolean;
}

/**
 * The BLAS description of a rows x cols matrix with strides (s0, s1), or undefined when
 * BLAS cannot read it in place. Row-major needs unit column stride and rows at least a
 * row apart (ld >= cols); column-major the mirror. An expanded (stride-0) or overlapping
 * view fails both and is copied: taking its row stride up to `cols` would read other
 * elements (and past the storage), which is how such views once gave wrong products.
 */
function layout(
  s0: number,
  s1: number,
  rows: number,
  cols: number,
): { trans: boolean; ld: number } | undefined {
  if (rows === 0 || cols === 0) return { trans: false, ld: Math.max(cols, 1) }; // nothing is read
  if (cols <= 1 || s1 === 1) {
    const ld = rows <= 1 ? Math.max(cols, 1) : s0;
    if (ld >= Math.max(cols, 1)) return { trans: false, ld };
  }
  if (rows <= 1 || s0 === 1) {
    const ld = cols <= 1 ? Math.max(rows, 1) : s1;
    if (ld >= Math.max(rows, 1)) return { trans: true, ld };
  }
  return undefined;
}

function operand(
  t: Tensor,
  strides: number[],
  rows: number,
  cols: number,
): { op: Operand; strides: number[] } {
  const l = layout(strides[strides.length - 2], strides[strides.length - 1], rows, cols);
  if (l) return { op: { tensor: t, ...l, copied: false }, strides };
  const c = t.contiguous();
  // A 1-D operand is a 1 x k row (a) or a k x 1 column (b): its copy's matrix strides are
  // those, not the copy's single stride (which left the leading dimension undefined).
  const s = t.rank === 1 ? (cols === 1 ? [1, 0] : [0, 1]) : [...c.strides];
  return {
    op: { tensor: c, ...layout(s[s.length - 2], s[s.length - 1], rows, cols)!, copied: true },
    strides: s,
  };
}

export interface GemmPlan {
  a: Operand;
  b: Operand;
  /** Element offsets of each batch's A and B matrices (from each tensor's offset). */
  aOffsets: Float64Array;
  bOffsets: Float64Array;
  release(): void;
}

/** Lays out both operands of a matmul and the offsets of every batch. */
export function planGemm(p: MatmulParams): GemmPlan {
  const a = operand(p.a, p.aStrides, p.m, p.k);
  let b: ReturnType<typeof operand>;
  try {
    b = operand(p.b, p.bStrides, p.k, p.n);
  } catch (e) {
    // b's copy failed (out of memory): no plan reaches the caller to release a's copy.
    if (a.op.copied) a.op.tensor.dispose();
    throw e;
  }
  const [aOffsets, bOffsets] = batchOffsets(p.batchShape, [
    leadingBroadcastStrides(p.aShape.slice(0, -2), a.strides.slice(0, -2), p.batchShape),
    leadingBroadcastStrides(p.bShape.slice(0, -2), b.strides.slice(0, -2), p.batchShape),
  ]);
  return {
    a: a.op,
    b: b.op,
    aOffsets,
    bOffsets,
    release() {
      if (a.op.copied) a.op.tensor.dispose();
      if (b.op.copied) b.op.tensor.dispose();
    },
  };
}
