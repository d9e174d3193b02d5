/**
 * llvmpipe (lavapipe, Deno's software Vulkan here) stops every loop of a shader invocation
 * once their iterations together reach 65,535, and the shader goes on with what it holds:
 * attention over 600 keys of 64 dims and products over K = 70,000 gave relative errors of
 * 1 and 0.4 there, with no error raised. The device's budget is measured when it opens;
 * the kernels write their per-key and per-k loops out where there is one, and refuse work
 * that would still pass it. On drivers without a budget (SwiftShader) the same cases run
 * as they did, and must match the reference too.
 */
import {
  matmul,
  NoKernelError,
  randn,
  scaledDotProductAttention,
  type Tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import { webgpuCapability } from "../src/index.ts";
import { loopProblem } from "../src/loop-budget.ts";
import { gpuIt, relErr, values } from "./helpers.ts";

const budget = () => webgpuCapability()?.loopBudget ?? null;
const float64 = (...ts: Tensor[]) => ts.map((t) => t.astype("float64"));
const onGpu = (...ts: Tensor[]) => ts.map((t) => t.to("webgpu"));

describe("a driver's loop budget", () => {
  gpuIt("is measured when the device opens: llvmpipe's is finite, none is null", () => {
    const b = budget();
    if (/llvmpipe/i.test(webgpuCapability()?.adapter.description ?? "")) {
      expect(b).toBeGreaterThan(1000);
      expect(Number.isFinite(b)).toBe(true);
    } else if (b !== null) expect(b).toBeGreaterThan(1000);
  });

  gpuIt(
    "attention over 600 and 5,000 keys of 64 dims matches the reference (float32)",
    async () => {
      for (const S of [600, 5000]) {
        const [q, k, v] = [
          randn([1, 2, 5, 64], { seed: 1 }),
          randn([1, 2, S, 64], { seed: 2 }),
          randn([1, 2, S, 64], { seed: 3 }),
        ];
        const want = scaledDotProductAttention(...(float64(q, k, v) as [Tensor, Tensor, Tensor]));
        const got = scaledDotProductAttention(...(onGpu(q, k, v) as [Tensor, Tensor, Tensor]));
        expect(relErr(await values(got), want.toFloat64()), `S = ${S}`).toBeLessThan(1e-5);
      }
    },
  );

  gpuIt("products over K = 70,000, small and tiled, match the reference (float32)", async () => {
    for (const [m, n] of [
      [2, 3],
      [40, 40],
    ]) {
      const a = randn([m, 70_000], { seed: 4 });
      const b = randn([70_000, n], { seed: 5 });
      const want = matmul(a.astype("float64"), b.astype("float64")).toFloat64();
      const got = await values(matmul(a.to("webgpu"), b.to("webgpu")));
      // float32 sums of 70,000 products in order: errors near sqrt(K) eps, 1e-5 of the
      // largest output seen; the cut-short loops gave 0.4.
      expect(relErr(got, want), `${m} x ${n}`).toBeLessThan(1e-4);
    }
  });

  gpuIt("work past a finite budget is refused with the reason, not computed wrong", () => {
    const b = budget();
    if (b === null) return; // no budget on this driver: nothing to refuse
    const S = b + 1000; // one key more per loop iteration than the budget allows
    const [q, k, v] = onGpu(
      randn([1, 1, 2, 16], { seed: 6 }),
      randn([1, 1, S, 16], { seed: 7 }),
      randn([1, 1, S, 16], { seed: 8 }),
    );
    expect(() => scaledDotProductAttention(q, k, v)).toThrow(NoKernelError);
    expect(() => scaledDotProductAttention(q, k, v)).toThrow(/loop iterations.*\.to\("cpu"\)/s);
  });
});

describe("loopProblem", () => {
  const info = {
    description: "llvmpipe",
    device: "",
    vendor: "",
    architecture: "",
    isFallbackAdapter: false,
  };
  it("says nothing within the budget or without one, and names both numbers past it", () => {
    expect(loopProblem({ loopBudget: 65535, info }, 65535, "x")).toBeUndefined();
    expect(loopProblem({ loopBudget: Number.POSITIVE_INFINITY, info }, 1e12, "x")).toBeUndefined();
    expect(loopProblem({ loopBudget: 65535, info }, 70000.5, "attention over 9 keys")).toMatch(
      /^attention over 9 keys needs up to 70001 loop iterations .*llvmpipe.* after 65535/,
    );
  });
});
