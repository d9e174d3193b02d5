/**
 * onednn-winograd on finite float32 input of large magnitude: its transforms scale a tile
 * up before the products, so at |x| near 1e18 and |w| near 1e18 they overflowed float32 and
 * gave +-inf at outputs whose true values (and torch's, and onednn-conv's) are below 1e38
 * (x [2, 16, 21, 6] * w [16, 16, 3, 3]: 27 outputs infinite). Such a call now runs again on
 * oneDNN's direct plan, as nnpack's Winograd and FFT kernels do.
 */
import "../src/index.ts";
import {
  type Conv2dOptions,
  conv2d,
  explain,
  kernelPriority,
  randn,
  type Tensor,
  useDeterministicAlgorithms,
} from "@backplane/core";
import { describe, expect } from "vitest";
import { itDnnl } from "./dnnl-helpers.ts";

/** The float64 reference of the same float32 values. */
function reference(x: Tensor, w: Tensor, opts: Conv2dOptions): Float64Array {
  using _ = kernelPriority("conv2d", ["reference"]);
  const y = conv2d(x.astype("float64"), w.astype("float64"), opts);
  const out = y.toFloat64();
  y.dispose();
  return out;
}

/** Random normal values times `scale`, float32. */
function scaled(shape: number[], scale: number, seed: number): Tensor {
  const t = randn(shape, { seed });
  const d = t.hostData() as Float32Array;
  for (let i = 0; i < d.length; i++) d[i] *= scale;
  return t;
}

describe("onednn-winograd near float32's range", () => {
  itDnnl("gives finite outputs where the true ones fit float32, within 1e-5 of them", () => {
    // Winograd wherever it applies, without timing it against the direct plan.
    useDeterministicAlgorithms(true);
    try {
      for (const [xs, ws, opts] of [
        [[2, 16, 21, 6], [16, 16, 3, 3], {}],
        [[2, 32, 11, 15], [32, 32, 3, 3], { padding: 1 }],
        // A 5x5 kernel cut into 3x3 blocks.
        [[1, 16, 13, 13], [16, 16, 5, 5], { padding: 2 }],
      ] as [number[], number[], Conv2dOptions][]) {
        const k = ws[1] * ws[2] * ws[3];
        // |x w| near 3e37 / sqrt(k): sums far below float32's 3.4e38.
        const x = scaled(xs, 1e18, xs[1]);
        const w = scaled(ws, 10 ** (37.5 - 18) / Math.sqrt(k), ws[0] + 1);
        using _ = kernelPriority("conv2d", ["onednn-winograd"]);
        const e = explain("conv2d", x, w, opts);
        const row = e.candidates.find((c) => c.kernel === "onednn-winograd");
        // oneDNN 2.6 has Winograd kernels on AVX-512 only: elsewhere there is nothing to test.
        if (/oneDNN refused this convolution/.test(row?.reason ?? "")) return;
        expect(e.selected, row?.reason).toBe("onednn-winograd");
        const y = conv2d(x, w, opts);
        const got = y.toFloat64();
        const ref = reference(x, w, opts);
        const scale = Math.max(...ref.map(Math.abs));
        expect(scale).toBeLessThan(3e38);
        const bad = got.filter((v, i) => !(Math.abs(v - ref[i]) <= 1e-5 * scale)).length;
        expect(bad, `${xs} * ${ws}`).toBe(0);
        for (const t of [x, w, y]) t.dispose();
      }
    } finally {
      useDeterministicAlgorithms(false);
    }
  });
});
