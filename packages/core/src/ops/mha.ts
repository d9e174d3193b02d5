/**
 * multiHeadAttention (torch.nn.functional.multi_head_attention_forward, batch first, no
 * attention weights returned): in-projections of query/key/value with the packed weight
 * [3E, E] (or separate ones, [E, E], [E, kdim], [E, vdim], as torch's kdim/vdim), numHeads
 * heads of scaledDotProductAttention, out-projection [E, E].
 *
 * query [L, E] or [B, L, E]; key [S, kdim] and value [S, vdim] (batched: [B, S, ...]);
 * kdim = vdim = E with the packed weight; masks broadcast to [B, numHeads, L, S]. Boolean masks follow scaledDotProductAttention:
 * true = may attend (torch.nn.MultiheadAttention's boolean masks mean the opposite).
 * A row whose keys are all masked attends to nothing: 0 before the out-projection, so
 * outProjBias after it (torch with need_weights=False; its need_weights=True path gives NaN).
 *
 * Two kernels (core reference backend): "fast-path" (flag mha.fastpathEnabled), which for
 * self-attention (query, key and value the same tensor) runs the three in-projections as
 * one matmul of the packed weight, and "slow-path", three projections. Both run the
 * attention itself through the dispatcher, so the fastest SDPA kernel serves them.
 */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DeviceError, DTypeError, ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import type { Tensor } from "../tensor/tensor.ts";
import {
  checkBool,
  checkBroadcastsTo,
  checkFloat,
  checkInt,
  checkOptions,
  checkRank,
  checkSame,
  checkTensor,
} from "./validate.ts";

export interface MhaOptions {
  /**
   * Packed in-projection weight [3E, E]: rows [0, E) project queries, [E, 2E) keys,
   * [2E, 3E) values. Or, for keys and values of other widths, the three below instead.
   */
  inProjWeight?: Tensor;
  /** Separate in-projections (torch's kdim/vdim, q_proj_weight...): [E, E]. */
  qProjWeight?: Tensor;
  /** [E, kdim], kdim = key's last dim. */
  kProjWeight?: Tensor;
  /** [E, vdim], vdim = value's last dim. */
  vProjWeight?: Tensor;
  /** Packed in-projection bias [3E]. */
  inProjBias?: Tensor | null;
  /** Out-projection weight [E, E]. */
  outProjWeight: Tensor;
  /** Out-projection bias [E]. */
  outProjBias?: Tensor | null;
  /** Heads; must divide E. */
  numHeads: number;
  /** Boolean (true = attend) or additive mask, broadcastable to [B, numHeads, L, S]. */
  attnMask?: Tensor | null;
  isCausal?: boolean;
}

export interface MhaParams extends OpParams {
  query: Tensor;
  key: Tensor;
  value: Tensor;
  /** The packed [3E, E] weight, or null where the three separate ones are given. */
  inProjWeight: Tensor | null;
  /** The separate in-projections [E, E], [E, kdim], [E, vdim], or null (packed). */
  qProjWeight: Tensor | null;
  kProjWeight: Tensor | null;
  vProjWeight: Tensor | null;
  inProjBias: Tensor | null;
  outProjWeight: Tensor;
  outProjBias: Tensor | null;
  numHeads: number;
  headDim: number;
  attnMask: Tensor | null;
  isCausal: boolean;
  /** query, key and value are one tensor (the same storage, offset, shape and strides). */
  selfAttention: boolean;
  /** [] (unbatched) or [B]. */
  batchShape: number[];
  L: number;
  S: number;
  E: number;
}

const OP = "multiHeadAttention";

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Whether two tensors are the same values: one object, or views of the same elements. */
export function sameTensor(a: Tensor, b: Tensor): boolean {
  return (
    a === b ||
    (a.storage === b.storage &&
      a.offset === b.offset &&
      a.dtype === b.dtype &&
      sameShape(a.shape, b.shape) &&
      sameShape(a.strides, b.strides))
  );
}

function checkShapeIs(name: string, t: Tensor, want: number[], what: string): void {
  if (!sameShape(t.shape, want))
    throw new ShapeError(`${OP}: ${name} must have shape [${want}] (${what}), got [${t.shape}]`);
}

const SEPARATE = ["qProjWeight", "kProjWeight", "vProjWeight"] as const;

/**
 * The option object, checked: known keys, the required ones present, and the in-projection
 * either packed (inProjWeight) or separate (all three of SEPARATE), not both.
 */
