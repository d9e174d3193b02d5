import { backends, type Conv2dOptions, Tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  forced,
  GEMMS,
  type KernelName,
  rand,
  reference,
  relError,
  rmsError,
  TOLERANCE,
  whenReady,
} from "./helpers.ts";

interface Case {
  name: string;
  x: number[];
  w: number[];
  opts?: Conv2dOptions & { withBias?: boolean };
  /** Kernels that must accept the case. */
  kernels: KernelName[];
}

const CASES: Case[] = [
  {
    name: "3x3, odd sizes, padding 1, bias, batch 2",
    x: [2, 5, 13, 11],
    w: [7, 5, 3, 3],
    opts: { padding: 1, withBias: true },
    kernels: ["auto", "wt8x8", "wt6x6", "ft8x8", "ft16x16", "implicit-gemm"],
  },
  {
    name: "3x3, no padding, output smaller than a tile",
    x: [1, 3, 6, 7],
    w: [2, 3, 3, 3],
    kernels: ["auto", "wt8x8", "wt6x6", "ft8x8", "ft16x16", "implicit-gemm"],
  },
  {
    name: "3x3, asymmetric padding, groups 3",
    x: [1, 6, 17, 9],
    w: [9, 2, 3, 3],
    opts: { padding: [2, 0], groups: 3, withBias: true },
    kernels: ["auto", "wt8x8", "wt6x6", "ft8x8", "implicit-gemm"],
  },
  {
    name: "5x5 'same' (FFT)",
    x: [1, 4, 19, 21],
    w: [5, 4, 5, 5],
    opts: { padding: "same", withBias: true },
    kernels: ["auto", "ft8x8", "ft16x16", "implicit-gemm"],
  },
  {
    name: "3x3 dilation 3 (FFT takes the dilated 7x7)",
    x: [1, 3, 16, 15],
    w: [4, 3, 3, 3],
    opts: { dilation: 3, padding: 2 },
    kernels: ["auto", "ft8x8", "ft16x16", "implicit-gemm"],
  },
  {
    name: "2x7 rectangular kernel",
    x: [1, 3, 12, 20],
    w: [5, 3, 2, 7],
    opts: { padding: [1, 3] },
    kernels: ["auto", "ft8x8", "ft16x16", "implicit-gemm"],
  },
  {
    name: "11x11 (16x16 FFT only)",
    x: [1, 2, 23, 18],
    w: [3, 2, 11, 11],
    opts: { padding: 4 },
    kernels: ["auto", "ft16x16", "implicit-gemm"],
  },
  {
    name: "7x7 stride 2 padding 3",
    x: [1, 3, 23, 20],
    w: [8, 3, 7, 7],
    opts: { stride: 2, padding: 3, withBias: true },
    kernels: ["auto", "implicit-gemm"],
  },
  {
    name: "3x3 stride [2, 1] dilation [1, 2] groups 2",
    x: [2, 4, 15, 14],
    w: [6, 2, 3, 3],
    opts: { stride: [2, 1], dilation: [1, 2], padding: 1, groups: 2 },
    kernels: ["auto", "implicit-gemm"],
  },
  {
    name: "1x1 pointwise, bias, batch 3",
    x: [3, 9, 7, 5],
    w: [11, 9, 1, 1],
    opts: { withBias: true },
    kernels: ["auto", "direct", "implicit-gemm"],
  },
  {
    name: "1x1 stride 2 (not direct)",
    x: [1, 8, 9, 9],
    w: [4, 8, 1, 1],
    opts: { stride: 2 },
    kernels: ["auto", "implicit-gemm"],
  },
  {
    name: "depthwise 3x3, odd width",
    x: [2, 6, 11, 13],
    w: [6, 1, 3, 3],
    opts: { groups: 6, padding: 1, withBias: true },
    kernels: ["auto", "direct", "wt8x8", "wt6x6", "implicit-gemm"],
  },
  {
    name: "depthwise 3x3 stride 2, multiplier 2",
    x: [1, 5, 14, 15],
    w: [10, 1, 3, 3],
    opts: { groups: 5, padding: 1, stride: 2 },
    kernels: ["auto", "direct", "implicit-gemm"],
  },
  {
    name: "depthwise 5x5 dilation 2 stride 3",
    x: [1, 3, 17, 19],
    w: [3, 1, 5, 5],
    opts: { groups: 3, padding: 3, dilation: 2, stride: 3, withBias: true },
    kernels: ["auto", "direct", "implicit-gemm"],
  },
];

describe("accuracy against the float64 reference", () => {
  for (const c of CASES) {
    it(c.name, async () => {
      await whenReady();
      const x = rand(c.x);
      const w = rand(c.w);
      const { withBias, ...rest } = c.opts ?? {};
      const opts: Conv2dOptions = { ...rest, bias: withBias ? rand([c.w[0]]) : undefined };
      const ref = reference(x, w, opts);
      for (const gemm of GEMMS) {
        using _ = backends.cpu.flags({ preferredBlasLibrary: gemm });
        for (const k of c.kernels) {
          const y = forced(k, x, w, opts);
          expect(y, `${k} should accept ${c.name}`).toBeInstanceOf(Tensor);
          const e = relError(y!.toFloat64(), ref);
          expect(e, `${k} (${gemm} GEMM): ${e}`).toBeLessThan(TOLERANCE[k]);
          y!.dispose();
        }
      }
      for (const t of [x, w, opts.bias]) t?.dispose();
    });
  }

  it("float64: auto, direct and implicit GEMM agree with the reference to 1e-12", async () => {
    await whenReady();
    const shapes: [number[], number[], Conv2dOptions][] = [
      [[2, 3, 9, 8], [4, 3, 3, 3], { padding: 1 }],
      [[1, 4, 10, 9], [8, 1, 3, 3], { groups: 4, stride: 2, padding: 1 }],
      [[1, 5, 6, 7], [3, 5, 1, 1], {}],
    ];
    for (const [xs, ws, opts] of shapes) {
      const x = rand(xs, "float64");
      const w = rand(ws, "float64");
      const ref = reference(x, w, opts);
      for (const k of ["auto", "direct", "implicit-gemm"]) {
        const y = forced(k, x, w, opts);
        if (!y) continue;
        expect(y.dtype).toBe("float64");
        expect(relError(y.toFloat64(), ref), k).toBeLessThan(1e-12);
        y.dispose();
      }
      x.dispose();
      w.dispose();
    }
  });

  it("Winograd F(4x4,3x3) is more accurate than F(6x6,3x3); FFT is as accurate as GEMM", async () => {
    await whenReady();
    const x = rand([1, 64, 20, 20]);
    const w = rand([32, 64, 3, 3]);
    const opts = { padding: 1 };
    const ref = reference(x, w, opts);
    const err: Record<string, number> = {};
    for (const k of ["wt8x8", "wt6x6", "ft8x8", "implicit-gemm"]) {
      const y = forced(k, x, w, opts)!;
      err[k] = rmsError(y.toFloat64(), ref);
      y.dispose();
    }
    expect(err.wt6x6).toBeLessThan(err.wt8x8);
    expect(err.wt8x8).toBeLessThan(2e-5);
    expect(err.ft8x8).toBeLessThan(2 * err["implicit-gemm"] + 1e-7);
    x.dispose();
    w.dispose();
  });
});
