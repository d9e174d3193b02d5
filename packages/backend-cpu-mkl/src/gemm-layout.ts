/**
 * How each matmul operand reaches a GEMM routine: as stored (row-major), transposed
 * (column-major, e.g. a transpose() view), or, for other strides, as a contiguous copy.
 * Shared by the native (cblas) and WASM kernels.
 */
import {
  batchOffsets,
  leadingBroadcastStrides,
  type MatmulParams,
  type Tensor,
} from "@backplane/core";

export interface Operand {
  tensor: Tensor;
  /** True when stored transposed (column-major). */
  trans: boolean;
  /** Leading dimension in elements. */
  ld: number;
  /** Whether `tensor` is a copy the caller must dispose. */
  copied: boolean;
}

function layout(
  s0: number,
  s1: number,
  rows: number,
  cols: number,
): { trans: boolean; ld: number } | undefined {
  if (s1 === 1 || cols === 1) return { trans: false, ld: Math.max(s0, cols, 1) };
  if (s0 === 1 || rows === 1) return { trans: true, ld: Math.max(s1, rows, 1) };
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
  const s = [...c.strides];
  return {
    op: { tensor: c, ...layout(s[s.length - 2], s[s.length - 1], rows, cols)!, copied: true },
    strides: s,
  };
}

export interface GemmPlan {
  a: Operand;
  b: Operand;
  /** Element offsets of each batch's A and B matrices (from each tensor's offset). */
  aOffsets: Int32Array;
  bOffsets: Int32Array;
  release(): void;
}

/** Lays out both operands of a matmul and the offsets of every batch. */
export function planGemm(p: MatmulParams): GemmPlan {
  const a = operand(p.a, p.aStrides, p.m, p.k);
  const b = operand(p.b, p.bStrides, p.k, p.n);
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
