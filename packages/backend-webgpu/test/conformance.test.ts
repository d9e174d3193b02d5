/**
 * The testkit's conformance suite on device "webgpu": every kernel, every case, inputs
 * moved with t.to("webgpu"), outputs read back with toAsync("cpu") and judged against
 * the core's float64 reference, new memory poisoned with NaN bytes first.
 */
import { runtime } from "@backplane/core";
import { runConformance } from "@backplane/testkit";
import { describe, expect } from "vitest";
import { WEBGPU_BACKEND, webgpuCapability } from "../src/index.ts";
import { gpuIt } from "./helpers.ts";

/**
 * The testkit's default tolerances (worst relative error, relative to the reference's
 * largest magnitude), passed explicitly: no loosening was needed. Measured worst errors on
 * lavapipe and SwiftShader: float32 <= 3e-7 (every op), float16 <= 5e-4 (f32 accumulation,
 * f32 exp/erf/tanh; float16 only where the adapter has shader-f16).
 */
export const TOLERANCES = { float32: 2e-5, float16: 4e-3 };

describe("conformance (testkit) on webgpu", () => {
  gpuIt("runConformance('webgpu') passes", async () => {
    const report = await runConformance(WEBGPU_BACKEND, { tolerances: TOLERANCES });
    const cap = webgpuCapability()!;
    console.log(
      `[backend-webgpu] ${runtime().name} on ${cap.adapter.description || cap.adapter.architecture} (${cap.source}): ${report}`,
    );
    const worst = new Map<string, number>();
    for (const r of report.results) {
      if (r.status !== "pass" || r.error === undefined) continue;
      const k = `${r.op}/${r.dtype}`;
      worst.set(k, Math.max(worst.get(k) ?? 0, r.error));
    }
    console.log(
      `[backend-webgpu] worst relative errors: ${[...worst].map(([k, e]) => `${k} ${e.toExponential(1)}`).join(", ")}`,
    );
    report.assertPassed();
    expect(report.passed).toBeGreaterThan(60);
    // float16 runs where the adapter has shader-f16, and is refused with the reason elsewhere.
    const f16 = report.results.filter((r) => r.dtype === "float16");
    // (multiHeadAttention's fast path refuses, at any dtype, what it does not fuse: cross-
    // attention and separate in-projections.)
    const unfusedMha = (r: (typeof f16)[number]) => /the fast path fuses/.test(r.message ?? "");
    if (cap.features.shaderF16)
      expect(
        f16.every((r) => r.status !== "fail" && (r.status !== "refused" || unfusedMha(r))),
      ).toBe(true);
    else
      expect(
        f16.every(
          (r) =>
            r.status === "skipped" ||
            (r.status === "refused" && /shader-f16/.test(r.message ?? "")),
        ),
      ).toBe(true);
  });
});
