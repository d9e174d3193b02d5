/**
 * The math (reference) scaledDotProductAttention against PyTorch 2.13's semantics where they
 * had parted: head dim 0, key and value batch dims that broadcast, and the dropout stream
 * after a fully masked row (flash-cpu reproduces it by element index).
 */
import {
  fromFloat64,
  kernelPriority,
  ShapeError,
  scaledDotProductAttention,
  type Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

const OP = "scaledDotProductAttention";

/** Seeded float64 values in [-1, 1) (never zeros). */
function values(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  return new Float64Array(n).map(() => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s / 2 ** 32) * 2 - 1 || 0.5;
  });
}

const f64 = (shape: number[], seed: number): Tensor =>
  fromFloat64(
    values(
      shape.reduce((a, b) => a * b, 1),
      seed,
    ),
    shape,
    "float64",
  );

/** Runs the attention on the math kernel; float64 values. */
function math(q: Tensor, k: Tensor, v: Tensor, opts?: object): Float64Array {
  using _ = kernelPriority(OP, ["math"]);
  const o = scaledDotProductAttention(q, k, v, opts);
  const out = o.toFloat64();
  o.dispose();
  return out;
}

const worst = (a: Float64Array, b: Float64Array) =>
  a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

describe("scaledDotProductAttention reference (math) as PyTorch 2.13", () => {
  it("head dim 0: every score is 0 at any scale (the mean of v), not 0 * inf = NaN", () => {
    // torch scales q and k by sqrt(scale) before their (empty) product: 1 / sqrt(0) = inf
    // never meets a number. Float64: exact up to the mean's rounding (tolerance 1e-15).
    const q = f64([2, 3, 0], 1);
    const k = f64([2, 5, 0], 2);
    const v = f64([2, 5, 4], 3);
    const vs = v.toFloat64();
    const mean = new Float64Array(2 * 3 * 4);
    for (let b = 0; b < 2; b++)
      for (let i = 0; i < 3; i++)
        for (let e = 0; e < 4; e++) {
          let s = 0;
          for (let j = 0; j < 5; j++) s += vs[(b * 5 + j) * 4 + e];
          mean[(b * 3 + i) * 4 + e] = s / 5;
        }
    for (const opts of [undefined, { scale: 2 }]) {
      const out = math(q, k, v, opts);
      expect(out.every(Number.isFinite)).toBe(true);
      expect(worst(out, mean)).toBeLessThan(1e-15);
    }
  });

  it("broadcasts key and value batch dims against each other, as torch's matmuls do", () => {
    // key [2, ...] with value [1, ...]: the same as value expanded to [2, ...] (float64, 1e-15).
    const q = f64([2, 3, 5, 8], 4);
    const k = f64([2, 3, 7, 8], 5);
    const v1 = f64([1, 3, 7, 4], 6);
    const v1d = v1.toFloat64();
    const v2 = fromFloat64(Float64Array.from([...v1d, ...v1d]), [2, 3, 7, 4], "float64");
    expect(worst(math(q, k, v1), math(q, k, v2))).toBeLessThan(1e-15);
    // GQA: 4 query heads over 2 key heads and 1 value head (broadcast), as torch gives.
    const qg = f64([2, 4, 5, 8], 7);
    const kg = f64([2, 2, 7, 8], 8);
    const vg = f64([2, 1, 7, 4], 9);
    const vgd = vg.toFloat64();
    const vg2 = fromFloat64(
      Float64Array.from({ length: 2 * 2 * 28 }, (_, i) => vgd[Math.floor(i / 56) * 28 + (i % 28)]),
      [2, 2, 7, 4],
      "float64",
    );
    const opts = { enableGqa: true };
    expect(worst(math(qg, kg, vg, opts), math(qg, kg, vg2, opts))).toBeLessThan(1e-15);
    // Different kv head counts both above 1 stay refused (one group size maps both).
    expect(() => scaledDotProductAttention(qg, kg, f64([2, 4, 7, 4], 10), opts)).toThrow(
      ShapeError,
    );
    // Key and value batch dims that do not broadcast are a ShapeError, as in torch.
    expect(() => scaledDotProductAttention(q, k, f64([3, 3, 7, 4], 11))).toThrow(ShapeError);
  });

  it("dropout draws are fixed per (row, key): a fully masked row does not shift later rows", () => {
    // Row 0 masked entirely or not at all: the other rows (same mask, same seed) must match.
    const q = f64([2, 4, 8], 12);
    const k = f64([2, 30, 8], 13);
    const v = f64([2, 30, 4], 14);
    const rows = (row0: number) => {
      const m = new Uint8Array(4 * 30).map((_, i) => (i < 30 ? row0 : (i * 7) % 5 !== 0 ? 1 : 0));
      return tensor(m, { shape: [4, 30], dtype: "bool" });
    };
    const opts = { dropoutP: 0.4, seed: 99 };
    const masked = math(q, k, v, { ...opts, attnMask: rows(0) });
    const open = math(q, k, v, { ...opts, attnMask: rows(1) });
    expect(masked.slice(0, 4)).toEqual(new Float64Array(4)); // the masked row is 0
    for (const b of [0, 1])
      expect(masked.slice(b * 16 + 4, b * 16 + 16)).toEqual(open.slice(b * 16 + 4, b * 16 + 16));
  });
});
