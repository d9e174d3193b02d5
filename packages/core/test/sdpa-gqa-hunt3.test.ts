/**
 * scaledDotProductAttention's grouped-query checks: no heads at all (query and key/value
 * heads 0) is torch's empty output, not a "0 must be a multiple of 0" ShapeError; and the
 * head counts that cannot run say why (enableGqa missing, or key and value heads that the
 * kernels' one group size cannot map) instead of a bare "do not broadcast".
 */
import { fromFloat64, ShapeError, scaledDotProductAttention, type Tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";

/** Seeded float32 values in [-1, 1) (never zeros). */
function make(shape: number[], seed: number): Tensor {
  let s = seed >>> 0;
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float64Array(n).map(() => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s / 2 ** 32) * 2 - 1 || 0.5;
  });
  return fromFloat64(v, shape, "float32");
}

describe("scaledDotProductAttention with enableGqa", () => {
  it("gives the empty output for zero query and key/value heads (torch: [2, 0, 3, 4])", () => {
    const q = make([2, 0, 3, 4], 1);
    const k = make([2, 0, 5, 4], 2);
    const v = make([2, 0, 5, 6], 3);
    const out = scaledDotProductAttention(q, k, v, { enableGqa: true });
    expect(out.shape).toEqual([2, 0, 3, 6]);
    for (const t of [q, k, v, out]) t.dispose();
  });

  it("still refuses query heads that key heads (0 or a non-divisor) do not divide", () => {
    const q = make([2, 4, 3, 4], 1);
    for (const heads of [0, 3]) {
      const k = make([2, heads, 5, 4], 2);
      expect(() => scaledDotProductAttention(q, k, k, { enableGqa: true })).toThrow(
        new ShapeError(
          `scaledDotProductAttention: with enableGqa, query heads (4) must be a multiple of key heads (${heads})`,
        ),
      );
      k.dispose();
    }
    q.dispose();
  });

  it("says why key and value heads that differ cannot run", () => {
    const q = make([2, 8, 3, 4], 1);
    const k = make([2, 2, 5, 4], 2);
    const v = make([2, 4, 5, 4], 3);
    expect(() => scaledDotProductAttention(q, k, v, { enableGqa: true })).toThrow(
      /key heads \(2\) and value heads \(4\) must be equal \(or one of them 1\)/,
    );
    for (const t of [q, k, v]) t.dispose();
  });

  it("names enableGqa when the query has a multiple of the key's heads without it", () => {
    const q = make([2, 4, 3, 4], 1);
    const k = make([2, 2, 5, 4], 2);
    expect(() => scaledDotProductAttention(q, k, k)).toThrow(ShapeError);
    expect(() => scaledDotProductAttention(q, k, k)).toThrow(
      "scaledDotProductAttention: query has 4 heads but key and value have 2; for grouped-query attention pass enableGqa: true",
    );
    for (const t of [q, k]) t.dispose();
  });
});
