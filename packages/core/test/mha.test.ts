import {
  ArgumentError,
  backends,
  DTypeError,
  explain,
  type MhaOptions,
  multiHeadAttention,
  randn,
  ShapeError,
  type Tensor,
  tensor,
  withKernelPriority,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

type Dt = "float32" | "float64";

function weights(E: number, dtype: Dt, seed = 10, bias = true): MhaOptions & { numHeads: number } {
  const s = 1 / Math.sqrt(E);
  const scaled = (shape: number[], k: number) => {
    const r = randn(shape, { seed: seed + k, dtype: "float64" }).toFloat64();
    return tensor(
      r.map((x) => x * s),
      { shape, dtype },
    );
  };
  return {
    inProjWeight: scaled([3 * E, E], 1),
    inProjBias: bias ? scaled([3 * E], 2) : null,
    outProjWeight: scaled([E, E], 3),
    outProjBias: bias ? scaled([E], 4) : null,
    numHeads: 4,
  };
}

/** multi-head attention in float64 loops, straight from the definition. */
function naive(
  x: Tensor,
  kv: Tensor,
  o: MhaOptions,
  mask?: (b: number, h: number, i: number, j: number) => number,
): Float64Array {
  const batched = x.rank === 3;
  const B = batched ? x.shape[0] : 1;
  const L = x.shape[x.rank - 2];
  const S = kv.shape[kv.rank - 2];
  const E = x.shape[x.rank - 1];
  const H = o.numHeads;
  const d = E / H;
  const X = x.toFloat64();
  const KV = kv.toFloat64();
  const W = o.inProjWeight!.toFloat64();
  const bi = o.inProjBias ? o.inProjBias.toFloat64() : new Float64Array(3 * E);
  const Wo = o.outProjWeight.toFloat64();
  const bo = o.outProjBias ? o.outProjBias.toFloat64() : new Float64Array(E);
  const proj = (src: Float64Array, n: number, part: number, b: number) => {
    const out = new Float64Array(n * E);
    for (let i = 0; i < n; i++)
      for (let e = 0; e < E; e++) {
        let s = bi[part * E + e];
        for (let c = 0; c < E; c++) s += src[(b * n + i) * E + c] * W[(part * E + e) * E + c];
        out[i * E + e] = s;
      }
    return out;
  };
  const result = new Float64Array(B * L * E);
  for (let b = 0; b < B; b++) {
    const q = proj(X, L, 0, b);
    const k = proj(KV, S, 1, b);
    const v = proj(KV, S, 2, b);
    const heads = new Float64Array(L * E);
    for (let h = 0; h < H; h++)
      for (let i = 0; i < L; i++) {
        const sc = new Float64Array(S);
        let max = Number.NEGATIVE_INFINITY;
        for (let j = 0; j < S; j++) {
          let s = 0;
          for (let c = 0; c < d; c++) s += q[i * E + h * d + c] * k[j * E + h * d + c];
          s = s / Math.sqrt(d) + (mask ? mask(b, h, i, j) : 0);
          sc[j] = s;
          max = Math.max(max, s);
        }
        let sum = 0;
        for (let j = 0; j < S; j++) sum += sc[j] = Math.exp(sc[j] - max);
        for (let c = 0; c < d; c++) {
          let acc = 0;
          for (let j = 0; j < S; j++) acc += (sc[j] / sum) * v[j * E + h * d + c];
          heads[i * E + h * d + c] = acc;
        }
      }
    for (let i = 0; i < L; i++)
      for (let e = 0; e < E; e++) {
        let s = bo[e];
        for (let c = 0; c < E; c++) s += heads[i * E + c] * Wo[e * E + c];
        result[(b * L + i) * E + e] = s;
      }
  }
  return result;
}

function relErr(got: Tensor | Float64Array, want: Float64Array): number {
  const g = got instanceof Float64Array ? got : got.toFloat64();
  expect(g.length).toBe(want.length);
  let scale = 0;
  let e = 0;
  for (let i = 0; i < want.length; i++) {
    scale = Math.max(scale, Math.abs(want[i]));
    e = Math.max(e, Math.abs(g[i] - want[i]));
  }
  return e / scale;
}

const MHA = "multiHeadAttention";

describe("multiHeadAttention", () => {
  it("self-attention runs the fast path; both paths give the same result", () => {
    for (const dtype of ["float64", "float32"] as const) {
      const E = 16;
      const x = randn([2, 7, E], { seed: 1, dtype });
      const o = weights(E, dtype);
      expect(explain(MHA, x, x, x, o).selected).toBe("fast-path");
      const fast = multiHeadAttention(x, x, x, o);
      let slow: Tensor;
      {
        using _ = backends.mha.flags({ fastpathEnabled: false });
        const e = explain(MHA, x, x, x, o);
        expect(e.selected).toBe("slow-path");
        expect(e.candidates.find((c) => c.kernel === "fast-path")!.reason).toBe(
          "disabled by flag mha.fastpathEnabled = false",
        );
        slow = multiHeadAttention(x, x, x, o);
      }
      expect(fast.shape).toEqual([2, 7, E]);
      expect(fast.dtype).toBe(dtype);
      // The same products in the same order; allow float32 rounding.
      expect(relErr(fast, slow.toFloat64())).toBeLessThan(dtype === "float32" ? 1e-6 : 1e-14);
      expect(relErr(fast, naive(x, x, o))).toBeLessThan(dtype === "float32" ? 1e-5 : 1e-12);
    }
  });

  it("backends.mha.setFastpathEnabled switches the fast path", () => {
    const x = randn([1, 3, 8], { seed: 2, dtype: "float64" });
    const o = { ...weights(8, "float64"), numHeads: 2 };
    expect(backends.mha.getFastpathEnabled()).toBe(true);
    backends.mha.setFastpathEnabled(false);
    try {
      expect(explain(MHA, x, x, x, o).selected).toBe("slow-path");
    } finally {
      backends.mha.setFastpathEnabled(true);
    }
    expect(explain(MHA, x, x, x, o).selected).toBe("fast-path");
  });

  it("cross-attention takes the slow path, and the fast path says why", () => {
    const E = 12;
    const x = randn([2, 5, E], { seed: 3, dtype: "float64" });
    const mem = randn([2, 9, E], { seed: 4, dtype: "float64" });
    const o = { ...weights(E, "float64"), numHeads: 3 };
    const e = explain(MHA, x, mem, mem, o);
    expect(e.selected).toBe("slow-path");
    expect(e.candidates.find((c) => c.kernel === "fast-path")!.reason).toMatch(
      /not self-attention/,
    );
    const out = multiHeadAttention(x, mem, mem, o);
    expect(out.shape).toEqual([2, 5, E]);
    expect(relErr(out, naive(x, mem, o))).toBeLessThan(1e-12);
    // A copy of x is not x: the fast path needs one tensor.
    expect(explain(MHA, x, x.clone(), x, o).selected).toBe("slow-path");
    // A view of the same elements is.
    const view = x.reshape([2, 5, E]);
    expect(explain(MHA, x, view, x, o).selected).toBe("fast-path");
  });

  it("masks, causal, no biases and unbatched inputs", () => {
    const E = 8;
    const x = randn([6, E], { seed: 5, dtype: "float64" });
    const o = { ...weights(E, "float64", 20, false), numHeads: 2 };
    const causal = multiHeadAttention(x, x, x, { ...o, isCausal: true });
    expect(causal.shape).toEqual([6, E]);
    const causalMask = (_b: number, _h: number, i: number, j: number) =>
      j > i ? Number.NEGATIVE_INFINITY : 0;
    expect(relErr(causal, naive(x, x, o, causalMask))).toBeLessThan(1e-12);
    // Per-head additive mask [H, L, S].
    const addData = randn([2, 6, 6], { seed: 6, dtype: "float64" });
    const add = addData.toFloat64();
    const withAdd = multiHeadAttention(x, x, x, { ...o, attnMask: addData });
    expect(
      relErr(
        withAdd,
        naive(x, x, o, (_b, h, i, j) => add[(h * 6 + i) * 6 + j]),
      ),
    ).toBeLessThan(1e-12);
    // Boolean mask [L, S]: true = may attend, as scaledDotProductAttention.
    const keep = new Uint8Array(36).map((_, i) =>
      i % 6 <= Math.floor(i / 6) || i % 5 === 0 ? 1 : 0,
    );
    const boolMask = tensor(keep, { shape: [6, 6], dtype: "bool" });
    const withBool = multiHeadAttention(x, x, x, { ...o, attnMask: boolMask });
    const slowBool = (() => {
      using _ = backends.mha.flags({ fastpathEnabled: false });
      return multiHeadAttention(x, x, x, { ...o, attnMask: boolMask });
    })();
    const want = naive(x, x, o, (_b, _h, i, j) => (keep[i * 6 + j] ? 0 : Number.NEGATIVE_INFINITY));
    expect(relErr(withBool, want)).toBeLessThan(1e-12);
    expect(relErr(slowBool, want)).toBeLessThan(1e-12);
  });

  it("bad arguments are typed errors naming the argument", () => {
    const E = 8;
    const x = randn([2, 3, E], { seed: 7 });
    const o = weights(E, "float32");
    const call = (q: unknown, k: unknown, v: unknown, opts: unknown) => () =>
      multiHeadAttention(q as Tensor, k as Tensor, v as Tensor, opts as MhaOptions);
    expect(call(x, x, x, undefined)).toThrow(ArgumentError);
    expect(call(x, x, x, { ...o, inProjWeight: undefined })).toThrow(
      /option inProjWeight is required/,
    );
    expect(call(x, x, x, { ...o, numHeads: 3 })).toThrow(ShapeError);
    expect(call(x, x, x, { ...o, numHeads: 3 })).toThrow(
      /embed dim 8 is not divisible by numHeads \(3\)/,
    );
    expect(call(x, x, x, { ...o, numHeads: 0 })).toThrow(/numHeads must be an integer >= 1/);
    expect(call(x, x, x, { ...o, inProjWeight: randn([3 * E, E + 1]) })).toThrow(
      /inProjWeight must have shape \[24,8\]/,
    );
    expect(call(x, x, x, { ...o, outProjWeight: randn([E, 2 * E]) })).toThrow(/outProjWeight/);
    expect(call(x, x, x, { ...o, inProjBias: randn([E]) })).toThrow(
      /inProjBias must have shape \[24\]/,
    );
    expect(call(x, x, x, { ...o, outProjBias: randn([3 * E]) })).toThrow(/outProjBias/);
    expect(call(x, x, x, { ...o, inProjWeight: randn([3 * E, E], { dtype: "float64" }) })).toThrow(
      DTypeError,
    );
    expect(call(x, x, x, { ...o, inProjWeight: [[1]] })).toThrow(/inProjWeight must be a Tensor/);
    expect(call(x, randn([2, 3, 4]), randn([2, 3, 4]), o)).toThrow(/key's embed dim \(4\)/);
    expect(call(x, randn([2, 4, E]), randn([2, 5, E]), o)).toThrow(
      /value \[2,5,8\] must have key's \[2,4,8\] dims but the last/,
    );
    expect(call(x, randn([3, 4, E]), randn([3, 4, E]), o)).toThrow(/key has batch size 3/);
    expect(call(randn([E]), x, x, o)).toThrow(/query must have rank 2 to 3/);
    expect(call(x, x, x, { ...o, attnMask: randn([5, 5]) })).toThrow(/attnMask/);
    expect(call(x, x, x, { ...o, attnMask: randn([3, 3], { dtype: "float64" }) })).toThrow(
      DTypeError,
    );
    expect(call(x, x, x, { ...o, attnMask: randn([3, 3]), isCausal: true })).toThrow(
      /either attnMask or isCausal/,
    );
    expect(call(x, x, x, { ...o, heads: 2 })).toThrow(/unknown option "heads"/);
    const ints = tensor(new Int32Array(2 * 3 * E), { shape: [2, 3, E] });
    expect(call(ints, ints, ints, o)).toThrow(DTypeError);
  });
  it("a torch-layout [B * numHeads, L, S] mask is refused with the reshape that works", () => {
    // It was refused with the generic "does not broadcast" message only.
    const [B, H, L, S, E] = [3, 2, 4, 5, 8];
    const x = randn([B, L, E], { seed: 30, dtype: "float64" });
    const mem = randn([B, S, E], { seed: 31, dtype: "float64" });
    const o = { ...weights(E, "float64", 32), numHeads: H };
    const torchMask = randn([B * H, L, S], { seed: 33, dtype: "float64" });
    expect(() => multiHeadAttention(x, mem, mem, { ...o, attnMask: torchMask })).toThrow(
      /torch's \[B \* numHeads, L, S\] layout; pass attnMask.reshape\(\[3, 2, 4, 5\]\)/,
    );
    // The suggested reshape means what torch means: row b * H + h masks batch b, head h.
    const m = torchMask.toFloat64();
    const out = multiHeadAttention(x, mem, mem, {
      ...o,
      attnMask: torchMask.reshape([B, H, L, S]),
    });
    const want = naive(x, mem, o, (b, h, i, j) => m[((b * H + h) * L + i) * S + j]);
    expect(relErr(out, want)).toBeLessThan(1e-12);
  });

  it("a bool or int query is told to be floating, not to match the weights' dtype", () => {
    // A bool query was told "inProjWeight has dtype float32 but query has bool; they must match".
    const E = 8;
    const o = weights(E, "float32");
    const b = tensor(new Uint8Array(3 * E), { shape: [3, E], dtype: "bool" });
    expect(() => multiHeadAttention(b, b, b, o)).toThrow(
      /query has dtype bool; expected a floating dtype/,
    );
  });

  it("empty batch or query length: both paths give an empty result, as torch", () => {
    // The fast path once viewed k and v at columns E and 2E of an empty qkv projection,
    // which the view check refused (a ShapeError) where torch returns [B, 0, E] / [0, L, E].
    const E = 8;
    const o = weights(E, "float32");
    for (const shape of [
      [2, 0, E],
      [0, 3, E],
      [0, E],
    ]) {
      const x = randn(shape);
      for (const kernel of ["fast-path", "slow-path"]) {
        const y = withKernelPriority(MHA, [kernel], () => {
          expect(explain(MHA, x, x, x, o).selected).toBe(kernel);
          return multiHeadAttention(x, x, x, o);
        });
        expect(y.shape, `${kernel} [${shape}]`).toEqual(shape);
        y.dispose();
      }
      x.dispose();
    }
  });
});
