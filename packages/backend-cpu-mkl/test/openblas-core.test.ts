/**
 * OpenBLAS's core (issue 22): a core below what the CPU offers (Debian's 0.3.21 runs
 * Prescott kernels on an Intel Xeon of model 207) is found by comparing
 * openblas_get_corename() with the CPU's features, and replaced by the fastest of the
 * better cores, each loaded from a private copy of the library with OPENBLAS_CORETYPE set.
 * A misidentifying load is made here for real: a copy loaded as Prescott.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backends } from "@backplane/core";
import { openLibrary } from "@backplane/core/cpu";
import { afterAll, describe, expect, it } from "vitest";
import { cEnv, chooseCore, type GemmSymbols, loadCopyWithCore } from "../src/native/core-choice.ts";
import { BLAS_DECL, loadBlas } from "../src/native/library.ts";
import { checkCore, coreLevel, cpuLevel } from "../src/native/openblas-core.ts";
import { itNative } from "./native-helpers.ts";

const AVX512 = ["sse2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"];

describe("checkCore", () => {
  it("ranks OpenBLAS's core names and the CPU's features on one scale", () => {
    expect(coreLevel("Prescott")).toBe(1);
    expect(coreLevel("Sandybridge")).toBe(2);
    expect(coreLevel("Haswell")).toBe(3);
    expect(coreLevel("Zen")).toBe(3);
    expect(coreLevel("SkylakeX")).toBe(4);
    expect(coreLevel("Cooperlake")).toBe(4);
    expect(coreLevel("NotACore")).toBe(0);
    expect(cpuLevel([])).toBe(0);
    expect(cpuLevel(["sse2"])).toBe(1);
    expect(cpuLevel(["sse2", "avx", "avx2", "fma"])).toBe(3);
    expect(cpuLevel(AVX512)).toBe(4);
  });

  it("flags SSE3 kernels on an AVX-512 CPU and proposes the AVX-512 cores", () => {
    const c = checkCore("Prescott", AVX512);
    expect(c.belowCpu).toBe(true);
    expect(c.candidates).toEqual(["SkylakeX"]);
    expect(c.summary).toBe("Prescott (SSE) on a CPU with AVX-512");
    expect(checkCore("Prescott", [...AVX512, "avx512_bf16"]).candidates).toEqual([
      "SkylakeX",
      "Cooperlake",
    ]);
    expect(checkCore("Sandybridge", ["avx", "avx2", "fma"]).candidates).toEqual(["Haswell"]);
  });

  it("leaves a right core, an unknown core and an unknown CPU alone", () => {
    expect(checkCore("SkylakeX", AVX512).belowCpu).toBe(false);
    expect(checkCore("Zen", ["avx", "avx2", "fma"]).belowCpu).toBe(false);
    expect(checkCore("Neoversen1", AVX512).belowCpu).toBe(false);
    expect(checkCore("Prescott", []).belowCpu).toBe(false);
  });
});

describe("chooseCore on a real OpenBLAS", () => {
  const dir = mkdtempSync(join(tmpdir(), "bp-openblas-"));
  const savedCacheDir = process.env.BACKPLANE_CACHE_DIR;
  // The cached choice, so that the next chooseCore measures again.
  const forgetChoice = () => rmSync(join(dir, "openblas-core-v1.json"), { force: true });
  afterAll(() => {
    if (savedCacheDir === undefined) delete process.env.BACKPLANE_CACHE_DIR;
    else process.env.BACKPLANE_CACHE_DIR = savedCacheDir;
    rmSync(dir, { recursive: true, force: true });
  });

  itNative(
    "replaces a core below the CPU with the fastest better one, and caches the choice",
    async () => {
      process.env.BACKPLANE_CACHE_DIR = dir;
      const features = backends.cpu.getCpuCapabilityInfo().features;
      const r = await loadBlas("openblas");
      if (typeof r === "string" || cpuLevel(features) < 2) {
        console.log(
          `[backend-cpu-mkl] core choice not tested: ${typeof r === "string" ? r : "the CPU has no AVX"}`,
        );
        return;
      }
      const open = async (path: string) => {
        const o = await openLibrary({ name: "openblas", candidates: [path] }, BLAS_DECL, {
          systemSearch: false,
        });
        return o.ok ? o.lib : undefined;
      };
      // A load that misidentifies the CPU, as Debian's 0.3.21 does on a Xeon of model 207.
      const env = await cEnv();
      expect(env).toBeDefined();
      const prescott = await loadCopyWithCore(r.path, "Prescott", open);
      expect(prescott?.lib.symbols.openblas_get_corename?.()).toBe("Prescott");
      const user = env?.get("OPENBLAS_CORETYPE") ?? null;
      env?.unset("OPENBLAS_CORETYPE"); // this machine's environment may set one
      try {
        const lib = prescott!.lib;
        const corename = (s: GemmSymbols) => s.openblas_get_corename?.() ?? "";
        const { candidates } = checkCore("Prescott", features);
        // Fixed figures instead of timings (which a loaded machine can reorder): the choice
        // must follow them, keeping Prescott when it rates fastest.
        const prescottFastest = await chooseCore(prescott!.path, lib, open, (s) =>
          corename(s) === "Prescott" ? 100 : 1,
        );
        expect(prescottFastest.how).toBe("measured");
        expect(prescottFastest.core).toBe("Prescott");
        expect(prescottFastest.lib).toBe(lib);
        forgetChoice();
        // The last candidate fastest: the fastest is taken, not the first better one.
        const rating = (core: string) => (core === "Prescott" ? 1 : 2 + candidates.indexOf(core));
        const first = await chooseCore(prescott!.path, lib, open, (s) => rating(corename(s)));
        expect(first.how).toBe("measured");
        expect(first.check.belowCpu).toBe(true);
        const figures = first.measured;
        // A candidate OpenBLAS cannot run on this CPU is left out of the figures.
        const loaded = candidates.filter((c) => c in figures);
        expect(loaded.length).toBeGreaterThan(0);
        expect(figures).toEqual(
          Object.fromEntries(["Prescott", ...loaded].map((c) => [c, rating(c)])),
        );
        expect(first.core).toBe(loaded[loaded.length - 1]);
        expect(first.lib.symbols.openblas_get_corename?.()).toBe(first.core);
        // The chosen instance computes right: sgemm against a float64 product.
        const n = 37;
        const a = Float32Array.from({ length: n * n }, (_, i) => Math.sin(i + 1));
        const b = Float32Array.from({ length: n * n }, (_, i) => Math.cos(3 * i + 2));
        const c = new Float32Array(n * n).fill(Number.NaN);
        first.lib.symbols.cblas_sgemm(101, 111, 111, n, n, n, 1, a, n, b, n, 0, c, n);
        let worst = 0;
        for (let i = 0; i < n; i++)
          for (let j = 0; j < n; j++) {
            let s = 0;
            for (let k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
            worst = Math.max(worst, Math.abs(c[i * n + j] - s));
          }
        expect(worst).toBeLessThan(1e-4);
        // A second start takes the cached choice without timing anything.
        const again = await chooseCore(prescott!.path, lib, open, () => {
          throw new Error("measured again");
        });
        expect(again.how).toBe("cache");
        expect(again.core).toBe(first.core);
        // The real timing, once, as a smoke test: which core wins is the machine's business.
        forgetChoice();
        const timed = await chooseCore(prescott!.path, lib, open);
        console.log(
          `[backend-cpu-mkl] sgemm 256, 1 thread, GFLOP/s by core: ${JSON.stringify(timed.measured)}`,
        );
        expect(timed.how).toBe("measured");
        expect(Object.keys(timed.measured).sort()).toEqual(["Prescott", ...loaded].sort());
        for (const f of Object.values(timed.measured)) expect(f).toBeGreaterThan(0);
        expect(timed.lib.symbols.openblas_get_corename?.()).toBe(timed.core);
        // The user's own OPENBLAS_CORETYPE is respected.
        env?.set("OPENBLAS_CORETYPE", "Prescott");
        const kept = await chooseCore(prescott!.path, lib, open);
        expect(kept.core).toBe("Prescott");
        expect(kept.how).toMatch(/set by the user/);
      } finally {
        if (user === null) env?.unset("OPENBLAS_CORETYPE");
        else env?.set("OPENBLAS_CORETYPE", user);
      }
    },
  );
});
