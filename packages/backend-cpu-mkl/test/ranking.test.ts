/**
 * Native is not faster by being native (issue 22): on a machine whose only BLAS is
 * netlib's reference implementation (Debian's libblas3, pulled in by many packages), the
 * calibration at ready() measures it below the WASM GEMM, and matmul at 256 runs the WASM
 * GEMM. The reference BLAS is loaded for real (libblas3's own directory); the test skips
 * with one line where it is not installed, and .ci/run installs it and requires it.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backends, explain, randn, ready } from "@backplane/core";
import { getBackend, restartInit, setTimingClock } from "@backplane/core/backend";
import { readEnv } from "@backplane/core/cpu";
import { afterAll, describe, expect, it } from "vitest";
import {
  configureDnnlSearch,
  configureNativeSearch,
  DNNL_BACKEND,
  NATIVE_BACKEND,
} from "../src/index.ts";

const NETLIB_DIRS = ["/usr/lib/x86_64-linux-gnu/blas", "/usr/lib/aarch64-linux-gnu/blas"];
const dir = NETLIB_DIRS.find((d) => existsSync(join(d, "libblas.so.3")));
const required = readEnv("BACKPLANE_EXPECT_NETLIB") === "1";
if (!dir && !required)
  console.log(
    "[backend-cpu-mkl] netlib ranking test skipped: no reference BLAS (apt install libblas3)",
  );
const itNetlib = (dir || required ? it : it.skip) as typeof it.skip;

/** How much slower than real time the calibration's clock runs here. */
const SLOWDOWN = 1000;

describe("measured ranking against a slow native BLAS", () => {
  const cache = mkdtempSync(join(tmpdir(), "bp-ranking-"));
  const saved = process.env.BACKPLANE_CACHE_DIR;
  afterAll(async () => {
    configureNativeSearch({});
    configureDnnlSearch(undefined);
    restartInit(DNNL_BACKEND);
    await ready(NATIVE_BACKEND, DNNL_BACKEND).catch(() => {});
    if (saved === undefined) delete process.env.BACKPLANE_CACHE_DIR;
    else process.env.BACKPLANE_CACHE_DIR = saved;
    await backends.cpu.calibrate();
    rmSync(cache, { recursive: true, force: true });
  });

  itNetlib("with only netlib's BLAS, matmul 256 runs the WASM GEMM", async () => {
    expect(dir, "libblas3 is required here (BACKPLANE_EXPECT_NETLIB=1)").toBeDefined();
    process.env.BACKPLANE_CACHE_DIR = cache;
    configureNativeSearch({ searchPaths: [dir as string], systemSearch: false });
    // That machine has no oneDNN either (its matmul would otherwise be a third candidate).
    configureDnnlSearch([]);
    restartInit(DNNL_BACKEND);
    // The calibration's clock at 1/1000 of real time: its 50 ms budget becomes 50 s, so a
    // loaded machine cannot leave the case late, and both kernels' times shrink alike (the
    // order, with its margin, is unchanged).
    const previous = setTimingClock(() => performance.now() / SLOWDOWN);
    try {
      await backends.ready();
    } finally {
      setTimingClock(previous);
    }
    const cap = getBackend(NATIVE_BACKEND)?.def.capability?.() as { library?: string };
    expect(cap?.library).toBe("reference");
    const report = backends.cpu.calibration();
    expect(report?.source).toBe("measured");
    expect(report?.pending).toEqual([]);
    const m = report?.measurements.find(
      (x) => x.op === "matmul" && x.case === "256x256x256" && x.dtype === "float32",
    );
    expect(m, "matmul 256 float32 was measured").toBeDefined();
    const ms = (k: string) => (m?.figures.find((f) => f.kernel === k)?.ms ?? Number.NaN) * SLOWDOWN;
    console.log(
      `[backend-cpu-mkl] matmul 256 float32: netlib blas-gemm ${ms("blas-gemm").toFixed(2)} ms, wasm-gemm ${ms("wasm-gemm").toFixed(2)} ms`,
    );
    expect(ms("wasm-gemm")).toBeLessThan(ms("blas-gemm"));
    const a = randn([256, 256], { seed: 1 });
    const b = randn([256, 256], { seed: 2 });
    const e = explain("matmul", a, b);
    expect(e.selected).toBe("wasm-gemm");
    expect(e.toString()).toMatch(
      /blas-gemm \(cpu-blas\).*\[measured [\d.]+ ms at 256x256x256 float32\]/,
    );
    a.dispose();
    b.dispose();
  });
});
