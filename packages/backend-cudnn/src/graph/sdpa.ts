/**
 * scaledDotProductAttention as cuDNN's fused flash-attention pattern (the graph cuDNN's
 * attention engines match): S = Q K^T (float32), S *= scale, [S += mask | S = mask ? S : -inf],
 * [causal: S = row >= col ? S : -inf], softmax as max / subtract / exp / sum / divide with
 * the row statistics max + log(sum) written out, then O = P V with P in the input dtype.
 * Tensors are 4-D [batch, heads, rows, cols] with their real strides; a key/value with fewer
 * heads than the query is grouped-query attention.
 */

import type { Tensor } from "@backplane/core";
import { leadingBroadcastStrides, type SdpaParams } from "@backplane/core/backend";
import type { DataType, GraphBuilder, TensorSpec } from "./builder.ts";
import type { Descriptor } from "./descriptor.ts";
import { alignmentOf, dataTypeOf, UID } from "./tensors.ts";

/** [dims, strides] of a rank-2..4 tensor as 4-D (missing leading dims of size 1). */
export function as4d(t: Tensor): { dims: number[]; strides: number[] } | undefined {
  if (t.rank < 2 || t.rank > 4) return undefined;
  const dims = [...t.shape];
  const strides = [...t.strides];
  while (dims.length < 4) {
    dims.unshift(1);
    strides.unshift((strides[0] ?? 1) * (dims[1] ?? 1));
  }
  return { dims, strides };
}

/** The mask as a 4-D tensor over [B, H, L, S]: broadcast dims become size 1. */
export function mask4d(
  mask: Tensor,
  full: readonly number[],
): { dims: number[]; strides: number[] } {
  const st = leadingBroadcastStrides(mask.shape, mask.strides, full);
  const dims = full.map((d, i) => (st[i] === 0 ? 1 : d));
  const strides = st.map((s, i) =>
    s === 0 ? (i === 3 ? 1 : dims.slice(i + 1).reduce((a, b) => a * b, 1)) : s,
  );
  return { dims, strides };
}

const f32 = "CUDNN_DATA_FLOAT" as const;

/**
 * The choices cuDNN's pattern matching depends on. The defaults are the graph this package
 * runs; scripts/gpu-check/attention-probe.ts builds the others on a GPU to see which cuDNN
 * plans (cuDNN 9.19 on an H200: none without the statistics, none with float
 * probabilities; either compute type for the causal comparison).
 */
export interface SdpaGraphOptions {
  /** Write the softmax statistics (max + log sum) to UID.STATS. Default true. */
  statistics?: boolean;
  /** The probabilities' type before the second matmul. Default the inputs' type. */
  probabilities?: DataType;
  /** Compute type of GEN_INDEX and of the causal comparison. Default INT32 for both. */
  indexCompute?: DataType;
  compareCompute?: DataType;
}

