/**
 * flash-cpu-dnnl's bounded-shift path with small values: its products P V carry the
 * factor e^-g of the gap between the Cauchy-Schwarz bound and a row's largest score, and
 * with |V| ~ 1e-13 to 1e-20 they left the normal floats and flushed to 0 (whole rows of
 * zeros where PyTorch and the float64 reference give ~1e-20). And with tiny queries whose
 * norms underflow, the bound fell below the largest score: P stayed finite, P V overflowed
 * and rows came out inf. Such rows now take the exact tiles.
 */
import { ready, tensor } from "@backplane/core";
import { type OpCase, runCase } from "@backplane/testkit";
import { describe, expect } from "vitest";
import { DNNL_BACKEND, WASM_BACKEND } from "../src/index.ts";
import { poisoned } from "./attention-helpers.ts";
import { itDnnl } from "./dnnl-helpers.ts";

const OP = "scaledDotProductAttention";
/** Worst error relative to the float64 reference's largest magnitude (the testkit's float32 default). */
const TOLERANCE = 2e-5;
const SLOW = 120_000;

/**
 * Queries along the first axis, keys along the second (nearly orthogonal): every score is
 * about 0 while the bound |q| |k| is `gap` (scale 1), so P = exp(s - bound) ~ e^-gap, a
 * gap the bound's own check accepts. Values: random of magnitude `vScale`.
 */
function gapCase(gap: number, vScale: number, isCausal: boolean): OpCase {
  const L = 24;
  const S = 40;
  const Ev = 8;
  const c = Math.sqrt(gap);
  return {
    name: `bound ${gap} above every score, |V| ~ ${vScale}${isCausal ? ", causal" : ""}`,
    make: (d, r) => {
      const q = new Float64Array(L * 2);
      const k = new Float64Array(S * 2);
      for (let i = 0; i < L; i++) q[i * 2] = c * (1 + 0.01 * r());
      for (let j = 0; j < S; j++) {
        k[j * 2] = 0.02 * (r() - 0.5);
        k[j * 2 + 1] = c;
      }
      const v = Float64Array.from({ length: S * Ev }, () => vScale * (2 * r() - 1));
      return [
        tensor(q, { shape: [1, L, 2], dtype: d }),
        tensor(k, { shape: [1, S, 2], dtype: d }),
        tensor(v, { shape: [1, S, Ev], dtype: d }),
        { scale: 1, isCausal },
      ];
    },
  };
}

/**
 * Queries of ~2e-23 (their squares underflow: norm 0, bound 0) against one key of 1.8e19
 * at scale 2.3e5: scores of 85 to 88.6, so P = e^s is finite and P V (|V| 20 to 40) is not.
 */
const underflowingNorms: OpCase = {
  name: "query norms that underflow, P V past the float range",
  make: (d, r) => {
    const L = 8;
    const q = Float64Array.from({ length: L }, (_, i) => (2.06 + 0.01 * i) * 1e-23);
    const v = Float64Array.from({ length: 2 }, () => 20 + 20 * r());
    return [
      tensor(q, { shape: [L, 1], dtype: d }),
      tensor([[1.8e19]], { dtype: d }),
      tensor(v, { shape: [1, 2], dtype: d }),
      { scale: 2.3e5 },
    ];
  },
};

describe("flash-cpu-dnnl with small values under a loose bound", () => {
  itDnnl(
    "matches the float64 reference where P V would flush to 0 or overflow",
    async () => {
      await ready(WASM_BACKEND);
      await ready(DNNL_BACKEND);
      for (const c of [
        gapCase(60, 1e-20, false),
        gapCase(60, 1e-13, false),
        gapCase(60, 1e-20, true),
        gapCase(30, 1e-30, false),
        underflowingNorms,
      ]) {
        const result = await poisoned(() =>
          runCase(OP, c, "float32", {
            kernel: "flash-cpu-dnnl",
            backend: DNNL_BACKEND,
            tolerances: { float32: TOLERANCE },
            seed: 11,
          }),
        );
        expect(result.status, `${c.name}: ${result.message}`).toBe("pass");
        expect(result.kernel).toBe("flash-cpu-dnnl");
      }
    },
    SLOW,
  );
});
