/**
 * A scale past float32's range (with log2 e, the factor of the tiles' exp2 softmax): the
 * flash kernels scaled the scores by inf and gave NaN rows, where torch (which scales q and
 * k by sqrt(scale)) and the float64 reference give finite ones for small q and k. They now
 * refuse it and the math kernel runs.
 */
import {
  explain,
  fromFloat64,
  kernelPriority,
  ready,
  scaledDotProductAttention,
  type Tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import { DNNL_BACKEND, NATIVE_BACKEND, WASM_BACKEND } from "../src/index.ts";

const OP = "scaledDotProductAttention";
const KERNELS = ["flash-cpu", "flash-cpu-blas", "flash-cpu-dnnl"];

/** Seeded values of magnitude `amp` in [-amp, amp) (never zeros). */
function values(n: number, seed: number, amp: number): Float64Array {
  let s = seed >>> 0;
  return new Float64Array(n).map(() => {
    s = (s * 1103515245 + 12345) >>> 0;
    return amp * ((s / 2 ** 32) * 2 - 1 || 0.5);
  });
}

const make = (shape: number[], seed: number, amp: number, dtype: "float32" | "float64") =>
  fromFloat64(
    values(
      shape.reduce((a, b) => a * b, 1),
      seed,
      amp,
    ),
    shape,
    dtype,
  );

/** Worst error relative to the reference's largest magnitude. */
function relError(got: Float64Array, want: Float64Array): number {
  const top = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  return got.reduce((m, x, i) => Math.max(m, Math.abs(x - want[i]) / top), 0);
}

describe("flash kernels with a scale past float32's range", () => {
  it("give the float64 reference's finite rows (the math kernel runs)", async () => {
    await ready(WASM_BACKEND);
    await Promise.allSettled([ready(NATIVE_BACKEND), ready(DNNL_BACKEND)]);
    // |q . k| ~ 1e-40: scaled by 1e39 the scores are ~0.1, well inside float32.
    const shapes = [
      [1, 2, 9, 8],
      [1, 2, 11, 8],
      [1, 2, 11, 8],
    ];
    const amps = [1e-20, 1e-20, 1];
    const [q, k, v] = shapes.map((s, i) => make(s, i + 1, amps[i], "float32"));
    const wide = [q, k, v].map((t) => fromFloat64(t.toFloat64(), [...t.shape], "float64"));
    for (const opts of [{ scale: 1e39 }, { scale: -3e38, isCausal: true }]) {
      const want = scaledDotProductAttention(wide[0], wide[1], wide[2], opts);
      const reference = want.toFloat64();
      want.dispose();
      expect(reference.every(Number.isFinite)).toBe(true);
      for (const kernel of KERNELS) {
        using _ = kernelPriority(OP, [kernel]);
        const out: Tensor = scaledDotProductAttention(q, k, v, opts);
        expect(relError(out.toFloat64(), reference), kernel).toBeLessThan(2e-5);
        out.dispose();
        // The flash kernel refuses the scale (where its backend loaded: a machine without
        // BLAS or oneDNN names the missing library instead): the math kernel ran.
        const reason = explain(OP, q, k, v, opts).candidates.find((c) => c.kernel === kernel);
        if (reason && !/^backend \S+: not installed/.test(reason.reason))
          expect(reason.reason, kernel).toMatch(/scale .* past float32's range/);
      }
    }
    for (const t of [q, k, v, ...wide]) t.dispose();
  });
});