// Long: the attention pattern node by node, in the order cuDNN matches it.
export function buildSdpaGraph(
  b: GraphBuilder,
  p: SdpaParams,
  opts: SdpaGraphOptions = {},
): Descriptor {
  const dtype: DataType = dataTypeOf(p.dtype);
  const q4 = as4d(p.query)!;
  const k4 = as4d(p.key)!;
  const v4 = as4d(p.value)!;
  const [B, H, L] = q4.dims as [number, number, number, number];
  const S = k4.dims[2]!;
  const Ev = v4.dims[3]!;
  const packed = (dims: number[]) =>
    dims.map((_, i) => dims.slice(i + 1).reduce((a, c) => a * c, 1));
  const scoresDims = [B, H, L, S];
  const virt = (uid: number, dims: number[], type: DataType = f32): TensorSpec => ({
    uid,
    dtype: type,
    dims,
    strides: packed(dims),
    virtual: true,
  });
  const q = b.tensor({ uid: UID.Q, dtype, ...q4, alignment: alignmentOf(p.query) });
  // K^T: K read with its last two strides swapped.
  const kT = b.tensor({
    uid: UID.K,
    dtype,
    dims: [k4.dims[0]!, k4.dims[1]!, k4.dims[3]!, k4.dims[2]!],
    strides: [k4.strides[0]!, k4.strides[1]!, k4.strides[3]!, k4.strides[2]!],
    alignment: alignmentOf(p.key),
  });
  const v = b.tensor({ uid: UID.V, dtype, ...v4, alignment: alignmentOf(p.value) });
  const outDims = [B, H, L, Ev];
  const o = b.tensor({ uid: UID.O, dtype, dims: outDims, strides: packed(outDims) });

  const scores = b.tensor(virt(UID.SCORES, scoresDims));
  b.matmul(q, kT, scores);
  const scale = b.tensor({
    uid: UID.SCALE,
    dtype: f32,
    dims: [1, 1, 1, 1],
    strides: [1, 1, 1, 1],
    byValue: true,
  });
  let s = b.tensor(virt(UID.SCALED, scoresDims));
  b.pointwise("CUDNN_POINTWISE_MUL", { x: scores, b: scale, y: s });

  // One by-value -inf scalar, shared by the bool mask and the causal mask.
  let negInfDesc: Descriptor | undefined;
  const negInf = () => (negInfDesc ??= b.tensor(negInfSpec()));
  if (p.attnMask) {
    const m4 = mask4d(p.attnMask, scoresDims);
    const mask = b.tensor({
      uid: UID.MASK,
      dtype: dataTypeOf(p.attnMask.dtype),
      ...m4,
      alignment: alignmentOf(p.attnMask),
    });
    const masked = b.tensor(virt(UID.MASKED, scoresDims));
    if (p.maskKind === "bool")
      b.pointwise("CUDNN_POINTWISE_BINARY_SELECT", { x: s, b: negInf(), t: mask, y: masked });
    else b.pointwise("CUDNN_POINTWISE_ADD", { x: s, b: mask, y: masked });
    s = masked;
  }
  if (p.isCausal) {
    // torch's is_causal keeps key j for query i when j <= i (top-left aligned).
    const row = b.tensor(virt(UID.ROW, scoresDims, "CUDNN_DATA_INT32"));
    b.pointwise(
      "CUDNN_POINTWISE_GEN_INDEX",
      { x: s, y: row },
      { axis: 2, compute: opts.indexCompute ?? "CUDNN_DATA_INT32" },
    );
    const col = b.tensor(virt(UID.COL, scoresDims, "CUDNN_DATA_INT32"));
    b.pointwise(
      "CUDNN_POINTWISE_GEN_INDEX",
      { x: s, y: col },
      { axis: 3, compute: opts.indexCompute ?? "CUDNN_DATA_INT32" },
    );
    const keep = b.tensor(virt(UID.CAUSAL, scoresDims, "CUDNN_DATA_BOOLEAN"));
    b.pointwise(
      "CUDNN_POINTWISE_CMP_GE",
      { x: row, b: col, y: keep },
      { compute: opts.compareCompute ?? "CUDNN_DATA_INT32" },
    );
    const out = b.tensor(virt(UID.CAUSAL_OUT, scoresDims));
    b.pointwise("CUDNN_POINTWISE_BINARY_SELECT", {
      x: s,
      b: negInf(),
      t: keep,
      y: out,
    });
    s = out;
  }
  const rowDims = [B, H, L, 1];
  const max = b.tensor(virt(UID.MAX, rowDims));
  b.reduction("MAX", s, max);
  const shifted = b.tensor(virt(UID.SHIFTED, scoresDims));
  b.pointwise("CUDNN_POINTWISE_SUB", { x: s, b: max, y: shifted });
  const e = b.tensor(virt(UID.EXP, scoresDims));
  b.pointwise("CUDNN_POINTWISE_EXP", { x: shifted, y: e });
  const sum = b.tensor(virt(UID.SUM, rowDims));
  b.reduction("ADD", e, sum);
  // The statistics output is what cuDNN 9.19's attention engines match on: without it every
  // engine refused the graph on an H200 ("tag_mha_graph" in cuDNN's log); with it engine 2
  // ran it. Written to a scratch buffer the kernel allocates per call.
  if (opts.statistics ?? true) {
    const logSum = b.tensor(virt(UID.LOG_SUM, rowDims));
    b.pointwise("CUDNN_POINTWISE_LOG", { x: sum, y: logSum });
    const stats = b.tensor({ uid: UID.STATS, dtype: f32, dims: rowDims, strides: packed(rowDims) });
    b.pointwise("CUDNN_POINTWISE_ADD", { x: max, b: logSum, y: stats });
  }
  const probs = b.tensor(virt(UID.PROBS, scoresDims, opts.probabilities ?? dtype));
  b.pointwise("CUDNN_POINTWISE_DIV", { x: e, b: sum, y: probs });
  b.matmul(probs, v, o);
  return b.graph();
}

function negInfSpec(): TensorSpec {
  return { uid: UID.NEG_INF, dtype: f32, dims: [1, 1, 1, 1], strides: [1, 1, 1, 1], byValue: true };
}

/** Bytes of the statistics output (float32 [B, H, L, 1]). */
export function sdpaStatsBytes(p: SdpaParams): number {
  const q4 = as4d(p.query)!;
  return q4.dims[0]! * q4.dims[1]! * q4.dims[2]! * 4;
}

/** The by-value scalars a variant pack passes for this graph: uid -> float32 value. */
export function sdpaScalars(p: SdpaParams): Map<number, number> {
  const out = new Map<number, number>([[UID.SCALE, p.scale]]);
  if (p.maskKind === "bool" || p.isCausal) out.set(UID.NEG_INF, Number.NEGATIVE_INFINITY);
  return out;
}