function checkMhaOptions(opts: MhaOptions): MhaOptions {
  if (opts === undefined)
    throw new ArgumentError(
      `${OP}: options { inProjWeight, outProjWeight, numHeads } are required`,
    );
  const o = checkOptions(OP, opts, [
    "inProjWeight",
    ...SEPARATE,
    "inProjBias",
    "outProjWeight",
    "outProjBias",
    "numHeads",
    "attnMask",
    "isCausal",
  ]) as unknown as MhaOptions;
  for (const req of ["outProjWeight", "numHeads"] as const)
    if (o[req] === undefined || o[req] === null)
      throw new ArgumentError(`${OP}: option ${req} is required`);
  const separate = SEPARATE.filter((k) => o[k] != null);
  if (o.inProjWeight != null && separate.length > 0)
    throw new ArgumentError(
      `${OP}: pass either inProjWeight (packed) or qProjWeight, kProjWeight and vProjWeight, not both`,
    );
  if (o.inProjWeight == null && separate.length === 0)
    throw new ArgumentError(
      `${OP}: option inProjWeight is required (or qProjWeight, kProjWeight and vProjWeight for keys and values of other widths)`,
    );
  if (separate.length > 0 && separate.length < 3)
    throw new ArgumentError(
      `${OP}: qProjWeight, kProjWeight and vProjWeight go together, got only ${separate.join(", ")}`,
    );
  return o;
}

/** An optional tensor option: null when absent (undefined or null), else checked. */
const optional = (name: string, t: Tensor | null | undefined) =>
  t == null ? null : checkTensor(OP, name, t);

/** The projection weights and biases, as tensors on the inputs' device and dtype. */
function checkProjections(query: Tensor, key: Tensor, value: Tensor, o: MhaOptions) {
  const proj = {
    inProjWeight: optional("inProjWeight", o.inProjWeight),
    qProjWeight: optional("qProjWeight", o.qProjWeight),
    kProjWeight: optional("kProjWeight", o.kProjWeight),
    vProjWeight: optional("vProjWeight", o.vProjWeight),
    outProjWeight: checkTensor(OP, "outProjWeight", o.outProjWeight),
    inProjBias: optional("inProjBias", o.inProjBias),
    outProjBias: optional("outProjBias", o.outProjBias),
  };
  const given = Object.entries(proj).filter(([, t]) => t !== null) as [string, Tensor][];
  checkSame(
    OP,
    ["query", "key", "value", ...given.map(([n]) => n)],
    [query, key, value, ...given.map(([, t]) => t)],
  );
  return proj;
}

/**
 * query [B?, L, E], key [B?, S, kdim] and value [B?, S, vdim]: the sizes, checked against
 * each other. kdim = vdim = E with the packed in-projection.
 */
function checkSequences(query: Tensor, key: Tensor, value: Tensor, packed: boolean) {
  checkRank(OP, "query", query, 2, 3);
  if (key.rank !== query.rank)
    throw new ShapeError(
      `${OP}: key must have the rank of query (${query.rank}: [${query.rank === 3 ? "B, " : ""}S, E]), got shape [${key.shape}]`,
    );
  const r = query.rank;
  if (value.rank !== r || !sameShape(key.shape.slice(0, -1), value.shape.slice(0, -1)))
    throw new ShapeError(
      `${OP}: value [${value.shape}] must have key's [${key.shape}] dims but the last (the same ${r === 3 ? "batch and " : ""}sequence)`,
    );
  const L = query.shape[r - 2];
  const E = query.shape[r - 1];
  const S = key.shape[r - 2];
  for (const [name, t] of [
    ["key", key],
    ["value", value],
  ] as const)
    if (packed && t.shape[r - 1] !== E)
      throw new ShapeError(
        `${OP}: ${name}'s embed dim (${t.shape[r - 1]}) must equal query's (${E}) with the packed inProjWeight; for other widths pass qProjWeight, kProjWeight and vProjWeight`,
      );
  const batchShape = r === 3 ? [query.shape[0]] : [];
  if (r === 3 && key.shape[0] !== query.shape[0])
    throw new ShapeError(
      `${OP}: key has batch size ${key.shape[0]}, query has ${query.shape[0]}; they must match`,
    );
  return { L, E, S, kdim: key.shape[r - 1], vdim: value.shape[r - 1], batchShape };
}

/**
 * torch's 3-D attn_mask is [B * numHeads, L, S], which does not broadcast to our
 * [B, numHeads, L, S] when B > 1: say how to reshape it rather than only that it fails.
 */
function checkTorchMaskLayout(attnMask: Tensor, scores: number[]): void {
  if (scores.length !== 4 || attnMask.rank !== 3) return;
  const [B, H, L, S] = scores;
  if (B > 1 && sameShape(attnMask.shape, [B * H, L, S]))
    throw new ShapeError(
      `${OP}: attnMask of shape [${attnMask.shape}] is torch's [B * numHeads, L, S] layout; pass attnMask.reshape([${B}, ${H}, ${L}, ${S}]) (masks broadcast to [B, numHeads, L, S])`,
    );
}

