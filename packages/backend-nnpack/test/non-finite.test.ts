/**
 * NaN and infinity stay where a direct convolution puts them under "auto". Winograd and FFT
 * mix a whole tile: one NaN pixel of x[1,4,16,16] made 64 outputs NaN through wt6x6 / wt8x8
 * (up to 1,500 of 1,600 with 5x5 kernels on ft16x16); "auto" now takes the local implicit
 * GEMM when input or weight is not finite. The transform kernels, asked for by name, still
 * spread them (docs/torch-mapping.md).
 */
import { conv2d, randn, ready, type Tensor, withKernelPriority, zeros } from "@backplane/core";
import { getKernel } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { algorithmFor, NNPACK_BACKEND } from "../src/index.ts";

function nanMask(t: Tensor): string {
  return Array.from(t.toFloat64(), (v) => (Number.isNaN(v) ? "1" : "0")).join("");
}

/** x times a scalar, in float32 (the product of a random tensor and a large magnitude). */
function scaled(x: Tensor, by: number): Tensor {
  const data = x.hostData() as Float32Array;
  for (let i = 0; i < data.length; i++) data[i] *= by;
  return x;
}

function reference(x: Tensor, w: Tensor, padding: number): Tensor {
  return withKernelPriority("conv2d", ["reference"], () => conv2d(x, w, { padding }));
}

describe("non-finite values under auto", () => {
  it("one NaN pixel: auto's NaNs are the reference's, for 3x3 and 5x5 kernels", async () => {
    await ready(NNPACK_BACKEND);
    for (const [k, padding, size] of [
      [3, 1, 16],
      [5, 2, 40],
    ] as const) {
      const x = randn([1, 4, size, size], { seed: 1 });
      const w = randn([4, 4, k, k], { seed: 2 });
      const before = algorithmFor(x, w, { padding });
      (x.hostData() as Float32Array)[1 * size * size + 7 * size + 9] = Number.NaN;
      expect(algorithmFor(x, w, { padding })).toBe(
        /^(wt|ft)/.test(before) ? "implicit-gemm" : before,
      );
      const y = withKernelPriority("conv2d", ["auto"], () => conv2d(x, w, { padding }));
      const want = nanMask(reference(x, w, padding));
      expect(nanMask(y)).toBe(want);
      expect(want.split("1").length - 1).toBe(4 * k * k);
    }
  });

  it("zero weights and one infinite pixel: NaN only where the reference has it", async () => {
    await ready(NNPACK_BACKEND);
    const x = randn([1, 4, 16, 16], { seed: 3 });
    (x.hostData() as Float32Array)[5 * 16 + 5] = Number.POSITIVE_INFINITY;
    const w = zeros([4, 4, 3, 3]);
    const y = withKernelPriority("conv2d", ["auto"], () => conv2d(x, w, { padding: 1 }));
    expect(nanMask(y)).toBe(nanMask(reference(x, w, 1)));
    expect(y.toFloat64().filter((v) => v === 0).length).toBe(4 * 256 - 4 * 9);
  });

  it("a NaN weight over the padding makes every output NaN, depthwise, float32 and float64", async () => {
    await ready(NNPACK_BACKEND);
    // Padding zeros are multiplied (0 x NaN is NaN), as in the reference: the float64
    // depthwise loop once skipped the taps over the padding, leaving edge outputs finite.
    for (const dtype of ["float32", "float64"] as const) {
      const x = randn([1, 2, 3, 3], { seed: 6, dtype });
      const w = randn([2, 1, 3, 3], { seed: 7, dtype });
      (w.hostData() as Float32Array | Float64Array)[0] = Number.NaN; // channel 0's top-left tap
      const o = { padding: 1, groups: 2 };
      for (const kernel of ["direct", "auto"]) {
        const y = withKernelPriority("conv2d", [kernel], () => conv2d(x, w, o));
        const want = withKernelPriority("conv2d", ["reference"], () => conv2d(x, w, o));
        expect(nanMask(y), `${dtype} ${kernel}`).toBe(nanMask(want));
        expect(nanMask(want)).toBe(`${"1".repeat(9)}${"0".repeat(9)}`);
      }
    }
  });

  it("transforms that overflow float32 on finite data run again exactly (|x|, |w| near 1e18)", async () => {
    await ready(NNPACK_BACKEND);
    // True outputs reach 3e37, below float32's 3.4e38; wt8x8's scaled tiles overflowed
    // (133 of 3,200 outputs infinite) before the output check.
    const x = scaled(randn([1, 8, 20, 20], { seed: 8 }), 1e18);
    const w = scaled(randn([8, 8, 3, 3], { seed: 9 }), 1e18);
    const want = reference(x, w, 1).toFloat64();
    const peak = Math.max(...want.map(Math.abs));
    expect(peak).toBeGreaterThan(1e37);
    expect(peak).toBeLessThan(3.4e38);
    for (const kernel of ["auto", "wt8x8", "wt6x6", "ft8x8", "ft16x16"]) {
      const y = withKernelPriority("conv2d", [kernel], () => conv2d(x, w, { padding: 1 }));
      const got = y.toFloat64();
      const worst = Math.max(...got.map((v, i) => Math.abs(v - want[i]) / peak));
      expect(worst, kernel).toBeLessThan(1e-5); // NaN (from inf) fails this too
    }
  });

  it("finite input keeps the fast algorithm", async () => {
    await ready(NNPACK_BACKEND);
    const x = randn([1, 16, 32, 32], { seed: 4 });
    const w = randn([16, 16, 3, 3], { seed: 5 });
    expect(algorithmFor(x, w, { padding: 1 })).toMatch(/^wt/);
    expect(getKernel("conv2d", "auto")).toBeDefined();
  });
});
