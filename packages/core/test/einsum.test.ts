/**
 * einsum's parse against torch.einsum (2.13): "..." covering 32 or more dimensions. Its
 * labels were the control characters \u0001.., and the 32nd onwards (" ", "!", ...) were
 * counted as named indices by the implicit output: "..." on a 40-D tensor gave 49 dims.
 */
import { einsum, randn, withKernelPriority } from "@backplane/core";
import { getKernel, ops } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

describe("einsum with a long ellipsis", () => {
  it("keeps every dimension in the implicit output, as torch (rank 31 to 64)", () => {
    for (const rank of [31, 32, 40, 64]) {
      // torch.einsum("...", t).shape == t.shape; "...i" (implicit) -> [...batch, i]
      const shape = Array.from({ length: rank }, (_, d) => (d === 0 ? 2 : d === rank - 1 ? 3 : 1));
      const t = randn(shape, { seed: rank, dtype: "float64" });
      const p = ops.einsum.prepare("...", t);
      expect(p.output, `rank ${rank}`).toHaveLength(rank);
      const y = withKernelPriority("einsum", ["reference"], () => einsum("...", t));
      expect(y.shape).toEqual(shape);
      // Values are the input's exactly (float64 in, float64 out: no rounding).
      expect(Array.from(y.toFloat64())).toEqual(Array.from(t.toFloat64()));
      const moved = einsum("i...", t);
      expect(moved.shape).toEqual([...shape.slice(1), 2]);
      for (const x of [y, moved, t]) x.dispose();
    }
  });

  it("the reference kernel still sums what the ellipsis does not name", () => {
    const shape = Array.from({ length: 33 }, (_, d) => (d < 2 ? 2 : 1));
    const t = randn(shape, { seed: 7, dtype: "float64" });
    const ref = getKernel("einsum", "reference")!;
    const y = ref.run(ops.einsum.prepare("i...->i", t)) as ReturnType<typeof randn>;
    const v = t.toFloat64();
    expect(y.shape).toEqual([2]);
    expect(Math.abs(y.toFloat64()[0] - (v[0] + v[1]))).toBeLessThan(1e-15);
    expect(Math.abs(y.toFloat64()[1] - (v[2] + v[3]))).toBeLessThan(1e-15);
    y.dispose();
    t.dispose();
  });
});
