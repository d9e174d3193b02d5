import { backends } from "@backplane/core";
import { runConformance } from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { type KernelName, TOLERANCE, whenReady } from "./helpers.ts";

describe("conformance (testkit)", () => {
  it("runConformance('nnpack') passes with the default tolerances", async () => {
    await whenReady();
    expect(backends.nnpack.isAvailable()).toBe(true);
    const report = await runConformance("nnpack");
    report.assertPassed();
    const byKernel = new Map<string, number>();
    for (const r of report.results)
      if (r.status === "pass") byKernel.set(r.kernel, (byKernel.get(r.kernel) ?? 0) + 1);
    // auto, implicit-gemm and direct also run float64
    expect(report.passed).toBeGreaterThan(60);
    for (const k of ["auto", "wt8x8", "wt6x6", "ft8x8", "ft16x16", "direct", "implicit-gemm"])
      expect(byKernel.get(k) ?? 0, k).toBeGreaterThan(0);
    // what a kernel cannot do, it refuses (and says why) rather than computing it wrongly
    const refused = report.results.filter((r) => r.status === "refused");
    expect(refused.some((r) => r.kernel === "wt8x8" && /stride 1/.test(r.message ?? ""))).toBe(
      true,
    );
    expect(refused.some((r) => r.kernel === "direct" && /depthwise/.test(r.message ?? ""))).toBe(
      true,
    );
    // the most general kernels take every case
    for (const k of ["auto", "implicit-gemm"])
      expect(refused.filter((r) => r.kernel === k)).toEqual([]);
  });

  it("passes kernel by kernel at each algorithm's stated tolerance", async () => {
    await whenReady();
    for (const k of Object.keys(TOLERANCE) as KernelName[]) {
      const report = await runConformance("nnpack", {
        kernels: [k],
        dtypes: ["float32"],
        badInputs: false,
        tolerances: { conv2d: { float32: TOLERANCE[k] } },
      });
      report.assertPassed();
      const worst = Math.max(...report.results.map((r) => r.error ?? 0));
      expect(worst, k).toBeLessThan(TOLERANCE[k]);
    }
  });
});
