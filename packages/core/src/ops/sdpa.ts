/**
 * scaledDotProductAttention (torch.nn.functional.scaled_dot_product_attention):
 * q [..., Hq, L, E], k [..., Hk, S, E], v [..., Hk, S, Ev]; boolean (true = attend) or
 * additive masks broadcastable to [..., Hq, L, S]; causal; scale; dropout with a seed; GQA.
 * A fully masked row is 0, a +inf score makes its row NaN; an inf or NaN in V at a key a
 * row does not attend is NaN or ignored depending on whether the kernel's tiles cover it
 * (packages/core/README.md).
 */
import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DeviceError, DTypeError, ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import { isFloat } from "../tensor/dtype.ts";
import { foldSeed, type Tensor } from "../tensor/tensor.ts";
import {
  broadcastShapes,
  checkBool,
  checkBroadcastsTo,
  checkNumber,
  checkOptions,
  checkRank,
  checkSame,
  checkTensor,
} from "./validate.ts";

export interface SdpaOptions {
  attnMask?: Tensor | null;
  dropoutP?: number;
  isCausal?: boolean;
  scale?: number | null;
  enableGqa?: boolean;
  /** Seed of the dropout mask (reproducible dropout); random when omitted. */
  seed?: number;
}

export interface SdpaParams extends OpParams {
  query: Tensor;
  key: Tensor;
  value: Tensor;
  attnMask: Tensor | null;
  /** "bool" masks select, "additive" masks are added to the scores. */
  maskKind: "none" | "bool" | "additive";
  dropoutP: number;
  isCausal: boolean;
  scale: number;
  enableGqa: boolean;
  seed: number;
  /** Leading (batch) dims of the output, heads included. */
  batchShape: number[];
  L: number;
  S: number;
  E: number;
  Ev: number;
  headsQ: number;
  headsKV: number;
}

/**
 * The batch dims of key and value broadcast together, as torch's matmuls broadcast them
 * (key [2, ...] with value [1, ...] is fine). Under enableGqa each one's heads must divide
 * the query's; a kv head count of 1 broadcasts, two different ones (which torch repeats
 * separately) are refused: the kernels map both through one group size.
 */
function kvBatchDims(
  op: string,
  headsQ: number,
  key: Tensor,
  value: Tensor,
  enableGqa: boolean,
): number[] {
  const kb = key.shape.slice(0, -2);
  const vb = value.shape.slice(0, -2);
  if (enableGqa)
    for (const [name, b] of [
      ["key", kb],
      ["value", vb],
    ] as const) {
      const heads = b[b.length - 1];
      // No heads (0) divide only no query heads: torch gives the empty output there.
      if (heads === 0 ? headsQ !== 0 : headsQ % heads !== 0)
        throw new ShapeError(
          `${op}: with enableGqa, query heads (${headsQ}) must be a multiple of ${name} heads (${heads})`,
        );
    }
  const kh = kb[kb.length - 1];
  const vh = vb[vb.length - 1];
  if (enableGqa && kh !== vh && kh !== 1 && vh !== 1)
    throw new ShapeError(
      `${op}: with enableGqa, key heads (${kh}) and value heads (${vh}) must be equal (or one of them 1): the kernels map query heads to both through one group size; repeat the one with fewer heads (torch repeats each separately)`,
    );
  return broadcastShapes(op, kb, vb, ["key's batch dims", "value's batch dims"]);
}

