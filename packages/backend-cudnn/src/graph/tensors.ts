/** What the graphs share: tensor uids, dtype mapping, memory formats and pointer alignment. */
import { bytesPerElement, type DType, type Tensor } from "@backplane/core";
import type { DataType } from "./builder.ts";

/** The uids of every tensor a graph of this package binds or passes between its nodes. */
export const UID = {
  X: 1,
  W: 2,
  Y: 3,
  BIAS: 4,
  Q: 11,
  K: 12,
  V: 13,
  O: 14,
  SCALE: 15,
  MASK: 16,
  NEG_INF: 17,
  /** Softmax statistics (row max + log of the row sum), float32 [B, H, L, 1]. */
  STATS: 18,
  // Virtual intermediates
  CONV_OUT: 101,
  BIAS_OUT: 102,
  SCORES: 111,
  SCALED: 112,
  MASKED: 113,
  ROW: 114,
  COL: 115,
  CAUSAL: 116,
  CAUSAL_OUT: 117,
  MAX: 118,
  SHIFTED: 119,
  EXP: 120,
  SUM: 121,
  PROBS: 122,
  LOG_SUM: 123,
} as const;

const DATA_TYPES: Partial<Record<DType, DataType>> = {
  float32: "CUDNN_DATA_FLOAT",
  float16: "CUDNN_DATA_HALF",
  bfloat16: "CUDNN_DATA_BFLOAT16",
  float64: "CUDNN_DATA_DOUBLE",
  bool: "CUDNN_DATA_BOOLEAN",
};

export function dataTypeOf(dtype: DType): DataType {
  const t = DATA_TYPES[dtype];
  if (!t) throw new Error(`no cuDNN data type for ${dtype}`);
  return t;
}

export type Layout = "NCHW" | "NHWC";

/** The memory format of a 4-D tensor: packed NCHW, packed channels-last, or neither. */
export function layoutOf(t: Tensor): Layout | undefined {
  if (t.rank !== 4) return undefined;
  const [, c, h, w] = t.shape as [number, number, number, number];
  const s = t.strides;
  const same = (want: number[]) => want.every((v, i) => t.shape[i] === 1 || s[i] === v);
  if (same([c * h * w, h * w, w, 1])) return "NCHW";
  if (same([h * w * c, 1, w * c, c])) return "NHWC";
  return undefined;
}

/** The largest power of two (up to 16) that the tensor's first element's byte offset is a multiple of. */
export function alignmentOf(t: Tensor): number {
  const bytes = t.offset * bytesPerElement(t.dtype);
  let a = 16;
  while (a > 1 && bytes % a !== 0) a /= 2;
  return a;
}
