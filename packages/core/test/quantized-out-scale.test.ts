/**
 * The output scale of the requantizing ops, at the edges of float32. Every kernel
 * multiplies by fl(1 / fl(outScale)): an outScale of 1e-40 or 1e-50 made that infinite, so
 * a zero sum became NaN and was stored as 0 instead of the zero point (PyTorch: real 0
 * quantizes to the zero point); 1e300 made it 0 (every output the zero point). Such
 * scales are now ArgumentErrors, as PyTorch's qnnpack refuses them; the smallest scales
 * that remain still give the float64 answer.
 */
import {
  ArgumentError,
  conv2dPrepack,
  dequantize,
  linearPrepack,
  makeQuantized,
  quantizedAdd,
  quantizedConv2d,
  quantizedLinear,
  quantizedMatmul,
  quantizePerTensor,
  randn,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

/** quint8 [rows, k] of random integers, one row all at the zero point (a zero sum). */
function activations(rows: number, k: number, zeroPoint: number, seed: number) {
  const x = quantizePerTensor(randn([rows, k], { seed }), 0.05, zeroPoint, "quint8");
  const ints = x.intRepr();
  (ints.hostData() as Uint8Array).fill(zeroPoint, 0, k);
  return makeQuantized(ints, "quint8", { scale: 0.05, zeroPoint });
}

/** clamp(zp + rint(y / scale)) of the float64 linear layer on the dequantized operands. */
function expectedLinear(
  x: Float64Array,
  w: Float64Array,
  dims: { m: number; k: number; n: number },
  outScale: number,
  zp: number,
): number[] {
  const out: number[] = [];
  for (let i = 0; i < dims.m; i++)
    for (let c = 0; c < dims.n; c++) {
      let y = 0;
      for (let t = 0; t < dims.k; t++) y += x[i * dims.k + t] * w[c * dims.k + t];
      out.push(Math.min(255, Math.max(0, zp + Math.round(y / outScale))));
    }
  return out;
}

describe("quantized ops: outScale at float32's limits", () => {
  const x = activations(3, 8, 100, 1);
  const w = quantizePerTensor(randn([4, 8], { seed: 2 }), 0.02, 0, "qint8");

  it("refuses an outScale whose float32 reciprocal is infinite or 0, on every op", () => {
    const layer = linearPrepack(w);
    const xc = makeQuantized(x.intRepr().reshape([1, 3, 2, 4]), "quint8", {
      scale: 0.05,
      zeroPoint: 100,
    });
    const wc = quantizePerTensor(randn([2, 3, 1, 1], { seed: 3 }), 0.02, 0, "qint8");
    const conv = conv2dPrepack(wc);
    const xt = quantizePerTensor(randn([8, 2], { seed: 4 }), 0.05, 100, "quint8");
    const ops: [string, (s: number) => unknown][] = [
      ["quantizedLinear", (s) => quantizedLinear(x, layer, s, 7)],
      ["quantizedConv2d", (s) => quantizedConv2d(xc, conv, s, 7)],
      ["quantizedAdd", (s) => quantizedAdd(x, x, s, 7)],
      ["quantizedMatmul", (s) => quantizedMatmul(x, xt, s, 7)],
    ];
    for (const [name, run] of ops)
      for (const scale of [1e-50, 1e-40, 1e300]) {
        expect(() => run(scale), `${name} ${scale}`).toThrow(ArgumentError);
        expect(() => run(scale), `${name} ${scale}`).toThrow(/outside float32's range/);
      }
  });

  it("the smallest accepted scale still gives the zero point for a zero sum, as float64 does", () => {
    const layer = linearPrepack(w);
    const outScale = 1e-37;
    const y = quantizedLinear(x, layer, outScale, 7);
    const want = expectedLinear(
      dequantize(x).toFloat64(),
      dequantize(w).toFloat64(),
      { m: 3, k: 8, n: 4 },
      outScale,
      7,
    );
    expect(Array.from(y.intRepr().toFloat64())).toEqual(want);
    expect(want.slice(0, 4)).toEqual([7, 7, 7, 7]); // the zero row
    expect(new Set(want.slice(4)).size).toBeGreaterThan(1); // the others saturate both ways
    // A bias of 0 changes nothing; the biased layer runs through the same check.
    const biased = linearPrepack(w, tensor([0, 0, 0, 0]));
    expect(Array.from(quantizedLinear(x, biased, outScale, 7).intRepr().toFloat64())).toEqual(want);
  });
});
