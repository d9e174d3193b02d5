import { fileURLToPath } from "node:url";
import { backends, explain, matmul, randn, ready } from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import {
  builtinModule,
  cpuMemory,
  host,
  relaxedSimdEnabled,
  wasmModuleUrl,
} from "@backplane/core/cpu";
import { runConformance } from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { WASM_BACKEND } from "../src/index.ts";
import { GEMM_WASM } from "../src/wasm-files.ts";
import { itNative } from "./native-helpers.ts";

describe("WASM SIMD kernels", () => {
  it("initialise from the shipped .wasm files", async () => {
    await ready(WASM_BACKEND);
    expect(getBackend(WASM_BACKEND)!.initState).toBe("ready");
    expect((getBackend(WASM_BACKEND)!.def.capability!() as { isa: string }).isa).toBe(
      "WASM_SIMD128",
    );
  });

  it("load the relaxed-SIMD GEMM where the runtime validates relaxed SIMD (Bun, Deno), else the plain one", () => {
    const relaxed = relaxedSimdEnabled();
    // Node 20 validates relaxed SIMD only with --experimental-wasm-relaxed-simd.
    const flagged = (host.process?.execArgv ?? []).some((a) => a.includes("relaxed-simd"));
    if (host.Bun || host.Deno || flagged) expect(relaxed).toBe(true);
    else if (host.process?.versions?.node?.startsWith("20.")) expect(relaxed).toBe(false);
    const url = wasmModuleUrl(GEMM_WASM).href;
    const shared = cpuMemory().shared;
    expect(url.endsWith(`gemm${relaxed ? ".relaxed" : ""}${shared ? "" : ".nothreads"}.wasm`)).toBe(
      true,
    );
    // The relaxed build validates exactly where the probe does; the plain build everywhere.
    const fs = builtinModule<typeof import("node:fs")>("node:fs")!;
    const bytes = (u: URL) => new Uint8Array(fs.readFileSync(fileURLToPath(u)));
    expect(WebAssembly.validate(bytes(GEMM_WASM.relaxed!.threads))).toBe(relaxed);
    expect(WebAssembly.validate(bytes(GEMM_WASM.threads))).toBe(true);
    // The tolerance is the same: FMA rounds once where mul + add rounds twice, so the
    // relaxed build is at least as close to the float64 product (conformance holds both
    // to the float32 tolerance, 2e-5 relative).
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

  it("are not oneDNN: mkldnn.enabled = false leaves them running (as torch's own kernels)", async () => {
    await ready();
    using _ = backends.flags({ mkldnn: { enabled: false }, cpu: { preferredBlasLibrary: "wasm" } });
    const a = randn([4, 4], { seed: 3 });
    expect(explain("matmul", a, a).selected).toBe("wasm-gemm");
  });
});
