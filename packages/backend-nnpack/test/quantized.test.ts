/**
 * The qnnpack quantized engine (WASM SIMD128): PyTorch's integers on every testkit case,
 * on 1 and 2 threads, the layer's packed weights reused and freed with it, and the engine
 * setting deciding what runs.
 */
import "../src/index.ts";
import {
  backends,
  conv2dPrepack,
  explain,
  kernelPriority,
  linearPrepack,
  memoryStats,
  type PackedConv2d,
  type PackedLinear,
  type QTensor,
  quantizedConv2d,
  quantizedLinear,
  quantizePerChannel,
  quantizePerTensor,
  randn,
  ready,
  seededRandom,
  tensor,
} from "@backplane/core";
import {
  againstReference,
  runQuantizedConformance,
  uniformQuantized as uniformQ,
} from "@backplane/testkit";
import { describe, expect, it } from "vitest";

describe("quantized engine qnnpack (WASM)", () => {
  it("gives PyTorch's integers on every case", async () => {
    await ready();
    const report = runQuantizedConformance({
      kernels: { quantizedLinear: "qnnpack-linear", quantizedConv2d: "qnnpack-conv2d" },
    });
    console.log(`[backend-nnpack] ${report}`);
    report.assertPassed();
    expect(report.results.filter((r) => r.kernel === "qnnpack-linear").length).toBeGreaterThan(5);
    expect(report.results.filter((r) => r.kernel === "qnnpack-conv2d").length).toBeGreaterThan(6);
  });

  it("equals the reference bit for bit on odd sizes, per channel, on 1 and 2 threads", async () => {
    await ready();
    // qlinear runs 1-7 and 9 rows, qconv_gemm 8 and 64 (and 31: 32 computed): both, with
    // ragged edges.
    for (const [m, k, n] of [
      [1, 1, 1],
      [5, 7, 3],
      [2, 9, 13],
      [8, 1, 5],
      [9, 3, 2],
      [31, 129, 33],
      [64, 256, 100],
    ]) {
      const w = quantizePerChannel(
        randn([n, k], { seed: m + k }),
        Array.from({ length: n }, (_, i) => 0.01 + i * 0.001),
        Array.from({ length: n }, (_, i) => (i % 5) - 2),
        0,
        "qint8",
      );
      const x = quantizePerTensor(randn([m, k], { seed: n }), 0.03, 131, "quint8");
      const layer = linearPrepack(w, randn([n], { seed: 3 }));
      const run = (kernel: string) => {
        using _ = kernelPriority("quantizedLinear", [kernel]);
        return Array.from(quantizedLinear(x, layer, 0.2, 100).intRepr().toFloat64());
      };
      const want = run("reference");
      expect(run("qnnpack-linear")).toEqual(want);
      {
        using _t = backends.openmp.numThreadsScope(2);
        expect(run("qnnpack-linear")).toEqual(want);
      }
      layer.dispose();
    }
  });

  it("conv2d equals the reference bit for bit on odd geometries, on 1 and 2 threads", async () => {
    await ready();
    // [x shape, weight shape, options]: 1x1, 3x3 with padding, depthwise stride 2, groups
    // with dilation and padding past k/2, a 7x7 stem, asymmetric kernel and stride.
    const specs: [number[], number[], Parameters<typeof conv2dPrepack>[2]][] = [
      [[1, 16, 7, 5], [9, 16, 1, 1], {}],
      [[2, 5, 9, 8], [7, 5, 3, 3], { padding: 1 }],
      [[1, 12, 11, 10], [12, 1, 3, 3], { stride: 2, padding: 1, groups: 12 }],
      [[1, 6, 10, 9], [4, 3, 3, 3], { dilation: 2, padding: 3, groups: 2 }],
      [[1, 3, 23, 19], [8, 3, 7, 7], { stride: 2, padding: 3 }],
      [[1, 2, 8, 6], [3, 2, 5, 3], { stride: [2, 1], padding: [1, 0] }],
      // Depthwise (qdwconv): a row tail of 5, stride 3 (gathered lanes) on 2 images,
      // dilation with padding past k/2; and a channel multiplier of 2 (the GEMM path).
      [[1, 5, 9, 13], [5, 1, 3, 3], { padding: 1, groups: 5 }],
      [[2, 4, 12, 17], [4, 1, 5, 5], { stride: 3, padding: 2, groups: 4 }],
      [[1, 3, 10, 10], [3, 1, 3, 3], { dilation: 2, padding: 3, groups: 3 }],
      [[1, 3, 6, 6], [6, 1, 3, 3], { padding: 1, groups: 3 }],
    ];
    for (const [xs, ws, opts] of specs) {
      const w = quantizePerChannel(
        randn(ws, { seed: xs[1] }),
        Array.from({ length: ws[0] }, (_, i) => 0.01 + i * 0.002),
        Array.from({ length: ws[0] }, (_, i) => (i % 3) - 1),
        0,
        "qint8",
      );
      const x = quantizePerTensor(randn(xs, { seed: ws[0] }), 0.03, 131, "quint8");
      const layer = conv2dPrepack(w, randn([ws[0]], { seed: 4 }), opts);
      const run = (kernel: string) => {
        using _ = kernelPriority("quantizedConv2d", [kernel]);
        return Array.from(quantizedConv2d(x, layer, 0.1, 100).intRepr().toFloat64());
      };
      const want = run("reference");
      expect(run("qnnpack-conv2d"), `${xs} ${ws}`).toEqual(want);
      {
        using _t = backends.openmp.numThreadsScope(2);
        expect(run("qnnpack-conv2d"), `${xs} ${ws}, 2 threads`).toEqual(want);
      }
      layer.dispose();
    }
  });

  it("depthwise requantization saturates like the reference: past int32, tiny scales, NaN bias", async () => {
    await ready();
    const w = quantizePerChannel(
      randn([2, 1, 3, 3], { seed: 40 }),
      [0.02, 0.03],
      [0, 1],
      0,
      "qint8",
    );
    const x = quantizePerTensor(randn([1, 2, 4, 4], { seed: 41 }), 0.05, 128, "quint8");
    // [bias, output scale]: values far past the int32 range (the zero point once wrapped
    // them negative: 0 for 255), a scale of 1e-9 (the same), a NaN bias (once the zero point).
    const cases: [number[] | undefined, number][] = [
      [[3e9, 3e9], 1],
      [undefined, 1e-9],
      [[Number.NaN, 1], 1],
    ];
    for (const [bias, scale] of cases) {
      const layer = conv2dPrepack(w, bias ? tensor(bias) : undefined, { padding: 1, groups: 2 });
      const run = (kernel: string) => {
        using _ = kernelPriority("quantizedConv2d", [kernel]);
        expect(explain("quantizedConv2d", x, layer, scale, 10).selected).toBe(kernel);
        return Array.from(quantizedConv2d(x, layer, scale, 10).intRepr().toFloat64());
      };
      expect(run("qnnpack-conv2d"), `bias ${bias}, scale ${scale}`).toEqual(run("reference"));
      layer.dispose();
    }
  });

  it("conv2d on 200 random geometries equals the reference bit for bit", async () => {
    await ready();
    const rng = seededRandom(20261125);
    const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
    const failures: string[] = [];
    for (let run = 0; run < 200; run++) {
      const groups = int(1, 3);
      const depthwise = rng() < 0.25;
      const c = depthwise ? int(1, 9) : groups * int(1, 5);
      const oc = depthwise ? c : groups * int(1, 6);
      const g = depthwise ? c : groups;
      const [kh, kw] = [int(1, 5), int(1, 5)];
      const opts = {
        stride: [int(1, 3), int(1, 3)] as [number, number],
        padding: [int(0, 3), int(0, 3)] as [number, number],
        dilation: [int(1, 2), int(1, 2)] as [number, number],
        groups: g,
      };
      // Big enough for at least one output position.
      const h = Math.max(1, opts.dilation[0] * (kh - 1) + 1 - 2 * opts.padding[0]) + int(0, 12);
      const w = Math.max(1, opts.dilation[1] * (kw - 1) + 1 - 2 * opts.padding[1]) + int(0, 20);
      const shape = [int(1, 2), c, h, w];
      const wq = quantizePerChannel(
        randn([oc, c / g, kh, kw], { seed: run }),
        Array.from({ length: oc }, () => 0.005 + rng() * 0.05),
        Array.from({ length: oc }, () => int(-3, 3)),
        0,
        "qint8",
      );
      const x = quantizePerTensor(
        randn(shape, { seed: run + 1000 }),
        0.02 + rng() * 0.05,
        int(0, 255),
        "quint8",
      );
      const layer = conv2dPrepack(wq, rng() < 0.7 ? randn([oc], { seed: run }) : undefined, opts);
      const outScale = 0.05 + rng() * 0.3;
      const outZp = int(0, 255);
      const run1 = (kernel: string) => {
        using _ = kernelPriority("quantizedConv2d", [kernel]);
        return Array.from(quantizedConv2d(x, layer, outScale, outZp).intRepr().toFloat64());
      };
      const want = run1("reference");
      const got = run1("qnnpack-conv2d");
      if (got.some((v, i) => v !== want[i]) || got.length !== want.length)
        failures.push(`run ${run}: x [${shape}] w [${wq.shape}] ${JSON.stringify(opts)}`);
      layer.dispose();
      wq.dispose();
      x.dispose();
    }
    expect(failures).toEqual([]);
  });

  it("splits big layers into chunks of rows, with the same bits", async () => {
    await ready();
    const same = (a: QTensor, b: QTensor) =>
      expect(Array.from(a.intRepr().toFloat64())).toEqual(Array.from(b.intRepr().toFloat64()));
    // conv: 288 tap pairs x 128 positions per output row: 4 MB takes 28 of the 64 rows.
    const w = quantizePerTensor(randn([2, 64, 3, 3], { seed: 21 }), 0.01, 0, "qint8");
    const x = quantizePerTensor(randn([1, 64, 64, 128], { seed: 22 }), 0.03, 120, "quint8");
    const conv = conv2dPrepack(w, randn([2], { seed: 23 }), { padding: 1 });
    const run = (kernel: string, f: () => QTensor) => {
      using _ = kernelPriority(kernel.endsWith("conv2d") ? "quantizedConv2d" : "quantizedLinear", [
        kernel,
      ]);
      return f();
    };
    same(
      run("qnnpack-conv2d", () => quantizedConv2d(x, conv, 0.2, 100)),
      run("reference", () => quantizedConv2d(x, conv, 0.2, 100)),
    );
    // linear: 4096 pairs per row: 256 rows a chunk, 600 rows in three.
    const lw = quantizePerTensor(randn([3, 8192], { seed: 24 }), 0.01, 0, "qint8");
    const lx = quantizePerTensor(randn([600, 8192], { seed: 25 }), 0.03, 131, "quint8");
    const layer = linearPrepack(lw);
    same(
      run("qnnpack-linear", () => quantizedLinear(lx, layer, 0.5, 128)),
      run("reference", () => quantizedLinear(lx, layer, 0.5, 128)),
    );
  });

  it("runs while every sum fits int32, bit for bit; past it the reference serves, clamped", async () => {
    await ready();
    // x = 0 with zero point 255, w = 127 with zero point -128: every term is -255 x 255.
    // 33025 terms sum to -2147450625 (in int32), 33026 to -2147515650 (wraps positive).
    const x = (shape: number[]) => uniformQ(0, shape, "quint8", 0.001, 255);
    const w = (shape: number[]) => uniformQ(127, shape, "qint8", 1e-4, -128);
    const layers: [
      string,
      number,
      number,
      (k: number) => [QTensor, PackedLinear | PackedConv2d],
    ][] = [
      ["qnnpack-linear", 33025, 33026, (k) => [x([2, k]), linearPrepack(w([3, k]))]],
      // (c / groups) * kh * kw terms: 2 groups of 3669 (33021 terms) or 3670 (33030) channels.
      [
        "qnnpack-conv2d",
        33021,
        33030,
        (k) => [
          x([1, (2 * k) / 9, 3, 3]),
          conv2dPrepack(w([4, k / 9, 3, 3]), undefined, { groups: 2 }),
        ],
      ],
    ];
    for (const [kernel, edge, past, make] of layers)
      for (const k of [edge, past]) {
        const fits = k === edge;
        // Mid-range at the edge (-2147.45e6 x 1e-7 / 2 + 128 = 21), clamped to 0 past it.
        const [xq, layer] = make(k);
        const r = againstReference(kernel, xq, layer, fits ? 2 : 1, 128);
        xq.dispose();
        layer.dispose(); // its packed copy in the WASM memory too
        const tag = `${kernel}, ${k} terms`;
        expect([r.selected, r.ran], tag).toEqual(
          fits ? [kernel, kernel] : ["reference", "reference"],
        );
        if (!fits) expect(r.reason, tag).toMatch(`reach ${k * 255 * 255} in magnitude`);
        if (!fits) expect(r.reason, tag).toMatch("past int32's 2147483647");
        expect(r.got, tag).toEqual(r.want);
        expect(r.want[0], tag).toBe(fits ? 21 : 0);
      }
  });

  it("packs a layer's weights once per packing and frees them with the layer", async () => {
    await ready();
    const w = quantizePerTensor(randn([40, 64], { seed: 9 }), 0.01, 0, "qint8");
    const layer = linearPrepack(w);
    using _ = kernelPriority("quantizedLinear", ["qnnpack-linear"]);
    // One row runs qlinear (4-feature blocks), eight run qconv_gemm (pairs): each packing
    // is made at its first call, then reused.
    for (const [rows, key] of [
      [1, "qnnpack"],
      [8, "qnnpack:pairs"],
    ] as const) {
      const x = quantizePerTensor(randn([rows, 64], { seed: 10 }), 0.02, 128, "quint8");
      quantizedLinear(x, layer, 0.1, 128).dispose();
      expect(layer.engineCache.has(key)).toBe(true);
      const before = memoryStats("cpu").allocatedBytes;
      quantizedLinear(x, layer, 0.1, 128).dispose();
      expect(memoryStats("cpu").allocatedBytes).toBe(before); // nothing packed again
      x.dispose();
    }
    const before = memoryStats("cpu").allocatedBytes;
    layer.dispose();
    expect(memoryStats("cpu").allocatedBytes).toBeLessThan(before);
    expect(layer.engineCache.size).toBe(0);
  });

  it("runs only when quantized.engine is qnnpack or none, and says so", async () => {
    await ready();
    expect(backends.quantized.supportedEngines).toContain("qnnpack");
    // The namespace no backend owns is served by its engines' backends: built, available.
    const status = backends.quantized.status();
    expect([status.built, status.available, status.reason]).toEqual([true, true, undefined]);
    expect(status.backend).toMatch(/nnpack/);
    const w = quantizePerTensor(randn([4, 8], { seed: 11 }), 0.01, 0, "qint8");
    const x = quantizePerTensor(randn([2, 8], { seed: 12 }), 0.02, 128, "quint8");
    const layer = linearPrepack(w);
    {
      using _ = backends.quantized.flags({ engine: "qnnpack" as never });
      expect(explain("quantizedLinear", x, layer, 0.1, 128).selected).toBe("qnnpack-linear");
    }
    if (backends.quantized.supportedEngines.includes("onednn")) {
      using _ = backends.quantized.flags({ engine: "onednn" as never });
      const c = explain("quantizedLinear", x, layer, 0.1, 128).candidates.find(
        (k) => k.kernel === "qnnpack-linear",
      );
      expect(c?.reason).toBe('quantized.engine is "onednn"');
    }
  });
});
