/**
 * wgsl-gelu in the negative tail, where gelu is small: exact gelu was 0.5 x (1 + erf(x / sqrt 2))
 * with an erf good to 1.5e-7 absolute, so 1 + erf cancelled (1% off at x = -4.5, 0 past -5.5
 * where gelu is ~1e-8), and the tanh form's 1 + tanh(u) cancelled the same way (34% off near
 * x = -4.5 on SwiftShader). Each element is held to float32 rounding of the float64 reference,
 * relative to itself (an absolute tolerance scaled by the largest value would pass zeros).
 */
import { fromFloat64, gelu, seededRandom, withKernelPriority } from "@backplane/core";
import { describe, expect } from "vitest";
import { gpuIt, values } from "./helpers.ts";

/** Uniform in [-5.5, -3): gelu from -5e-8 to -4e-3, where the float64 reference keeps 1e-8 relative. */
function tailPoints(count: number, seed: number): Float64Array {
  const rng = seededRandom(seed);
  return Float64Array.from({ length: count }, () => Math.fround(-5.5 + 2.5 * rng()));
}

describe("wgsl-gelu negative tail", () => {
  for (const approximate of ["none", "tanh"] as const) {
    gpuIt(
      `approximate ${approximate}: each value within 1e-5 of the float64 reference`,
      async () => {
        const xs = tailPoints(512, approximate === "none" ? 21 : 22);
        const ref = withKernelPriority("gelu", ["reference"], () =>
          gelu(fromFloat64(xs, [xs.length], "float64"), { approximate }),
        ).toFloat64();
        const x = fromFloat64(xs, [xs.length], "float32").to("webgpu");
        const got = await values(gelu(x, { approximate }));
        let worst = 0;
        let at = -1;
        for (let i = 0; i < xs.length; i++) {
          const rel = Math.abs(got[i] - ref[i]) / Math.abs(ref[i]);
          if (!(rel <= worst)) [worst, at] = [rel, i];
        }
        expect(worst, `x = ${xs[at]}: ${got[at]}, reference ${ref[at]}`).toBeLessThan(1e-5);
      },
    );
  }
});
