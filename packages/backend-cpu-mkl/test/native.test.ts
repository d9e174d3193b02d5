import {
  backends,
  type Explanation,
  explain,
  inv,
  kernelPriority,
  LinalgError,
  matmul,
  randn,
  ready,
  runtime,
  setVerboseSink,
  tensor,
} from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { runConformance } from "@backplane/testkit";
import { describe, expect } from "vitest";
import { configureNativeSearch, NATIVE_BACKEND } from "../src/index.ts";
import { itNative } from "./native-helpers.ts";

/**
 * What the measured order runs first, by the dispatcher's rule (reorderByMeasurement in
 * core's measured.ts): the kernels in the authors' order, each measured backend moved
 * ahead of the one above it only if it measured 1.1 times faster (MARGIN), then the
 * first kernel that accepts the inputs.
 */
function measuredChoice(authors: Explanation, measured: Explanation): string | undefined {
  const ms = new Map<string, number>();
  for (const c of measured.candidates) if (c.measured) ms.set(c.backend, c.measured.ms);
  const kernels = authors.candidates;
  const order = [...new Set(kernels.map((c) => c.backend).filter((b) => ms.has(b)))];
  for (let i = 1; i < order.length; i++)
    for (let j = i; j > 0; j--) {
      if (!((ms.get(order[j]) as number) * 1.1 < (ms.get(order[j - 1]) as number))) break;
      [order[j - 1], order[j]] = [order[j], order[j - 1]];
    }
  // The measured backends' kernels fill the measured backends' places, in the new order.
  const rank = (c: { backend: string }) => order.indexOf(c.backend);
  const moved = kernels.filter((c) => ms.has(c.backend)).sort((x, y) => rank(x) - rank(y));
  let next = 0;
  return kernels.map((c) => (ms.has(c.backend) ? moved[next++] : c)).find((c) => c.accepted)
    ?.kernel;
}

