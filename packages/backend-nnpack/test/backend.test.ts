import { backends, conv2d, explain, setVerboseSink, tensor } from "@backplane/core";
import {
  chunkArgs,
  chunksOf,
  type ParallelTask,
  parallelService,
  setParallelService,
  wasmModules,
} from "@backplane/core/cpu";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Algorithm,
  algorithmFor,
  clearTransformCache,
  setTransformCacheEnabled,
  type TransformCacheInfo,
  transformCacheInfo,
} from "../src/index.ts";
import { forced, rand, reference, relError, TOLERANCE, whenReady } from "./helpers.ts";

const ALGORITHMS = ["wt8x8", "wt6x6", "ft8x8", "ft16x16", "direct", "implicit-gemm"];

describe("backends.nnpack", () => {
  // These tests are about nnpack's own choices. Where another package's conv2d is loaded
  // in the same process (Deno runs every test file in one), oneDNN's is set aside.
  let mkldnn: unknown;
  beforeAll(() => {
    mkldnn = backends.mkldnn.enabled;
    backends.mkldnn.enabled = false;
  });
  afterAll(() => {
    backends.mkldnn.enabled = mkldnn as boolean;
  });
  it("is registered and available, with its kernels in explain()", async () => {
    await whenReady();
    expect(backends.nnpack.isAvailable()).toBe(true);
    expect(backends.nnpack.status().backend).toBe("nnpack");
    expect((backends.nnpack.capability() as { algorithms: string[] }).algorithms).toEqual(
      ALGORITHMS,
    );
    const x = rand([1, 3, 20, 20]);
    const w = rand([8, 3, 7, 7]);
    const e = explain("conv2d", x, w, { stride: 2, padding: 3 });
    expect(e.selected).toBe("auto");
    const reason = (k: string) => e.candidates.find((c) => c.kernel === k)?.reason ?? "";
    expect(reason("wt8x8")).toMatch(/Winograd F\(6x6,3x3\) takes 3x3 kernels; this one is 7x7/);
    expect(reason("wt6x6")).toMatch(/F\(4x4,3x3\)/);
    expect(reason("ft8x8")).toMatch(/FFT convolution needs stride 1; stride is 2x2/);
    expect(reason("direct")).toMatch(/direct takes 1x1 kernels/);
    expect(reason("implicit-gemm")).toMatch(/supports the inputs/);
    const big = rand([2, 1, 20, 20]);
    const w17 = rand([1, 1, 17, 17]);
    expect(
      explain("conv2d", big, w17).candidates.find((c) => c.kernel === "ft16x16")?.reason,
    ).toMatch(/17x17 kernel does not fit a 16x16 tile/);
    const w3 = rand([1, 1, 3, 3]);
    expect(
      explain("conv2d", big, w3, { dilation: 8 }).candidates.find((c) => c.kernel === "ft8x8")
        ?.reason,
    ).toMatch(/dilated to 17x17/);
    for (const t of [x, w, big, w17, w3]) t.dispose();
  });

  it("auto follows NNPACK's rules", async () => {
    await whenReady();
    const pick = (x: number[], w: number[], opts?: object, dtype?: "float64") => {
      const a = rand(x, dtype);
      const b = rand(w, dtype);
      try {
        return algorithmFor(a, b, opts);
      } finally {
        a.dispose();
        b.dispose();
      }
    };
    expect(pick([1, 64, 56, 56], [64, 64, 3, 3], { padding: 1 })).toBe("wt6x6");
    expect(pick([1, 64, 112, 112], [64, 64, 3, 3], { padding: 1 })).toBe("wt8x8");
    expect(pick([1, 64, 56, 56], [256, 64, 1, 1])).toBe("direct");
    expect(pick([1, 32, 56, 56], [32, 1, 3, 3], { groups: 32, padding: 1 })).toBe("direct");
    expect(pick([1, 3, 224, 224], [64, 3, 7, 7], { stride: 2, padding: 3 })).toBe("implicit-gemm");
    expect(pick([1, 64, 56, 56], [128, 64, 1, 1], { stride: 2 })).toBe("implicit-gemm");
    // kernels up to 8: 8x8 tiles unless they need more than 6x the 16x16 tiles
    expect(pick([1, 8, 12, 12], [8, 8, 5, 5], { padding: 2 })).toBe("ft16x16"); // 9 > 6 x 1
    expect(pick([1, 8, 8, 8], [8, 8, 5, 5], { padding: 2 })).toBe("ft8x8"); // 4 vs 1
    expect(pick([1, 64, 27, 27], [192, 64, 5, 5], { padding: 2 })).toBe("ft8x8"); // 49 vs 9
    expect(pick([1, 32, 56, 56], [32, 32, 5, 5], { padding: 2 })).toBe("ft16x16"); // 196 vs 25
    expect(pick([1, 4, 12, 12], [4, 4, 3, 3], { dilation: 2 })).toBe("ft8x8"); // 5x5 dilated
    expect(pick([1, 4, 30, 30], [4, 4, 11, 11])).toBe("ft16x16");
    expect(pick([1, 4, 40, 40], [4, 4, 17, 17])).toBe("implicit-gemm");
    expect(pick([1, 4, 12, 12], [4, 4, 3, 3], { padding: 1 }, "float64")).toBe("implicit-gemm");
  });

  it("backends.nnpack.setFlags(false) / flags({ enabled: false }) turn every kernel off", async () => {
    await whenReady();
    const x = rand([1, 2, 8, 8]);
    const w = rand([3, 2, 3, 3]);
    {
      using _ = backends.nnpack.flags({ enabled: false });
      const e = explain("conv2d", x, w);
      expect(e.selected).toBe("reference");
      for (const k of ["auto", ...ALGORITHMS])
        expect(e.candidates.find((c) => c.kernel === k)?.reason).toBe(
          "disabled by flag nnpack.enabled = false",
        );
    }
    expect(backends.nnpack.setFlags(false)).toEqual([true]);
    expect(explain("conv2d", x, w).selected).toBe("reference");
    expect(backends.nnpack.setFlags(true)).toEqual([false]);
    expect(explain("conv2d", x, w).selected).toBe("auto");
    x.dispose();
    w.dispose();
  });

  it("backends.nnpack's members are typed: the README's algorithmFor line compiles uncast", async () => {
    // tsc checks this file (npx tsc -p tsconfig.json): before the core typed backend-nnpack's
    // members on backends.nnpack, algorithmFor was error TS2339 here.
    await whenReady();
    const x = rand([1, 64, 56, 56]);
    const w = rand([64, 64, 3, 3]);
    const alg: Algorithm = backends.nnpack.algorithmFor(x, w, { padding: 1 });
    expect(alg).toBe("wt6x6");
    expect(alg).toBe(algorithmFor(x, w, { padding: 1 }));
    const info: TransformCacheInfo = backends.nnpack.transformCacheInfo();
    expect(info).toEqual(transformCacheInfo());
    expect(backends.nnpack.setTransformCacheEnabled(info.enabled)).toBe(info.enabled);
    expect(backends.nnpack.setTransformCacheLimit(info.limitBytes)).toBe(info.limitBytes);
    expect(backends.nnpack.clearTransformCache()).toBeUndefined();
    x.dispose();
    w.dispose();
  });

  it("reads strided views, and caches weight transforms safely", async () => {
    await whenReady();
    clearTransformCache();
    const base = rand([1, 4, 13, 10]);
    const x = base.transpose(2, 3); // [1, 4, 10, 13], not contiguous
    const w = rand([5, 4, 3, 3]);
    const opts = { padding: 1 };
    for (const k of ["wt8x8", "wt6x6", "ft8x8", "implicit-gemm"]) {
      const y = forced(k, x, w, opts)!;
      expect(relError(y.toFloat64(), reference(x, w, opts)), k).toBeLessThan(
        TOLERANCE[k as "wt8x8"],
      );
      y.dispose();
    }
    expect(transformCacheInfo().misses).toBe(3);
    forced("wt8x8", x, w, opts)!.dispose();
    expect(transformCacheInfo().hits).toBe(1);
    // the same tensor changed in place: the cached transform is not reused
    const data = w.hostData() as Float32Array;
    for (let i = 0; i < w.numel; i++) data[i] *= -2;
    const y = forced("wt8x8", x, w, opts)!;
    expect(relError(y.toFloat64(), reference(x, w, opts))).toBeLessThan(TOLERANCE.wt8x8);
    expect(transformCacheInfo().misses).toBe(4);
    y.dispose();
    // off: nothing cached, nothing dropped
    const before = transformCacheInfo();
    expect(setTransformCacheEnabled(false)).toBe(true);
    forced("wt6x6", x, w, opts)!.dispose();
    expect(setTransformCacheEnabled(true)).toBe(false);
    expect(transformCacheInfo().entries).toBe(before.entries);
    clearTransformCache();
    expect(transformCacheInfo().entries).toBe(0);
    for (const t of [base, x, w]) t.dispose();
  });

  it("handles empty batches and zero input channels", async () => {
    await whenReady();
    const bias = tensor([1, 2, 3]);
    for (const k of ["auto", "wt8x8", "implicit-gemm"]) {
      const y0 = forced(k, rand([0, 2, 8, 8]), rand([3, 2, 3, 3]), { padding: 1 })!;
      expect(y0.shape).toEqual([0, 3, 8, 8]);
      const y = forced(k, rand([1, 0, 4, 4]), rand([3, 0, 3, 3]), { bias, padding: 1 })!;
      expect(y.shape).toEqual([1, 3, 4, 4]);
      const got = Array.from(y.dataSync() as Float32Array);
      expect(got.filter((v, i) => v !== [1, 2, 3][i >> 4])).toEqual([]);
    }
  });

  it("is deterministic, and splitting the work across threads changes no bit", async () => {
    await whenReady();
    const cases: [number[], number[], object][] = [
      [[2, 6, 15, 17], [10, 6, 3, 3], { padding: 1 }],
      [[1, 5, 14, 13], [6, 5, 5, 5], { padding: 2 }],
      [[1, 8, 15, 15], [8, 1, 3, 3], { groups: 8, padding: 1, stride: 2 }],
      [[2, 7, 9, 9], [5, 7, 1, 1], {}],
      [[1, 3, 21, 21], [4, 3, 7, 7], { stride: 2, padding: 3 }],
    ];
    // A stand-in for backend-openmp: three "threads", chunks run in reverse order, each
    // with its own scratch slice, all on this thread.
    const fake = {
      threads: () => 3,
      run(task: ParallelTask, threads: number) {
        const mod = wasmModules().find((m) => m.id === task.module)!;
        const fn = mod.instance.exports[task.fn] as (...a: number[]) => void;
        const chunks = chunksOf(task, threads);
        for (let c = chunks.length - 1; c >= 0; c--)
          fn(...chunkArgs(task, chunks[c][0], chunks[c][1], c));
      },
    };
    using _ = backends.cpu.flags({ preferredBlasLibrary: "wasm" });
    for (const [xs, ws, opts] of cases) {
      const x = rand(xs);
      const w = rand(ws);
      for (const k of ["auto", ...ALGORITHMS]) {
        const a = forced(k, x, w, opts);
        if (!a) continue;
        const serial = a.dataSync();
        a.dispose();
        const again = forced(k, x, w, opts)!;
        expect(again.dataSync(), `${k} twice`).toEqual(serial);
        again.dispose();
        const prev = parallelService();
        setParallelService(fake);
        try {
          using _t = backends.openmp.numThreadsScope(3);
          const threaded = forced(k, x, w, opts)!;
          expect(threaded.dataSync(), `${k} on 3 threads`).toEqual(serial);
          threaded.dispose();
        } finally {
          setParallelService(prev);
        }
      }
      x.dispose();
      w.dispose();
    }
  });

  it("conv2d() runs auto by default and matches the reference", async () => {
    await whenReady();
    const x = rand([1, 16, 30, 30]);
    const w = rand([16, 16, 3, 3]);
    expect(explain("conv2d", x, w, { padding: 1 }).selected).toBe("auto");
    const y = conv2d(x, w, { padding: 1 });
    expect(relError(y.toFloat64(), reference(x, w, { padding: 1 }))).toBeLessThan(TOLERANCE.auto);
    for (const t of [x, w, y]) t.dispose();
  });

  it("exhaustive ranking times every algorithm that accepts the shape; deterministic mode keeps them", async () => {
    await whenReady();
    const x = rand([1, 8, 20, 20]);
    const w = rand([8, 8, 3, 3]);
    const lines: string[] = [];
    const prev = setVerboseSink((l) => lines.push(l));
    try {
      using _ = backends.flags({ core: { ranking: "exhaustive", verbose: true } });
      const y = conv2d(x, w, { padding: 1 });
      expect(relError(y.toFloat64(), reference(x, w, { padding: 1 }))).toBeLessThan(TOLERANCE.auto);
      y.dispose();
    } finally {
      setVerboseSink(prev);
    }
    expect(lines.some((l) => l.startsWith("backplane_verbose,rank,conv2d,"))).toBe(true);
    {
      using _ = backends.flags({ core: { deterministic: true } });
      expect(explain("conv2d", x, w, { padding: 1 }).selected).toBe("auto");
    }
    x.dispose();
    w.dispose();
  });
});

describe("huge dilation, padding and stride (issue 21)", () => {
  it("every kernel that accepts them matches the reference; beyond 32-bit indexing the core refuses first", async () => {
    await whenReady();
    const x = rand([2, 3, 8, 8]);
    const w = rand([4, 3, 3, 3]);
    const cases = [
      { dilation: 2048, padding: 2048 },
      { dilation: 1024, padding: 2048, stride: 3 },
      { stride: 2 ** 30 },
      { padding: [0, 1000], dilation: [1, 500] as [number, number] },
    ] as const;
    let ran = 0;
    for (const opts of cases) {
      const ref = reference(x, w, opts as never);
      for (const k of ALGORITHMS) {
        const y = forced(k, x, w, opts as never);
        if (!y) continue; // refused, with a reason
        expect(relError(y.toFloat64(), ref), `${k} ${JSON.stringify(opts)}`).toBeLessThan(1e-5);
        ran++;
      }
    }
    expect(ran).toBeGreaterThanOrEqual(cases.length); // implicit-gemm takes them all
    expect(() => conv2d(x, w, { dilation: 2 ** 15, padding: 2 ** 15 })).toThrow(/2\^31 - 1/);
  });
});
