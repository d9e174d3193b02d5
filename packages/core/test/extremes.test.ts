/**
 * References you can trust at the extremes, and bounds checked before any kernel
 * (issue 21: softmax at 3e38 summed to 2; conv2d with 2^15 dilation and padding trapped).
 */

import {
  ArgumentError,
  BackplaneError,
  conv2d,
  empty,
  full,
  logSoftmax,
  randn,
  ShapeError,
  scaledDotProductAttention,
  softmax,
  tensor,
  withKernelPriority,
  zeros,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

const flat = (t: { toArray(): unknown }) => (t.toArray() as number[]).flat(9) as number[];

describe("softmax reference at extreme magnitudes", () => {
  for (const dtype of ["float32", "float64", "bfloat16"] as const) {
    it(`[3e38, 3e38, 0] in ${dtype} is [0.5, 0.5, 0] and sums to 1`, () => {
      const x = tensor([3e38, 3e38, 0], { dtype });
      withKernelPriority("softmax", ["reference"], () => {
        expect(flat(softmax(x, -1))).toEqual([0.5, 0.5, 0]);
        const ls = flat(logSoftmax(x, -1));
        expect(ls[0]).toBeCloseTo(-Math.LN2, 2);
        expect(ls[1]).toBeCloseTo(-Math.LN2, 2);
      });
    });
  }

  it("closed forms: ±1e20, -Infinity, denormals, one element, empty", () => {
    withKernelPriority("softmax", ["reference"], () => {
      expect(flat(softmax(tensor([1e20, -1e20], { dtype: "float64" }), -1))).toEqual([1, 0]);
      expect(
        flat(softmax(tensor([0, Number.NEGATIVE_INFINITY], { dtype: "float64" }), -1)),
      ).toEqual([1, 0]);
      expect(flat(softmax(tensor([5e-324, 0], { dtype: "float64" }), -1))).toEqual([0.5, 0.5]);
      expect(flat(softmax(tensor([7], { dtype: "float64" }), -1))).toEqual([1]);
      expect(flat(logSoftmax(tensor([7], { dtype: "float64" }), -1))).toEqual([0]);
      expect(softmax(tensor([], { shape: [0], dtype: "float64" }), -1).shape).toEqual([0]);
      // torch: a row with +Infinity gives NaN (inf - inf).
      expect(
        Number.isNaN(
          flat(softmax(tensor([Number.POSITIVE_INFINITY, 0], { dtype: "float64" }), -1))[0],
        ),
      ).toBe(true);
    });
  });
});

describe("conv2d bounds before any kernel", () => {
  const x = randn([1, 1, 8, 8], { seed: 1 });
  const w = randn([1, 1, 3, 3], { seed: 2 });
  it("dilation and padding whose index arithmetic overflows 32 bits are a typed error naming the limit", () => {
    expect(() => conv2d(x, w, { dilation: 2 ** 15, padding: 2 ** 15 })).toThrow(ShapeError);
    expect(() => conv2d(x, w, { dilation: 2 ** 15, padding: 2 ** 15 })).toThrow(/2\^31 - 1/);
    expect(() => conv2d(x, w, { dilation: 2 ** 30, padding: 2 ** 30 })).toThrow(ShapeError);
    expect(() => conv2d(x, w, { stride: 2 ** 31 })).toThrow(ArgumentError);
    expect(() => conv2d(x, w, { padding: [1, 2 ** 40] })).toThrow(ArgumentError);
  });

  it("the largest dilation and padding that fit give the centre tap times the input", () => {
    const y = flat(conv2d(x, w, { dilation: 4096, padding: 4096 }));
    const centre = flat(w)[4];
    const want = flat(x).map((v) => v * centre);
    for (let i = 0; i < want.length; i++) expect(y[i]).toBeCloseTo(want[i], 5);
  });
});

describe("attention masks must broadcast to the scores, not grow them", () => {
  it("a [2, 1, 1, L, S] mask for a 4-D query is a ShapeError; [L, S] and [1, H, L, S] pass", () => {
    const q = randn([1, 2, 3, 4], { seed: 7 });
    const bad = tensor(new Array(2 * 3 * 5).fill(true), { shape: [2, 1, 1, 3, 5], dtype: "bool" });
    const k = randn([1, 2, 5, 4], { seed: 8 });
    expect(() => scaledDotProductAttention(q, k, k, { attnMask: bad })).toThrow(ShapeError);
    expect(() => scaledDotProductAttention(q, k, k, { attnMask: bad })).toThrow(
      /may not have more dims/,
    );
    const grow = tensor(new Array(3 * 3 * 5).fill(true), { shape: [3, 1, 3, 5], dtype: "bool" });
    expect(() => scaledDotProductAttention(q, k, k, { attnMask: grow })).toThrow(ShapeError);
    const ok = tensor(new Array(15).fill(true), { shape: [3, 5], dtype: "bool" });
    expect(scaledDotProductAttention(q, k, k, { attnMask: ok }).shape).toEqual([1, 2, 3, 4]);
  });
});

describe("creation functions: bad input is a typed error, never a TypeError or RangeError", () => {
  it("empty(5), randn(NaN), zeros(null), an int64 tensor from NaN or Infinity, full with a string, null options", () => {
    const calls: [string, () => unknown][] = [
      ["empty(5)", () => empty(5 as never)],
      ["randn(NaN)", () => randn(Number.NaN as never)],
      ["zeros(null)", () => zeros(null as never)],
      ["int64 from NaN", () => tensor([Number.NaN], { dtype: "int64" })],
      ["int64 from Infinity", () => tensor([Number.POSITIVE_INFINITY], { dtype: "int64" })],
      ["full([2], 'x')", () => full([2], "x" as never)],
      ["empty([2], null)", () => empty([2], null as never)],
      ["randn([2], { seed: 1.5 })", () => randn([2], { seed: 1.5 })],
    ];
    for (const [name, call] of calls) expect(call, name).toThrow(BackplaneError);
    expect(() => tensor([Number.NaN], { dtype: "int64" })).toThrow(/int64 has no value for NaN/);
  });
});