// Long: SDPA's argument checks in the order torch reports them; each is a line or two.
function prepare(query: Tensor, key: Tensor, value: Tensor, opts?: SdpaOptions): SdpaParams {
  const op = "scaledDotProductAttention";
  checkTensor(op, "query", query);
  checkTensor(op, "key", key);
  checkTensor(op, "value", value);
  checkSame(op, ["query", "key", "value"], [query, key, value]);
  if (!isFloat(query.dtype))
    throw new DTypeError(`${op}: query has dtype ${query.dtype}; expected a floating dtype`);
  checkRank(op, "query", query, 2, Number.POSITIVE_INFINITY);
  checkRank(op, "key", key, 2, Number.POSITIVE_INFINITY);
  checkRank(op, "value", value, 2, Number.POSITIVE_INFINITY);
  const o = checkOptions(op, opts, [
    "attnMask",
    "dropoutP",
    "isCausal",
    "scale",
    "enableGqa",
    "seed",
  ]) as SdpaOptions;
  const L = query.shape[query.rank - 2];
  const E = query.shape[query.rank - 1];
  const S = key.shape[key.rank - 2];
  const Ev = value.shape[value.rank - 1];
  if (key.shape[key.rank - 1] !== E)
    throw new ShapeError(
      `${op}: key's last dim (${key.shape[key.rank - 1]}) must equal query's (${E})`,
    );
  if (value.shape[value.rank - 2] !== S)
    throw new ShapeError(`${op}: value has ${value.shape[value.rank - 2]} positions, key has ${S}`);
  const enableGqa = checkBool(op, "enableGqa", o.enableGqa, false);
  const qb = query.shape.slice(0, -2);
  // torch reads the heads at dim -3 of all three under enable_gqa (an IndexError below rank 3).
  if (enableGqa && Math.min(query.rank, key.rank, value.rank) < 3)
    throw new ShapeError(
      `${op}: with enableGqa, query, key and value need a heads dimension (rank >= 3); got ranks ${query.rank}, ${key.rank}, ${value.rank}`,
    );
  const headsQ = qb.length > 0 ? qb[qb.length - 1] : 1;
  let kb = kvBatchDims(op, headsQ, key, value, enableGqa);
  const headsKV = kb.length > 0 ? kb[kb.length - 1] : 1;
  if (enableGqa && qb.length > 0 && kb.length > 0 && headsQ !== headsKV)
    kb = [...kb.slice(0, -1), headsQ];
  if (!enableGqa && headsKV > 1 && headsQ > headsKV && headsQ % headsKV === 0 && kb.length > 0)
    throw new ShapeError(
      `${op}: query has ${headsQ} heads but key and value have ${headsKV}; for grouped-query attention pass enableGqa: true`,
    );
  const batchShape = broadcastShapes(op, qb, kb, ["query's batch dims", "key's batch dims"]);
  const isCausal = checkBool(op, "isCausal", o.isCausal, false);
  // Checked by type, not truthiness: attnMask 0, false or "" is an ArgumentError, not "no mask".
  const attnMask = o.attnMask == null ? null : checkTensor(op, "attnMask", o.attnMask);
  let maskKind: SdpaParams["maskKind"] = "none";
  if (attnMask) {
    if (attnMask.device !== query.device)
      throw new DeviceError(
        `${op}: attnMask is on ${attnMask.device} but query is on ${query.device}; move it to the query's device with .to()`,
      );
    if (isCausal)
      throw new ArgumentError(`${op}: pass either attnMask or isCausal, not both (as in torch)`);
    if (attnMask.dtype === "bool") maskKind = "bool";
    else if (attnMask.dtype === query.dtype) maskKind = "additive";
    else
      throw new DTypeError(
        `${op}: attnMask must be bool or the query's dtype (${query.dtype}), got ${attnMask.dtype}`,
      );
    checkBroadcastsTo(
      op,
      "attnMask",
      attnMask.shape,
      [...batchShape, L, S],
      "the scores [..., L, S]",
    );
  }
  const dropoutP = checkNumber(op, "dropoutP", o.dropoutP ?? 0, 0, 1);
  const scale = o.scale == null ? 1 / Math.sqrt(E) : checkNumber(op, "scale", o.scale);
  const seed = o.seed ?? (Math.random() * 2 ** 32) >>> 0;
  if (!Number.isInteger(seed)) throw new ArgumentError(`${op}: seed must be an integer`);
  return {
    query,
    key,
    value,
    attnMask,
    maskKind,
    dropoutP,
    isCausal,
    scale,
    enableGqa,
    // 32 bits for the kernels, every bit of the seed counting (foldSeed).
    seed: foldSeed(seed),
    batchShape,
    L,
    S,
    E,
    Ev,
    headsQ,
    headsKV,
    deviceType: query.deviceType,
    dtype: query.dtype,
  };
}

export const sdpaOp: OpRecord<
  SdpaParams,
  [query: Tensor, key: Tensor, value: Tensor, opts?: SdpaOptions],
  Tensor
> = defineOp({
  name: "scaledDotProductAttention",
  prepare,
  shapeKey: (p: SdpaParams) =>
    `${p.batchShape.join("x")},L${p.L},S${p.S},E${p.E},Ev${p.Ev},${p.maskKind}${p.isCausal ? ",causal" : ""}`,
  work: (p: SdpaParams) => 2 * p.L * p.S * (p.E + p.Ev) * p.batchShape.reduce((a, b) => a * b, 1),
  result: (p: SdpaParams) => ({ shape: [...p.batchShape, p.L, p.Ev], dtype: p.dtype }),
});

/** softmax(q k^T * scale + mask) v, with dropout on the attention weights. */
export function scaledDotProductAttention(
  query: Tensor,
  key: Tensor,
  value: Tensor,
  opts?: SdpaOptions,
): Tensor {
  return dispatch(sdpaOp, prepare(query, key, value, opts));
}
