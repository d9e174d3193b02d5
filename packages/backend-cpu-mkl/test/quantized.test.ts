/**
 * The onednn quantized engine (the int8 matmul primitive for linear, the int8 convolution
 * primitive for conv2d): PyTorch's numbers bit for bit (the testkit's cases) and the
 * reference's on odd geometries, chosen by backends.quantized.engine, offered only while
 * oneDNN loads.
 */
import {
  backends,
  conv2dPrepack,
  explain,
  FlagError,
  kernelPriority,
  linearPrepack,
  mul,
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
import { restartInit } from "@backplane/core/backend";
import {
  againstReference,
  runQuantizedConformance,
  uniformQuantized as uniformQ,
} from "@backplane/testkit";
import { describe, expect } from "vitest";
import { configureDnnlSearch, DNNL_BACKEND } from "../src/index.ts";
import { itDnnl } from "./dnnl-helpers.ts";

const layer = () => {
  const w = quantizePerTensor(randn([8, 16], { seed: 1 }), 0.01, 0, "qint8");
  const x = quantizePerTensor(randn([3, 16], { seed: 2 }), 0.02, 128, "quint8");
  return { x, packed: linearPrepack(w) };
};

/** The reason the engine refuses on this CPU (no VNNI), or undefined. */
function vnniRefusal(): string | undefined {
  const { x, packed } = layer();
  const c = explain("quantizedLinear", x, packed, 0.05, 128).candidates.find(
    (k) => k.kernel === "onednn-qlinear",
  );
  return c?.reason?.includes("VNNI") ? c.reason : undefined;
}

describe("quantized engine onednn", () => {
  itDnnl("gives PyTorch's integers on every case (where the CPU has VNNI)", async () => {
    await ready(DNNL_BACKEND);
    const refusal = vnniRefusal();
    if (refusal) {
      console.log(`[backend-cpu-mkl] onednn engine conformance skipped: ${refusal}`);
      return;
    }
    const report = runQuantizedConformance({
      kernels: { quantizedLinear: "onednn-qlinear", quantizedConv2d: "onednn-qconv2d" },
    });
    console.log(`[backend-cpu-mkl] ${report}`);
    // Grouped layers with an activation zero point go to another kernel where oneDNN chose
    // its GEMM convolution (its zero-point compensation is wrong on some of them): there
    // the integers must still be PyTorch's.
    const steppedAside = (r: (typeof report.results)[number]) =>
      r.what === "conv2d" &&
      /groups [2-9]/.test(r.case) &&
      r.message === `ran ${r.kernel}, not onednn-qconv2d` &&
      r.mismatches === 0;
    expect(report.failed.filter((r) => !steppedAside(r))).toEqual([]);
    expect(report.results.some((r) => r.kernel === "onednn-qlinear")).toBe(true);
    expect(report.results.filter((r) => r.kernel === "onednn-qconv2d").length).toBeGreaterThan(6);
  });

  itDnnl("conv2d equals the reference on odd geometries, on 1 and 2 threads", async () => {
    await ready(DNNL_BACKEND);
    if (vnniRefusal()) return; // logged by the conformance test
    const specs: [number[], number[], Parameters<typeof conv2dPrepack>[2]][] = [
      [[2, 5, 9, 8], [7, 5, 3, 3], { padding: 1 }],
      [[1, 12, 11, 10], [12, 1, 3, 3], { stride: 2, padding: 1, groups: 12 }],
      [[1, 6, 10, 9], [4, 3, 3, 3], { dilation: 2, padding: 3, groups: 2 }],
      [[1, 3, 23, 19], [8, 3, 7, 7], { stride: 2, padding: 3 }],
      [[1, 2, 8, 6], [3, 2, 5, 3], { stride: [2, 1], padding: [1, 0] }],
      [[1, 1, 1, 1], [1, 1, 1, 1], {}],
    ];
    for (const [xs, ws, opts] of specs) {
      const w = quantizePerChannel(
        randn(ws, { seed: xs[1] }),
        Array.from({ length: ws[0] }, (_, i) => 0.01 + i * 0.002),
        Array(ws[0]).fill(0),
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
      expect(run("onednn-qconv2d"), `${xs} ${ws}`).toEqual(want);
      {
        using _t = backends.openmp.numThreadsScope(2);
        expect(run("onednn-qconv2d"), `${xs} ${ws}, 2 threads`).toEqual(want);
      }
      layer.dispose();
    }
  });

  itDnnl("conv2d on 100 random geometries equals the reference bit for bit", async () => {
    await ready(DNNL_BACKEND);
    if (vnniRefusal()) return; // logged by the conformance test
    const rng = seededRandom(20261126);
    const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
    const failures: string[] = [];
    for (let run = 0; run < 100; run++) {
      const g = int(1, 3);
      const [c, oc] = [g * int(1, 5), g * int(1, 6)];
      const [kh, kw] = [int(1, 5), int(1, 5)];
      const opts = {
        stride: [int(1, 3), int(1, 3)] as [number, number],
        padding: [int(0, 3), int(0, 3)] as [number, number],
        dilation: [int(1, 2), int(1, 2)] as [number, number],
        groups: g,
      };
      const h = Math.max(1, opts.dilation[0] * (kh - 1) + 1 - 2 * opts.padding[0]) + int(0, 12);
      const w = Math.max(1, opts.dilation[1] * (kw - 1) + 1 - 2 * opts.padding[1]) + int(0, 20);
      const shape = [int(1, 2), c, h, w];
      const wq = quantizePerChannel(
        randn([oc, c / g, kh, kw], { seed: run }),
        Array.from({ length: oc }, () => 0.005 + rng() * 0.05),
        Array(oc).fill(0),
        0,
        "qint8",
      );
      const x = quantizePerTensor(randn(shape, { seed: run + 1000 }), 0.03, int(0, 255), "quint8");
      const layer = conv2dPrepack(wq, rng() < 0.7 ? randn([oc], { seed: run }) : undefined, opts);
      const outZp = int(0, 255);
      const y = (kernel: string) => {
        using _ = kernelPriority("quantizedConv2d", [kernel]);
        return Array.from(quantizedConv2d(x, layer, 0.2, outZp).intRepr().toFloat64());
      };
      const want = y("reference");
      if (y("onednn-qconv2d").some((v, i) => v !== want[i]))
        failures.push(`run ${run}: x [${shape}] w [${wq.shape}] ${JSON.stringify(opts)}`);
      layer.dispose();
    }
    expect(failures).toEqual([]);
  });

  itDnnl(
    "conv2d rounds ties to even before adding an odd zero point, as the reference",
    async () => {
      await ready(DNNL_BACKEND);
      if (vnniRefusal()) return; // logged by the conformance test
      // x scale 0.5 and weight scale 1: every sum's real value is acc / 2, a tie (k + 0.5)
      // for every odd sum; output scale 1 and zero point 101 (odd): rounding after adding
      // the zero point would move every tie up or down by one.
      const x = quantizePerTensor(randn([2, 6, 9, 9], { seed: 3 }), 0.5, 3, "quint8");
      const wf = randn([8, 6, 3, 3], { seed: 4 });
      const w = quantizePerTensor(mul(wf, tensor(3)), 1, 0, "qint8");
      const layer = conv2dPrepack(w, undefined, { padding: 1 });
      const y = (kernel: string) => {
        using _ = kernelPriority("quantizedConv2d", [kernel]);
        return Array.from(quantizedConv2d(x, layer, 1, 101).intRepr().toFloat64());
      };
      const want = y("reference");
      expect(y("onednn-qconv2d")).toEqual(want);
      // The sums themselves (output scale 0.5: q = acc, clamped to [0, 255]): a good part of
      // them odd, so there are ties to round and the test bites.
      const sums = (() => {
        using _ = kernelPriority("quantizedConv2d", ["reference"]);
        return Array.from(quantizedConv2d(x, layer, 0.5, 0).intRepr().toFloat64());
      })();
      expect(sums.filter((v) => v % 2 === 1).length).toBeGreaterThan(want.length / 8);
      layer.dispose();
    },
  );

  itDnnl("linear equals the reference on random sizes and weight zero points", async () => {
    await ready(DNNL_BACKEND);
    if (vnniRefusal()) return; // logged by the conformance test
    const rng = seededRandom(20261127);
    const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
    const failures: string[] = [];
    for (let run = 0; run < 60; run++) {
      const [m, k, n] = [int(1, 40), int(1, 300), int(1, 70)];
      const wZp = run % 3 === 0 ? int(-5, 5) : 0; // one zero point for every channel
      const w = quantizePerTensor(randn([n, k], { seed: run }), 0.01 + rng() * 0.02, wZp, "qint8");
      const x = quantizePerTensor(randn([m, k], { seed: run + 99 }), 0.02, int(0, 255), "quint8");
      const layer = linearPrepack(w, rng() < 0.5 ? randn([n], { seed: run }) : undefined);
      const outZp = int(0, 255);
      const y = (kernel: string) => {
        using _ = kernelPriority("quantizedLinear", [kernel]);
        return Array.from(quantizedLinear(x, layer, 0.3, outZp).intRepr().toFloat64());
      };
      const want = y("reference");
      const got = y("onednn-qlinear");
      if (got.length !== want.length || got.some((v, i) => v !== want[i]))
        failures.push(`run ${run}: ${m}x${k}x${n}, weight zero point ${wZp}`);
      layer.dispose();
    }
    expect(failures).toEqual([]);
  });

  itDnnl(
    "linear rounds ties to even before an odd zero point; k = 0 and a NaN bias as the reference",
    async () => {
      await ready(DNNL_BACKEND);
      if (vnniRefusal()) return; // logged by the conformance test
      // As the conv2d case: acc / 2 for every sum, a tie for every odd one, zero point 101.
      const x = quantizePerTensor(randn([16, 40], { seed: 7 }), 0.5, 3, "quint8");
      const w = quantizePerTensor(mul(randn([24, 40], { seed: 8 }), tensor(3)), 1, 0, "qint8");
      const y = (layer: PackedLinear, input: QTensor, kernel: string) => {
        using _ = kernelPriority("quantizedLinear", [kernel]);
        return Array.from(quantizedLinear(input, layer, 1, 101).intRepr().toFloat64());
      };
      const layer = linearPrepack(w);
      expect(y(layer, x, "onednn-qlinear")).toEqual(y(layer, x, "reference"));
      // No input features: every sum is 0, the bias alone decides.
      const x0 = quantizePerTensor(randn([3, 0]), 0.5, 3, "quint8");
      const w0 = quantizePerTensor(randn([5, 0]), 1, 0, "qint8");
      const empty = linearPrepack(w0, randn([5], { seed: 9 }));
      expect(y(empty, x0, "onednn-qlinear")).toEqual(y(empty, x0, "reference"));
      // A NaN in the bias: oneDNN's saturation and the reference's clamp differ there, so
      // the engine steps aside and says why.
      const nanBias = linearPrepack(
        w,
        tensor(Float32Array.from({ length: 24 }, (_, i) => (i === 3 ? Number.NaN : 0.5))),
      );
      const c = explain("quantizedLinear", x, nanBias, 1, 101).candidates.find(
        (k) => k.kernel === "onednn-qlinear",
      );
      expect(c?.reason).toMatch(/bias has a value that is not finite/);
      for (const l of [layer, empty, nanBias]) l.dispose();
    },
  );

  itDnnl(
    "runs while every sum fits int32, bit for bit; past it the reference serves, clamped",
    async () => {
      await ready(DNNL_BACKEND);
      if (vnniRefusal()) return; // logged by the conformance test
      // x zero point 128, w = -128 (zero point 0): |x - 128| x |w| <= 128 x 128 a term.
      // At the edge (131071 and 131067 terms) x = 255: sums of -16256 a term fit int32,
      // while oneDNN's raw sums of x w (-32640 a term) wrap before the zero point's
      // compensation. Past it (131072, 131076) x = 0: sums of 2^31 and more, which int32
      // wraps negative.
      const w = (shape: number[]) => uniformQ(-128, shape, "qint8", 1e-4, 0);
      const x = (v: number, shape: number[]) => uniformQ(v, shape, "quint8", 0.001, 128);
      type Make = (k: number, v: number) => [QTensor, PackedLinear | PackedConv2d];
      const layers: [string, number, number, Make][] = [
        ["onednn-qlinear", 131071, 131072, (k, v) => [x(v, [2, k]), linearPrepack(w([3, k]))]],
        // (c / groups) * kh * kw terms: 2 groups of 14563 or 14564 channels, 3x3 taps.
        [
          "onednn-qconv2d",
          131067,
          131076,
          (k, v) => [
            x(v, [1, (2 * k) / 9, 3, 3]),
            conv2dPrepack(w([4, k / 9, 3, 3]), undefined, { groups: 2 }),
          ],
        ],
      ];
      using _e = backends.quantized.flags({ engine: "onednn" as never });
      for (const [kernel, edge, past, make] of layers)
        for (const k of [edge, past]) {
          const fits = k === edge;
          // Mid-range at the edge (about -2130.6e6 x 1e-7 / 2 + 128 = 21), 255 past it.
          const [xq, layer] = make(k, fits ? 255 : 0);
          const r = againstReference(kernel, xq, layer, fits ? 2 : 1, 128);
          xq.dispose();
          layer.dispose();
          const tag = `${kernel}, ${k} terms`;
          expect([r.selected, r.ran], tag).toEqual(
            fits ? [kernel, kernel] : ["reference", "reference"],
          );
          if (!fits) expect(r.reason, tag).toMatch(`reach ${k * 128 * 128} in magnitude`);
          if (!fits) expect(r.reason, tag).toMatch("past int32's 2147483647");
          expect(r.got, tag).toEqual(r.want);
          expect(r.want[0], tag).toBe(fits ? 21 : 255);
        }
    },
  );

  itDnnl("conv2d refuses weights with a zero point other than 0, and says why", async () => {
    await ready(DNNL_BACKEND);
    const w = quantizePerTensor(randn([4, 2, 3, 3], { seed: 5 }), 0.02, 3, "qint8");
    const x = quantizePerTensor(randn([1, 2, 6, 6], { seed: 6 }), 0.02, 128, "quint8");
    const c = explain("quantizedConv2d", x, conv2dPrepack(w), 0.1, 128).candidates.find(
      (k) => k.kernel === "onednn-qconv2d",
    );
    expect(c?.reason).toMatch(/zero point is not 0|VNNI/);
  });

  itDnnl(
    "grouped conv2d with an activation zero point gives the reference's integers",
    async () => {
      await ready(DNNL_BACKEND);
      if (vnniRefusal()) return; // logged by the conformance test
      // oneDNN 2.6's GEMM convolution compensated the zero point wrongly on these grouped
      // layers (every output off by tens); without the zero point it was right.
      const specs: [number[], number[], number][] = [
        [[1, 2, 6, 6], [8, 1, 4, 2], 2],
        [[2, 4, 7, 9], [8, 1, 2, 4], 4],
        [[1, 3, 10, 19], [18, 1, 8, 8], 3],
      ];
      using _e = backends.quantized.flags({ engine: "onednn" as never });
      for (const [xs, ws, groups] of specs)
        for (const xZp of [128, 0]) {
          const w = quantizePerChannel(
            randn(ws, { seed: ws[2] }),
            Array.from({ length: ws[0] }, (_, i) => 0.01 + i * 0.003),
            Array(ws[0]).fill(0),
            0,
            "qint8",
          );
          const x = quantizePerTensor(randn(xs, { seed: xs[1] }), 0.03, xZp, "quint8");
          const layer = conv2dPrepack(w, randn([ws[0]], { seed: 2 }), { groups });
          const r = againstReference("onednn-qconv2d", x, layer, 0.2, 100);
          const tag = `x [${xs}] w [${ws}] groups ${groups}, x zero point ${xZp}`;
          expect(r.got, tag).toEqual(r.want);
          if (xZp === 0) expect(r.ran, tag).toBe("onednn-qconv2d");
          layer.dispose();
        }
    },
  );

  itDnnl("is a supported engine, and the engine setting decides what runs", async () => {
    await ready(DNNL_BACKEND);
    expect(backends.quantized.supportedEngines).toContain("onednn");
    const { x, packed } = layer();
    const selected = () => explain("quantizedLinear", x, packed, 0.05, 128);
    {
      using _ = backends.quantized.flags({ engine: "onednn" as never });
      expect(selected().selected).toBe(vnniRefusal() ? "reference" : "onednn-qlinear");
    }
    {
      using _ = backends.mkldnn.flags({ enabled: false });
      const c = selected().candidates.find((k) => k.kernel === "onednn-qlinear");
      expect(c?.reason).toBe("disabled by flag mkldnn.enabled = false");
    }
  });

  itDnnl(
    "is not offered while oneDNN is missing: setting it is a FlagError naming the others",
    async () => {
      configureDnnlSearch([]);
      restartInit(DNNL_BACKEND);
      const saved = process.env.BACKPLANE_DNNL_PATH;
      delete process.env.BACKPLANE_DNNL_PATH;
      try {
        await ready(DNNL_BACKEND).catch(() => {});
        expect(backends.quantized.supportedEngines).not.toContain("onednn");
        expect(() => {
          (backends.quantized as { engine: string }).engine = "onednn";
        }).toThrow(FlagError);
        expect(() => {
          (backends.quantized as { engine: string }).engine = "onednn";
        }).toThrow(/none/);
      } finally {
        if (saved !== undefined) process.env.BACKPLANE_DNNL_PATH = saved;
        configureDnnlSearch(undefined);
        restartInit(DNNL_BACKEND);
        await ready(DNNL_BACKEND);
      }
      expect(backends.quantized.supportedEngines).toContain("onednn");
    },
  );
});
