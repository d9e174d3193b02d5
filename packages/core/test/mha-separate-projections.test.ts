/**
 * multiHeadAttention with separate in-projections (torch's nn.MultiheadAttention(kdim,
 * vdim): q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim], the bias
 * still packed [3E]): against PyTorch 2.13's own output on one case, against float64 loops
 * from the definition on random ones (batched, unbatched, masks, causal), and the
 * refusals of mixed or partial weights.
 */
import {
  ArgumentError,
  explain,
  type MhaOptions,
  multiHeadAttention,
  randn,
  ShapeError,
  type Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

/** torch.manual_seed(3); MultiheadAttention(4, 2, kdim=3, vdim=2, batch_first=True), float64. */
const TORCH = {
  q_proj_weight: [
    -0.02, -0.5, 0.94, 1.08, 0.29, 0.08, 0.09, 0.18, 0.92, -0.76, 0.07, -0.0, -0.45, 0.91, 0.11,
    0.37,
  ],
  k_proj_weight: [-1.97, -2.03, 0.57, -0.12, -0.92, -0.74, 0.17, 0.01, 0.13, -0.47, -1.33, -1.71],
  v_proj_weight: [0.12, -0.05, -0.37, 1.01, 1.36, -0.6, -1.23, -0.02],
  in_proj_bias: [-0.53, -0.55, -1.07, 1.52, -0.02, -1.09, 0.1, 0.64, -0.4, 0.46, -1.88, -0.61],
  out_proj_weight: [
    -1.62, 0.74, 0.41, -0.5, 0.9, -0.28, 0.76, -0.92, 0.7, -0.33, -2.07, -0.48, 0.51, -0.08, 0.83,
    -0.47,
  ],
  out_proj_bias: [0.34, -1.11, -2.43, 0.01],
  q: [0.01, -1.67, 0.87, -2.25, -0.5, -0.54, -0.22, -1.12],
  k: [-0.51, 0.07, 0.09, 0.64, 0.25, 0.46, -0.14, -1.09, -0.32],
  v: [-1.53, -0.12, -1.45, -0.16, 0.7, 0.29],
  out: [
    -0.0517368019517308, -5.41783768935927, 3.76935808391394, -3.73003464818777, 1.43408761871975,
    -2.67629677792024, 1.17036527667479, -1.60790605623073,
  ],
};

const f64 = (data: number[], shape: number[]) => tensor(data, { shape, dtype: "float64" });

function maxRelErr(got: Float64Array, want: ArrayLike<number>): number {
  let scale = 0;
  let e = 0;
  for (let i = 0; i < want.length; i++) {
    scale = Math.max(scale, Math.abs(want[i]!));
    e = Math.max(e, Math.abs(got[i]! - want[i]!));
  }
  return e / scale;
}

/** x W^T + b over rows of x [n, w] (W [E, w]). */
function project(x: Float64Array, n: number, w: number, W: Float64Array, b: Float64Array) {
  const E = W.length / w;
  const out = new Float64Array(n * E);
  for (let i = 0; i < n; i++)
    for (let e = 0; e < E; e++) {
      let s = b[e]!;
      for (let c = 0; c < w; c++) s += x[i * w + c]! * W[e * w + c]!;
      out[i * E + e] = s;
    }
  return out;
}

/** The definition in float64 loops, batch by batch; mask(i, j) is additive. */
function naive(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  o: MhaOptions,
  mask: (i: number, j: number) => number,
): Float64Array {
  const r = q.rank;
  const [L, E] = q.shape.slice(-2) as [number, number];
  const [S, kdim] = k.shape.slice(-2) as [number, number];
  const vdim = v.shape[r - 1]!;
  const B = r === 3 ? q.shape[0]! : 1;
  const H = o.numHeads;
  const d = E / H;
  const bias = o.inProjBias ? o.inProjBias.toFloat64() : new Float64Array(3 * E);
  const bo = o.outProjBias ? o.outProjBias.toFloat64() : new Float64Array(E);
  const [Q, K, V] = [q, k, v].map((t) => t.toFloat64());
  const out = new Float64Array(B * L * E);
  for (let b = 0; b < B; b++) {
    const qp = project(
      Q!.subarray(b * L * E, (b + 1) * L * E),
      L,
      E,
      o.qProjWeight!.toFloat64(),
      bias.subarray(0, E),
    );
    const kp = project(
      K!.subarray(b * S * kdim, (b + 1) * S * kdim),
      S,
      kdim,
      o.kProjWeight!.toFloat64(),
      bias.subarray(E, 2 * E),
    );
    const vp = project(
      V!.subarray(b * S * vdim, (b + 1) * S * vdim),
      S,
      vdim,
      o.vProjWeight!.toFloat64(),
      bias.subarray(2 * E),
    );
    const heads = new Float64Array(L * E);
    for (let h = 0; h < H; h++)
      for (let i = 0; i < L; i++) {
        const p = Array.from({ length: S }, (_, j) => {
          let s = 0;
          for (let c = 0; c < d; c++) s += qp[i * E + h * d + c]! * kp[j * E + h * d + c]!;
          return s / Math.sqrt(d) + mask(i, j);
        });
        const max = Math.max(...p);
        const w = p.map((x) => Math.exp(x - max));
        const sum = w.reduce((a, x) => a + x, 0);
        for (let c = 0; c < d; c++)
          heads[i * E + h * d + c] = w.reduce(
            (a, x, j) => a + (x / sum) * vp[j * E + h * d + c]!,
            0,
          );
      }
    out.set(project(heads, L, E, o.outProjWeight.toFloat64(), bo), b * L * E);
  }
  return out;
}

function separateWeights(
  E: number,
  kdim: number,
  vdim: number,
  heads: number,
  seed: number,
): MhaOptions {
  const w = (shape: number[], k: number) => {
    const r = randn(shape, { seed: seed + k, dtype: "float64" }).toFloat64();
    return f64(
      Array.from(r, (x) => x / Math.sqrt(shape[1] ?? 1)),
      shape,
    );
  };
  return {
    qProjWeight: w([E, E], 1),
    kProjWeight: w([E, kdim], 2),
    vProjWeight: w([E, vdim], 3),
    inProjBias: w([3 * E], 4),
    outProjWeight: w([E, E], 5),
    outProjBias: w([E], 6),
    numHeads: heads,
  };
}

describe("multiHeadAttention with separate q, k, v projection weights", () => {
  it("gives PyTorch 2.13's output (kdim 3, vdim 2, E 4, 2 heads)", () => {
    const t = TORCH;
    const out = multiHeadAttention(f64(t.q, [1, 2, 4]), f64(t.k, [1, 3, 3]), f64(t.v, [1, 3, 2]), {
      qProjWeight: f64(t.q_proj_weight, [4, 4]),
      kProjWeight: f64(t.k_proj_weight, [4, 3]),
      vProjWeight: f64(t.v_proj_weight, [4, 2]),
      inProjBias: f64(t.in_proj_bias, [12]),
      outProjWeight: f64(t.out_proj_weight, [4, 4]),
      outProjBias: f64(t.out_proj_bias, [4]),
      numHeads: 2,
    });
    expect(out.shape).toEqual([1, 2, 4]);
    expect(maxRelErr(out.toFloat64(), t.out)).toBeLessThan(1e-13);
  });

  const cases = [
    { name: "batched, kdim 7, vdim 5", q: [2, 5, 12], k: [2, 9, 7], v: [2, 9, 5], heads: 3 },
    { name: "unbatched, kdim 1, vdim 16", q: [3, 8], k: [4, 1], v: [4, 16], heads: 2 },
    {
      name: "kdim = vdim = E (separate all the same)",
      q: [2, 4, 6],
      k: [2, 3, 6],
      v: [2, 3, 6],
      heads: 1,
    },
  ];
  for (const c of cases)
    for (const masked of ["none", "additive", "causal"] as const)
      it(`${c.name}, mask ${masked}`, () => {
        const o = separateWeights(c.q.at(-1)!, c.k.at(-1)!, c.v.at(-1)!, c.heads, 40);
        const [q, k, v] = [c.q, c.k, c.v].map((s, i) =>
          randn(s, { seed: i + 1, dtype: "float64" }),
        );
        const L = c.q.at(-2)!;
        const S = c.k.at(-2)!;
        let mask = (_i: number, _j: number) => 0;
        if (masked === "additive") {
          const m = randn([L, S], { seed: 9, dtype: "float64" });
          const md = m.toFloat64();
          o.attnMask = m;
          mask = (i, j) => md[i * S + j]!;
        }
        if (masked === "causal") {
          o.isCausal = true;
          mask = (i, j) => (j > i ? Number.NEGATIVE_INFINITY : 0);
        }
        // Fully masked causal rows (L > S is not among these) do not arise here.
        const e = explain("multiHeadAttention", q!, k!, v!, o);
        expect(e.selected).toBe("slow-path");
        const out = multiHeadAttention(q!, k!, v!, o);
        expect(out.shape).toEqual(c.q);
        expect(maxRelErr(out.toFloat64(), naive(q!, k!, v!, o, mask))).toBeLessThan(1e-12);
      });

  it("refuses mixed, partial and misshapen weights with typed errors", () => {
    const o = separateWeights(8, 5, 3, 2, 7);
    const q = randn([2, 4, 8], { seed: 1, dtype: "float64" });
    const k = randn([2, 6, 5], { seed: 2, dtype: "float64" });
    const v = randn([2, 6, 3], { seed: 3, dtype: "float64" });
    const packed = randn([24, 8], { seed: 4, dtype: "float64" });
    const bad: [MhaOptions, RegExp, typeof ArgumentError | typeof ShapeError][] = [
      [{ ...o, inProjWeight: packed }, /not both/, ArgumentError],
      [
        { ...o, vProjWeight: undefined },
        /go together, got only qProjWeight, kProjWeight/,
        ArgumentError,
      ],
      [
        { ...o, qProjWeight: undefined, kProjWeight: undefined, vProjWeight: undefined },
        /inProjWeight is required/,
        ArgumentError,
      ],
      [
        { ...o, kProjWeight: randn([8, 4], { seed: 5, dtype: "float64" }) },
        /kProjWeight must have shape \[8,5\]/,
        ShapeError,
      ],
    ];
    for (const [opts, msg, type] of bad) {
      expect(() => multiHeadAttention(q, k, v, opts)).toThrow(type);
      expect(() => multiHeadAttention(q, k, v, opts)).toThrow(msg);
    }
    // The packed weight still needs kdim = vdim = E, and says what to pass instead.
    expect(() =>
      multiHeadAttention(q, k, v, {
        ...o,
        qProjWeight: undefined,
        kProjWeight: undefined,
        vProjWeight: undefined,
        inProjWeight: packed,
      }),
    ).toThrow(/for other widths pass qProjWeight, kProjWeight and vProjWeight/);
    // value must share key's batch and sequence.
    expect(() =>
      multiHeadAttention(q, k, randn([2, 5, 3], { seed: 6, dtype: "float64" }), o),
    ).toThrow(ShapeError);
  });
});
