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
import { getBackend, readEnv, restartInit } from "@backplane/core/backend";
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
    await backends.ready();
    const cap = getBackend(NATIVE_BACKEND)?.def.capability?.() as { library?: string };
    expect(cap?.library).toBe("reference");
    // A case the first budget did not reach is measured at the next ready().
    const find = () =>
      backends.cpu
        .calibration()
        ?.measurements.find(
          (x) => x.op === "matmul" && x.case === "256x256x256" && x.dtype === "float32",
        );
    for (let i = 0; i < 3 && !find(); i++) await backends.ready();
    expect(backends.cpu.calibration()?.source).toBe("measured");
    const m = find();
    const ms = (k: string) => m?.figures.find((f) => f.kernel === k)?.ms ?? Number.NaN;
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