/** attnMask (bool or additive, broadcasting to the scores) or isCausal, not both. */
function checkMask(query: Tensor, o: MhaOptions, scores: number[]) {
  const isCausal = checkBool(OP, "isCausal", o.isCausal, false);
  // Checked by type, not truthiness: attnMask 0, false or "" is an ArgumentError, not "no mask".
  const attnMask = o.attnMask == null ? null : checkTensor(OP, "attnMask", o.attnMask);
  if (attnMask) {
    if (attnMask.device !== query.device)
      throw new DeviceError(
        `${OP}: attnMask is on ${attnMask.device} but query is on ${query.device}; move it to the query's device with .to()`,
      );
    if (attnMask.dtype !== "bool" && attnMask.dtype !== query.dtype)
      throw new DTypeError(
        `${OP}: attnMask must be bool or the query's dtype (${query.dtype}), got ${attnMask.dtype}`,
      );
    if (isCausal)
      throw new ArgumentError(`${OP}: pass either attnMask or isCausal, not both (as in torch)`);
    checkTorchMaskLayout(attnMask, scores);
    checkBroadcastsTo(OP, "attnMask", attnMask.shape, scores, "the scores [B, numHeads, L, S]");
  }
  return { attnMask, isCausal };
}

function prepare(query: Tensor, key: Tensor, value: Tensor, opts: MhaOptions): MhaParams {
  checkTensor(OP, "query", query);
  checkTensor(OP, "key", key);
  checkTensor(OP, "value", value);
  // Before the dtype match with the weights: a bool or int query needs floats, not bool weights.
  checkFloat(OP, "query", query);
  const o = checkMhaOptions(opts);
  const proj = checkProjections(query, key, value, o);
  const { L, E, S, kdim, vdim, batchShape } = checkSequences(
    query,
    key,
    value,
    proj.inProjWeight !== null,
  );
  const numHeads = checkInt(OP, "numHeads", o.numHeads, 1);
  if (E % numHeads !== 0)
    throw new ShapeError(
      `${OP}: embed dim ${E} is not divisible by numHeads (${numHeads}); pick numHeads dividing E (each head gets E / numHeads features)`,
    );
  if (proj.inProjWeight)
    checkShapeIs("inProjWeight", proj.inProjWeight, [3 * E, E], "[3E, E], E = query's embed dim");
  if (proj.qProjWeight && proj.kProjWeight && proj.vProjWeight) {
    checkShapeIs("qProjWeight", proj.qProjWeight, [E, E], "[E, E], E = query's embed dim");
    checkShapeIs("kProjWeight", proj.kProjWeight, [E, kdim], "[E, kdim], kdim = key's last dim");
    checkShapeIs("vProjWeight", proj.vProjWeight, [E, vdim], "[E, vdim], vdim = value's last dim");
  }
  checkShapeIs("outProjWeight", proj.outProjWeight, [E, E], "[E, E]");
  if (proj.inProjBias) checkShapeIs("inProjBias", proj.inProjBias, [3 * E], "[3E]");
  if (proj.outProjBias) checkShapeIs("outProjBias", proj.outProjBias, [E], "[E]");
  const { attnMask, isCausal } = checkMask(query, o, [...batchShape, numHeads, L, S]);
  return {
    query,
    key,
    value,
    ...proj,
    numHeads,
    headDim: E / numHeads,
    attnMask,
    isCausal,
    selfAttention: sameTensor(query, key) && sameTensor(key, value),
    batchShape,
    L,
    S,
    E,
    deviceType: query.deviceType,
    dtype: query.dtype,
  };
}

export const mhaOp: OpRecord<
  MhaParams,
  [query: Tensor, key: Tensor, value: Tensor, opts: MhaOptions],
  Tensor
> = defineOp({
  name: OP,
  prepare,
  shapeKey: (p: MhaParams) =>
    `${p.batchShape.length ? `${p.batchShape[0]}x` : ""}L${p.L},S${p.S},E${p.E},H${p.numHeads}${p.selfAttention ? ",self" : ""}${p.attnMask ? ",mask" : ""}${p.isCausal ? ",causal" : ""}`,
});

/**
 * Multi-head attention: softmax((x Wq^T + bq)(x Wk^T + bk)^T / sqrt(E / numHeads)) (x Wv^T + bv),
 * per head, heads concatenated, times Wo^T plus bo. Returns [..., L, E].
 */
export function multiHeadAttention(
  query: Tensor,
  key: Tensor,
  value: Tensor,
  opts: MhaOptions,
): Tensor {
  return dispatch(mhaOp, prepare(query, key, value, opts));
}
