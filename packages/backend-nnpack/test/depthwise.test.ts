/**
 * Depthwise convolution with one output channel per input channel (dw_c4_f32: four
 * channels in the lanes of a vector) against the float64 reference, on random shapes that
 * reach every edge of it: channel counts that leave a group of 1-3 channels, planes of
 * width and height 1 and primes, every kernel size up to 5 (3x3 has its own loop), stride
 * 1-3, dilation 1-2, padding wider than the kernel reaches, bias or none, batches, and
 * inputs that are views (a transposed plane).
 */
import type { Conv2dOptions, Tensor } from "@backplane/core";
import { conv2d, explain, withKernelPriority } from "@backplane/core";
import { ops } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { depthwiseWorkBytes } from "../src/algorithms/depthwise.ts";
import { conv } from "../src/wasm.ts";
import { forced, rand, reference, relError, TOLERANCE, whenReady } from "./helpers.ts";

let state = 12345;
const pick = (n: number) => {
  state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff;
  return state % n;
};
const oneOf = <T>(xs: readonly T[]): T => xs[pick(xs.length)];

describe("depthwise, four channels per vector", () => {
  it("matches the float64 reference on 120 random shapes", async () => {
    await whenReady();
    let ran = 0;
    for (let i = 0; i < 120; i++) {
      const c = oneOf([1, 2, 3, 4, 5, 7, 8, 9, 13, 16]);
      const kh = oneOf([1, 2, 3, 3, 3, 5]);
      const kw = i % 4 === 0 ? oneOf([1, 2, 3, 5]) : kh;
      const dilation = oneOf([1, 1, 1, 2]);
      const stride = oneOf([1, 1, 2, 2, 3]);
      const padding = oneOf([0, 1, 1, 2, 4]);
      const h = oneOf([1, 2, 3, 5, 7, 11, 14, 17]);
      const w = oneOf([1, 2, 3, 5, 7, 11, 14, 17, 29]);
      const n = oneOf([1, 1, 2]);
      if ((kh - 1) * dilation + 1 > h + 2 * padding || (kw - 1) * dilation + 1 > w + 2 * padding)
        continue; // no output
      const view = i % 5 === 0;
      // A view: the plane stored transposed, so the kernel gets non-unit strides.
      const base = view ? rand([n, c, w, h]) : rand([n, c, h, w]);
      const x: Tensor = view ? base.transpose(2, 3) : base;
      const weight = rand([c, 1, kh, kw]);
      const bias = i % 3 === 0 ? rand([c]) : undefined;
      const opts: Conv2dOptions = { groups: c, stride, padding, dilation, bias };
      const ref = reference(x, weight, opts);
      const y = forced("direct", x, weight, opts);
      const what = `c ${c} ${h}x${w} k ${kh}x${kw} s ${stride} d ${dilation} p ${padding} n ${n}${view ? " view" : ""}`;
      expect(y, `direct should accept ${what}`).toBeDefined();
      const e = relError((y as Tensor).toFloat64(), ref);
      expect(e, `${what}: ${e}`).toBeLessThan(TOLERANCE.direct);
      ran++;
      y?.dispose();
      for (const t of [base, weight, bias]) t?.dispose();
    }
    expect(ran).toBeGreaterThan(90);
  });

  it("MobileNet's layers, with and without bias", async () => {
    await whenReady();
    const layers: [number, number, number][] = [
      [32, 112, 1],
      [144, 56, 2],
      [576, 14, 1],
    ];
    for (const [c, hw, stride] of layers) {
      const x = rand([1, c, hw, hw]);
      const weight = rand([c, 1, 3, 3]);
      const bias = rand([c]);
      for (const b of [undefined, bias]) {
        const opts: Conv2dOptions = { groups: c, stride, padding: 1, bias: b };
        const y = forced("direct", x, weight, opts) as Tensor;
        expect(relError(y.toFloat64(), reference(x, weight, opts))).toBeLessThan(TOLERANCE.direct);
        y.dispose();
      }
      for (const t of [x, weight, bias]) t.dispose();
    }
  });

  // The padded plane spans every row and column the taps reach: padding and dilation 7000
  // around a 3x3 input make 3.1 GB of it for nine outputs, past the WASM's i32 sizes, and
  // direct wrote out of bounds ("memory access out of bounds" through auto).
  it("huge padding and dilation: refused by direct, auto matches the reference", async () => {
    await whenReady();
    for (const multiplier of [1, 2]) {
      const x = rand([1, 1, 3, 3]);
      const weight = rand([multiplier, 1, 3, 3]);
      const bias = rand([multiplier]);
      const opts: Conv2dOptions = { padding: 7000, dilation: 7000, bias };
      const y = withKernelPriority("conv2d", ["auto"], () => conv2d(x, weight, opts));
      expect(relError(y.toFloat64(), reference(x, weight, opts))).toBeLessThan(TOLERANCE.direct);
      const refused = explain("conv2d", x, weight, opts).candidates.find(
        (c) => c.backend === "nnpack" && c.kernel === "direct",
      );
      expect(refused?.accepted).toBe(false);
      expect(refused?.reason).toMatch(/scratch per thread/);
      for (const t of [x, weight, bias, y]) t.dispose();
    }
  });

  it("the scratch estimate is what the WASM kernels ask for", async () => {
    await whenReady();
    for (const [c, o, size, k, stride, dilation, padding] of [
      [4, 4, 14, 3, 1, 1, 1],
      [5, 5, 17, 5, 2, 2, 4],
      [3, 6, 11, 3, 3, 1, 2],
      [2, 4, 9, 2, 1, 3, 0],
    ]) {
      const x = rand([1, c, size, size + 2]);
      const weight = rand([o, 1, k, k]);
      const opts: Conv2dOptions = { groups: c, stride, dilation, padding };
      const p = ops.conv2d.prepare(x, weight, opts);
      const geometry = [p.kh, p.kw, p.strideH, p.strideW, p.dilationH, p.dilationW] as const;
      const m = conv();
      const wasm =
        o === c
          ? m.dw_c4_work_bytes(p.outH, p.outW, ...geometry)
          : m.dw_work_bytes(p.outH, p.outW, ...geometry);
      expect(depthwiseWorkBytes(p)).toBe(wasm);
      x.dispose();
      weight.dispose();
    }
  });
});
