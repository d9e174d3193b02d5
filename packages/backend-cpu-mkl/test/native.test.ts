import { backends, explain, getBackend, matmul, randn, ready } from "@backplane/core";
import { runConformance } from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { configureNativeSearch, NATIVE_BACKEND } from "../src/index.ts";

describe("native BLAS/LAPACK (Debian's OpenBLAS here)", () => {
  it("loads a library and reports it", async () => {
    await ready(NATIVE_BACKEND);
    const b = getBackend(NATIVE_BACKEND)!;
    expect(b.initError).toBeUndefined();
    const cap = backends.mkl.capability() as { library: string; path: string };
    expect(cap.library).toBe("openblas");
    // backends.mkl is only available with real MKL.
    expect(backends.mkl.isAvailable()).toBe(false);
    expect(backends.mkl.status().reason).toMatch(/not MKL/);
  });

  it("passes the conformance suite", async () => {
    await ready(NATIVE_BACKEND);
    const report = await runConformance(NATIVE_BACKEND);
    report.assertPassed();
    expect(report.passed).toBeGreaterThan(80);
  });

  it("is what the dispatcher picks for float32 matmul", async () => {
    await ready(NATIVE_BACKEND);
    const a = randn([64, 32], { seed: 1 });
    const b = randn([32, 16], { seed: 2 });
    expect(explain("matmul", a, b).selected).toBe("blas-gemm");
    expect(matmul(a, b).shape).toEqual([64, 16]);
  });

  it("a missing library is a reason in explain(), and another kernel serves", async () => {
    configureNativeSearch({ searchPaths: [], systemSearch: false });
    try {
      await ready(NATIVE_BACKEND);
      const a = randn([8, 8], { seed: 3 });
      const e = explain("matmul", a, a);
      const mine = e.candidates.find((c) => c.kernel === "blas-gemm")!;
      expect(mine.accepted).toBe(false);
      expect(mine.reason).toMatch(
        /failed to initialise: no BLAS library found \(mkl: .*not found.*openblas: .*not found/,
      );
      expect(e.selected).not.toBe("blas-gemm");
      expect(matmul(a, a).shape).toEqual([8, 8]);
    } finally {
      configureNativeSearch({});
      await ready(NATIVE_BACKEND);
    }
    expect(explain("matmul", randn([2, 2]), randn([2, 2])).selected).toBe("blas-gemm");
  });
});