describe("native BLAS/LAPACK (Debian's OpenBLAS here)", () => {
  itNative("loads a library and reports it", async () => {
    await ready(NATIVE_BACKEND);
    const b = getBackend(NATIVE_BACKEND)!;
    expect(b.initError).toBeUndefined();
    const cap = backends.mkl.capability() as { library: string; path: string };
    expect(cap.library).toBe("openblas");
    // backends.mkl is only available with real MKL.
    expect(backends.mkl.isAvailable()).toBe(false);
    expect(backends.mkl.status().reason).toMatch(/not MKL/);
  });

  itNative("passes the conformance suite", async () => {
    await ready(NATIVE_BACKEND);
    const report = await runConformance(NATIVE_BACKEND);
    report.assertPassed();
    expect(report.passed).toBeGreaterThan(80);
  });

  itNative("is what the dispatcher picks for float32 matmul", async () => {
    await ready(NATIVE_BACKEND);
    const a = randn([64, 32], { seed: 1 });
    const b = randn([32, 16], { seed: 2 });
    // The authors' order; with calibration on, the kernel measured fastest on this machine
    // among every backend explain() shows a figure for (oneDNN's too where it loaded).
    let authors: Explanation;
    {
      using _ = backends.cpu.flags({ calibrate: false });
      authors = explain("matmul", a, b);
    }
    expect(authors.selected).toBe("blas-gemm");
    const measured = explain("matmul", a, b);
    expect(measured.selected).toBe(measuredChoice(authors, measured));
    expect(matmul(a, b).shape).toEqual([64, 16]);
  });

  itNative(
    'a missing library is "not installed (optional)" in explain(), and another kernel serves',
    async () => {
      configureNativeSearch({ searchPaths: [], systemSearch: false });
      try {
        await ready(NATIVE_BACKEND);
        const a = randn([8, 8], { seed: 3 });
        const e = explain("matmul", a, a);
        const mine = e.candidates.find((c) => c.kernel === "blas-gemm")!;
        expect(mine.accepted).toBe(false);
        // Not a failure: a short reason with the fix; every path tried is in status().detail.
        expect(mine.reason).toMatch(
          /^backend cpu-blas: not installed \(optional\): a BLAS library \(OpenBLAS or MKL\); apt install libopenblas0-pthread/,
        );
        expect(mine.reason).not.toMatch(/fail/);
        expect(mine.reason.length).toBeLessThanOrEqual(300);
        const st = backends.mkl.status();
        expect(st.available).toBe(false);
        expect(st.reason).toMatch(/^not installed \(optional\): a BLAS library/);
        expect(st.reason!.length).toBeLessThanOrEqual(300);
        expect(st.detail).toMatch(/mkl: .*not found.*openblas: .*not found/);
        for (const c of e.candidates) expect(c.reason.length, c.kernel).toBeLessThanOrEqual(300);
        expect(e.selected).not.toBe("blas-gemm");
        expect(matmul(a, a).shape).toEqual([8, 8]);
      } finally {
        configureNativeSearch({});
        await ready(NATIVE_BACKEND);
      }
      expect(
        backends.withFlags(
          { cpu: { calibrate: false } },
          () => explain("matmul", randn([2, 2]), randn([2, 2])).selected,
        ),
      ).toBe("blas-gemm");
    },
  );

  itNative("the BLAS thread count follows openmp's setting", async () => {
    await ready(NATIVE_BACKEND);
    const threads = () => (backends.mkl.capability() as { threads: number }).threads;
    {
      using _ = backends.openmp.numThreadsScope(1);
      expect(threads()).toBe(1);
    }
    backends.openmp.setNumThreads(2);
    expect(threads()).toBe(2);
    // LAPACK may run on one library thread (under Deno, whose FFI thread has a small
    // stack), but the setting comes back after the call.
    const a = randn([256, 256], { seed: 5, dtype: "float64" });
    inv(a).dispose();
    expect(threads()).toBe(2);
    // An async scope reaches the library too, and puts the count back when it ends.
    await backends.withFlags({ openmp: { numThreads: 1 } }, async () => {
      await new Promise((r) => setTimeout(r, 1));
      expect(threads()).toBe(1);
    });
    expect(threads()).toBe(2);
  });

  itNative("mkl.verbose prints one line per library call, and restores the level", async () => {
    await ready(NATIVE_BACKEND);
    const lines: string[] = [];
    const prev = setVerboseSink((l) => lines.push(l));
    try {
      using _ = backends.mkl.verbose(backends.mkl.VERBOSE_ON);
      // The BLAS kernel whatever the calibration measured (oneDNN's or the WASM GEMM would
      // make no cblas_sgemm call).
      using _k = kernelPriority("matmul", ["blas-gemm"]);
      matmul(randn([3, 4, 5], { seed: 1 }), randn([5, 2], { seed: 2 }));
    } finally {
      setVerboseSink(prev);
    }
    expect(lines.filter((l) => l.startsWith("MKL_VERBOSE cblas_sgemm(N,N,4,2,5)")).length).toBe(3);
    expect(
      lines.some((l) =>
        l.startsWith("backplane_verbose,exec,matmul,cpu-blas:blas-gemm,3x4x5x2,float32"),
      ),
    ).toBe(true);
    expect(backends.mkl.values().verbose).toBe(0);
  });

  itNative("LAPACK info codes become typed errors naming the op and the position", async () => {
    await ready(NATIVE_BACKEND);
    let err: unknown;
    try {
      inv(
        tensor(
          [
            [1, 2, 3],
            [2, 4, 6],
            [1, 0, 1],
          ],
          { dtype: "float64" },
        ),
      );
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LinalgError);
    expect((err as LinalgError).message).toMatch(
      /^inv: the matrix is singular \(U\[\d,\d\] is exactly zero\)/,
    );
    expect((err as LinalgError).position).toBeGreaterThan(0);
  });
});

describe("deterministic mode: the same bits whatever the thread count (issue 21)", () => {
  itNative(
    "blas-gemm and LAPACK are bit-identical at 1, 2 and the machine's thread count",
    async () => {
      await ready(NATIVE_BACKEND);
      const counts = [...new Set([1, 2, runtime().hardwareConcurrency])];
      const shapes = [
        [100, 300, 70],
        [513, 129, 257],
        [1000, 64, 1000],
        [300, 300, 300],
        [7, 13, 5],
      ];
      for (const dtype of ["float32", "float64"] as const) {
        for (const [m, k, n] of shapes) {
          const a = randn([m, k], { seed: 1, dtype });
          const b = randn([k, n], { seed: 2, dtype });
          const bits = counts.map((t) =>
            backends.withFlags({ core: { deterministic: true }, openmp: { numThreads: t } }, () => {
              using _ = kernelPriority("matmul", ["blas-gemm"]);
              expect(explain("matmul", a, b).selected).toBe("blas-gemm");
              return matmul(a, b).toFloat64();
            }),
          );
          for (const other of bits.slice(1))
            expect(
              other.every((v, i) => Object.is(v, bits[0][i])),
              `${dtype} ${m}x${k}x${n}`,
            ).toBe(true);
        }
        const spd = randn([64, 64], { seed: 3, dtype });
        const invs = counts.map((t) =>
          backends.withFlags({ core: { deterministic: true }, openmp: { numThreads: t } }, () =>
            inv(spd).toFloat64(),
          ),
        );
        for (const other of invs.slice(1))
          expect(other.every((v, i) => Object.is(v, invs[0][i]))).toBe(true);
      }
    },
  );
});
