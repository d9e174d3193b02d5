/**
 * The tile kernels' score product with a small scale: a GEMM applies alpha after the sum,
 * so q . k of |q|, |k| ~ 1e19-1e20 overflowed float32 (every row NaN) where the scaled
 * scores fit, and a scale whose float32 alpha rounds to 0 made the BLAS skip the product
 * (an infinity or NaN in q or k did not reach the output). The float64 reference (and
 * torch's math kernel, which scales q and k first) give finite rows, and NaN rows for
 * non-finite input. The tiles now scale the query block first when |alpha| < 1.
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
const KERNELS = ["flash-cpu-blas", "flash-cpu-dnnl"];

/** Seeded values of magnitude `amp` in [-amp, amp) (never zeros). */
function values(n: number, seed: number, amp: number): Float64Array {
  let s = seed >>> 0;
  return new Float64Array(n).map(() => {
    s = (s * 1103515245 + 12345) >>> 0;
    return amp * ((s / 2 ** 32) * 2 - 1 || 0.5);
  });
}

const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

/** The float64 reference's output for float32 operands (their values widened). */
function reference(ts: Tensor[], opts: object): Float64Array {
  const wide = ts.map((t) => fromFloat64(t.toFloat64(), [...t.shape], "float64"));
  const out = scaledDotProductAttention(wide[0], wide[1], wide[2], opts);
  const r = out.toFloat64();
  for (const t of [...wide, out]) t.dispose();
  return r;
}

/** Worst error relative to the reference's largest magnitude, NaN where NaN differ. */
function relError(got: Float64Array, want: Float64Array): number {
  let top = 0;
  for (const x of want) if (Number.isFinite(x)) top = Math.max(top, Math.abs(x));
  let worst = 0;
  for (let i = 0; i < got.length; i++) {
    if (Number.isNaN(got[i]) || Number.isNaN(want[i])) {
      if (Number.isNaN(got[i]) !== Number.isNaN(want[i])) return Number.NaN;
    } else worst = Math.max(worst, Math.abs(got[i] - want[i]) / top);
  }
  return worst;
}

/** Runs `kernel` where it accepts the inputs (its library loaded); false where it refuses. */
function runOn(kernel: string, ts: Tensor[], opts: object): Float64Array | false {
  using _ = kernelPriority(OP, [kernel]);
  if (explain(OP, ts[0], ts[1], ts[2], opts).selected !== kernel) return false;
  const out = scaledDotProductAttention(ts[0], ts[1], ts[2], opts);
  const r = out.toFloat64();
  out.dispose();
  return r;
}

async function loaded(): Promise<void> {
  await ready(WASM_BACKEND);
  await Promise.allSettled([ready(NATIVE_BACKEND), ready(DNNL_BACKEND)]);
}

describe("flash tile kernels with a small scale", () => {
  it("give the reference's finite rows where q . k alone overflows float32", async () => {
    await loaded();
    // |q . k| ~ 1e40 x 8 overflows float32; times 1e-30 (or 1e-38) the scores are ~1e10-1e2.
    // L = 1100 and S = 600 run the bounded-shift path's blocks (whose bound overflows) too.
    for (const [L, S, scale, isCausal] of [
      [9, 11, 1e-30, false],
      [40, 700, 1e-38, true],
      [1100, 600, 1e-30, false],
    ] as const) {
      const shapes = [
        [1, 2, L, 8],
        [1, 2, S, 8],
        [1, 2, S, 8],
      ];
      const amps = [1e20, 1e20, 1];
      const ts = shapes.map((s, i) => fromFloat64(values(size(s), i + 3, amps[i]), s, "float32"));
      const opts = { scale, isCausal };
      const want = reference(ts, opts);
      expect(want.every(Number.isFinite)).toBe(true);
      for (const kernel of KERNELS) {
        const got = runOn(kernel, ts, opts);
        if (got) expect(relError(got, want), `${kernel} L${L} S${S}`).toBeLessThan(3e-5);
      }
      for (const t of ts) t.dispose();
    }
  });

  it("propagate an infinity or NaN in q or k when the scale's float32 alpha is 0", async () => {
    await loaded();
    const shapes = [
      [1, 2, 9, 8],
      [1, 2, 11, 8],
      [1, 2, 11, 8],
    ];
    for (const [at, bad] of [
      [0, Number.POSITIVE_INFINITY],
      [1, Number.NaN],
    ] as const) {
      const ts = shapes.map((s, i) => {
        const v = values(size(s), i + 11, 1);
        if (i === at) v[3] = bad;
        return fromFloat64(v, s, "float32");
      });
      for (const scale of [1e-46, -1e-46, 5e-324]) {
        const opts = { scale };
        const want = reference(ts, opts);
        expect(want.some(Number.isNaN)).toBe(true);
        for (const kernel of KERNELS) {
          const got = runOn(kernel, ts, opts);
          if (got) expect(relError(got, want), `${kernel} scale ${scale}`).toBeLessThan(3e-5);
        }
      }
      for (const t of ts) t.dispose();
    }
  });
});
