/**
 * relu as torch defines it, clamp_min(x, 0): only x < 0 becomes 0, so -0 and NaN pass
 * through unchanged (torch.relu(tensor(-0.)) is -0. in every dtype). The reference gave +0.
 */
import { fromFloat64, relu, withKernelPriority } from "@backplane/core";
import { describe, expect, it } from "vitest";

/** -0 printed as such (String(-0) is "0"). */
const fmt = (v: number) => (Object.is(v, -0) ? "-0" : String(v));

describe("reference relu", () => {
  it("keeps -0 and NaN, zeroes negatives, in every dtype it takes", () => {
    const x = [-0, 0, -1.5, 2.5, Number.NaN, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
    // torch 2.13: relu of each value above (float32, float64, float16, bfloat16 alike).
    const want = [-0, 0, 0, 2.5, Number.NaN, 0, Number.POSITIVE_INFINITY];
    for (const dtype of ["float32", "float64", "float16", "bfloat16"] as const) {
      const t = fromFloat64(Float64Array.from(x), [x.length], dtype);
      const got = withKernelPriority("relu", ["reference"], () => relu(t)).toFloat64();
      // Object.is tells -0 from +0 and matches NaN with NaN: exact, as relu rounds nothing.
      got.forEach((g, i) => {
        expect(Object.is(g, want[i]), `${dtype}[${i}] = ${fmt(g)}`).toBe(true);
      });
    }
  });

  it("int32 is unchanged: negatives become 0", () => {
    const t = fromFloat64(Float64Array.from([-3, 0, 7, -(2 ** 31)]), [4], "int32");
    const got = withKernelPriority("relu", ["reference"], () => relu(t)).toFloat64();
    expect(Array.from(got)).toEqual([0, 0, 7, 0]);
  });
});
