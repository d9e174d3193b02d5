import { backends, explain, kernelPriority, matmul, randn, ready } from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { runConformance } from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { WASM_BACKEND } from "../src/index.ts";
import { itNative } from "./native-helpers.ts";

describe("WASM SIMD kernels", () => {
  it("initialise from the shipped .wasm files", async () => {
    await ready(WASM_BACKEND);
    expect(getBackend(WASM_BACKEND)!.initState).toBe("ready");
    expect(backends.mkldnn.isAvailable()).toBe(true);
    expect((backends.mkldnn.capability() as { isa: string }).isa).toBe("WASM_SIMD128");
  });

  it("pass the conformance suite", async () => {
    await ready(WASM_BACKEND);
    const report = await runConformance(WASM_BACKEND);
    report.assertPassed();
    expect(report.passed).toBeGreaterThan(140);
  });

  itNative(
    "serve matmul when the native library is set aside, and read views without copies",
    async () => {
      await ready();
      using _ = backends.cpu.flags({ preferredBlasLibrary: "wasm" });
      const a = randn([33, 17], { seed: 1 });
      const b = randn([29, 17], { seed: 2 }).transpose(0, 1);
      const e = explain("matmul", a, b);
      expect(e.selected).toBe("wasm-gemm");
      expect(e.candidates.find((c) => c.kernel === "blas-gemm")!.reason).toBe(
        'cpu.preferredBlasLibrary is "wasm"',
      );
      expect(matmul(a, b).shape).toEqual([33, 29]);
    },
  );

  it("mkldnn.enabled switches them off", async () => {
    await ready();
    using _ = backends.flags({ mkldnn: { enabled: false }, cpu: { preferredBlasLibrary: "wasm" } });
    const a = randn([4, 4], { seed: 3 });
    expect(explain("matmul", a, a).selected).toBe("reference");
    using _p = kernelPriority("matmul", ["wasm-gemm"]);
    expect(explain("matmul", a, a).candidates.find((c) => c.kernel === "wasm-gemm")!.reason).toBe(
      "disabled by flag mkldnn.enabled = false",
    );
  });
});
