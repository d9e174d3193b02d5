/**
 * A NaN or infinity in a bfloat16 input stays where a direct convolution puts it. oneDNN
 * 2.6's bf16 kernels multiply inputs in pairs, one of them past the kernel's taps or
 * channels with a weight of 0: x [1, 1, 16, 16] with one inf pixel and a 3x3 kernel
 * (padding 1) gave NaN at the 27 outputs where torch has +-inf, and a NaN pixel made 36
 * outputs NaN where torch has 27. onednn-conv now leaves such inputs to the other kernels.
 */
import "../src/index.ts";
import {
  backends,
  type Conv2dOptions,
  conv2d,
  explain,
  kernelPriority,
  randn,
  type Tensor,
} from "@backplane/core";
import { describe, expect } from "vitest";
import { itDnnl } from "./dnnl-helpers.ts";

const bf16Native = () => {
  const f = backends.cpu.getCpuCapabilityInfo().features;
  return f.includes("avx512_bf16") || f.includes("amx_bf16");
};

/** The float64 reference of the same bfloat16 values. */
function reference(x: Tensor, w: Tensor, opts: Conv2dOptions): Float64Array {
  using _ = kernelPriority("conv2d", ["reference"]);
  return conv2d(x.astype("float64"), w.astype("float64"), opts).toFloat64();
}

/** Where y and ref differ: NaN against a number, another infinity, or past `tol` x max |ref|. */
function mismatches(y: Float64Array, ref: Float64Array, tol: number): number[] {
  const scale = Math.max(...ref.filter(Number.isFinite).map(Math.abs));
  const bad: number[] = [];
  for (let i = 0; i < ref.length; i++) {
    const same = Number.isFinite(ref[i])
      ? Math.abs(y[i] - ref[i]) <= tol * scale
      : Object.is(y[i], ref[i]);
    if (!same) bad.push(i);
  }
  return bad;
}

describe("onednn-conv, bfloat16 input holding NaN or infinity", () => {
  const cases: [string, number[], number[], Conv2dOptions, number][] = [
    ["one channel, 3x3, padding 1", [1, 1, 16, 16], [3, 1, 3, 3], { padding: 1 }, 130],
    // (a pixel that stride 2 skips: every output stays finite)
    ["one channel, 1x1, stride 2", [2, 1, 9, 12], [4, 1, 1, 1], { stride: 2 }, 77],
    ["seven channels, 1x2", [1, 7, 5, 40], [5, 7, 1, 2], {}, 92],
  ];

  itDnnl("NaN and +-inf land where the float64 reference puts them, the rest within bf16", () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])
      for (const [name, xs, ws, opts, at] of cases) {
        const x64 = randn(xs, { seed: at, dtype: "float64" });
        (x64.hostData() as Float64Array)[at] = value;
        const x = x64.astype("bfloat16");
        const w = randn(ws, { seed: 3, dtype: "bfloat16" });
        const ref = reference(x, w, opts);
        const y = conv2d(x, w, opts).toFloat64();
        expect(mismatches(y, ref, 2e-2), `${name}, ${value}`).toEqual([]);
        if (bf16Native())
          expect(
            explain("conv2d", x, w, opts).candidates.find((c) => c.kernel === "onednn-conv")
              ?.reason,
          ).toMatch(/bfloat16 input holds NaN or infinity/);
      }
  });

  itDnnl("a finite bfloat16 input still runs on onednn-conv", () => {
    if (!bf16Native()) return;
    const x = randn([1, 1, 16, 16], { seed: 1, dtype: "bfloat16" });
    const w = randn([3, 1, 3, 3], { seed: 3, dtype: "bfloat16" });
    expect(explain("conv2d", x, w, { padding: 1 }).selected).toBe("onednn-conv");
    const y = conv2d(x, w, { padding: 1 }).toFloat64();
    expect(mismatches(y, reference(x, w, { padding: 1 }), 2e-2)).toEqual([]);
  });
});
