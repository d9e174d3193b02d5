/**
 * wasm-relu against torch's relu, clamp_min(x, 0): -0 and NaN pass through (f32x4.max
 * and the scalar tail made -0 into +0). Every length up to 33 reaches both the SIMD body
 * and each tail length, and the input sits at an offset so no lane is aligned by luck.
 */
import { explain, fromFloat64, ready, relu, Tensor, withKernelPriority } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { WASM_BACKEND } from "../src/index.ts";

const SPECIAL = [-0, Number.NaN, -2.5, 0, 3.25, Number.NEGATIVE_INFINITY, 1e-300];

/** -0 printed as such (String(-0) is "0"). */
const fmt = (v: number) => (Object.is(v, -0) ? "-0" : String(v));

describe("wasm-relu", () => {
  it("keeps -0 and NaN at every SIMD tail length, float32 and float64", async () => {
    await ready(WASM_BACKEND);
    for (const dtype of ["float32", "float64"] as const) {
      for (let n = 1; n <= 33; n++) {
        const values = Array.from({ length: n + 1 }, (_, i) => SPECIAL[(i * 3 + n) % 7]);
        const base = fromFloat64(Float64Array.from(values), [n + 1], dtype);
        const x = new Tensor(base.storage, dtype, [n], [1], 1); // contiguous, offset 1
        const run = () => relu(x);
        expect(withKernelPriority("relu", ["wasm-relu"], () => explain("relu", x).selected)).toBe(
          "wasm-relu",
        );
        const got = withKernelPriority("relu", ["wasm-relu"], run).toFloat64();
        const src = x.toFloat64();
        // Exact: relu rounds nothing. Object.is tells -0 from +0 and matches NaN with NaN.
        src.forEach((v, i) => {
          const want = v < 0 ? 0 : v;
          expect(
            Object.is(got[i], want),
            `${dtype} n=${n} [${i}]: ${fmt(got[i])} for ${fmt(v)}`,
          ).toBe(true);
        });
      }
    }
  });
});
