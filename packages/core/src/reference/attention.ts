/**
 * The "math" SDPA kernel, the reference for every attention kernel: scores = q k^T * scale,
 * mask (boolean selects, additive adds) or causal, softmax, seeded dropout, times v.
 * A row whose every score is masked gives 0, as PyTorch 2.13 gives on every backend.
 */
import type { SdpaParams } from "../ops/sdpa.ts";
import { seededRandom, type Tensor } from "../tensor/tensor.ts";
import { batchOffsets, leadingBroadcastStrides, output, reader, writer } from "./access.ts";

// Long: the float64 reference: scores, mask, softmax, dropout, output in one readable loop nest.
export function sdpaReference(p: SdpaParams): Tensor {
  const { query: q, key: k, value: v, L, S, E, Ev, batchShape, scale } = p;
  const out = output([...batchShape, L, Ev], p.dtype);
  const Q = reader(q);
  const K = reader(k);
  const V = reader(v);
  const M = p.attnMask ? reader(p.attnMask) : undefined;
  const Wr = writer(out);
  const hb = batchShape.length - 1; // index of the heads dim in batchShape
  // GQA: query head h reads key/value head floor(h / (Hq / Hkv)).
  const group = p.enableGqa && p.headsQ !== p.headsKV ? p.headsQ / p.headsKV : 1;
  const batchStrides = (t: Tensor) =>
    leadingBroadcastStrides(t.shape.slice(0, -2), t.strides.slice(0, -2), batchShape);
  const qs = batchStrides(q);
  const ks = batchStrides(k);
  const vs = batchStrides(v);
  let mOff: Float64Array | undefined;
  let ms0 = 0;
  let ms1 = 0;
  if (p.attnMask) {
    const full = [...batchShape, L, S];
    const st = leadingBroadcastStrides(p.attnMask.shape, p.attnMask.strides, full);
    [mOff] = batchOffsets(batchShape, [st.slice(0, -2)]);
    ms0 = st[st.length - 2];
    ms1 = st[st.length - 1];
  }
  const [qOff] = batchOffsets(batchShape, [qs]);
  // Key/value offsets: GQA maps the query head to its kv head, so compute per batch index.
  const kOff = new Float64Array(qOff.length);
  const vOff = new Float64Array(qOff.length);
  const idx = new Array<number>(batchShape.length).fill(0);
  for (let bi = 0; bi < qOff.length; bi++) {
    let ko = 0;
    let vo = 0;
    for (let d = 0; d < batchShape.length; d++) {
      const i = d === hb && group > 1 ? Math.floor(idx[d] / group) : idx[d];
      ko += i * ks[d];
      vo += i * vs[d];
    }
    kOff[bi] = ko;
    vOff[bi] = vo;
    for (let d = batchShape.length - 1; d >= 0; d--) {
      if (++idx[d] < batchShape[d]) break;
      idx[d] = 0;
    }
  }
  const [qs0, qs1] = q.strides.slice(-2);
  const [ks0, ks1] = k.strides.slice(-2);
  const [vs0, vs1] = v.strides.slice(-2);
  const rand = p.dropoutP > 0 ? seededRandom(p.seed) : undefined;
  const keep = 1 - p.dropoutP;
  const scores = new Float64Array(S);
  let o = 0;
  for (let bi = 0; bi < qOff.length; bi++) {
    for (let i = 0; i < L; i++) {
      let max = Number.NEGATIVE_INFINITY;
      let masked = 0;
      for (let j = 0; j < S; j++) {
        let s = 0;
        for (let e = 0; e < E; e++)
          s += Q(qOff[bi] + i * qs0 + e * qs1) * K(kOff[bi] + j * ks0 + e * ks1);
        // torch scales the factors (q and k by sqrt(scale)), so an empty dot product (E = 0)
        // stays 0 whatever the scale (1 / sqrt(0) = inf): the row averages v, not NaN.
        if (E > 0) s *= scale;
        if (p.isCausal && j > i) s = Number.NEGATIVE_INFINITY;
        if (M) {
          const m = M(mOff![bi] + i * ms0 + j * ms1);
          if (p.maskKind === "bool") {
            if (!m) s = Number.NEGATIVE_INFINITY;
          } else s += m;
        }
        scores[j] = s;
        if (s > max) max = s;
        if (s === Number.NEGATIVE_INFINITY) masked++;
      }
      // A row whose every score is -Infinity (fully masked) attends to nothing: 0, as
      // PyTorch 2.13's safe softmax gives on every backend (not exp(-inf + inf) = NaN).
      if (masked === S) {
        for (let e = 0; e < Ev; e++) Wr(o++, 0);
        // Dropout draws one number per (row, key) even here: element (bh, i, j) always
        // takes draw (bh * L + i) * S + j, the stream flash-cpu reproduces.
        if (rand) for (let j = 0; j < S; j++) rand();
        continue;
      }
      let sum = 0;
      for (let j = 0; j < S; j++) sum += scores[j] = Math.exp(scores[j] - max);
      for (let j = 0; j < S; j++) {
        let w = scores[j] / sum;
        if (rand) w = rand() < p.dropoutP ? 0 : w / keep;
        scores[j] = w;
      }
      for (let e = 0; e < Ev; e++) {
        let acc = 0;
        for (let j = 0; j < S; j++) acc += scores[j] * V(vOff[bi] + j * vs0 + e * vs1);
        Wr(o++, acc);
      }
    }
  }
  return out;
}
