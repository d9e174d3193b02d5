/**
 * Reductions up to the size limits run instead of aborting the engine, and a 0-d softmax
 * has one answer. softmax(empty([2, 1.2e8]), 0) killed the process (V8 "invalid size
 * error", SIGTRAP): the reference built a JS array of 1.2e8 row positions. The same table
 * sat in every broadcasting binary op.
 */
import { add, empty, logSoftmax, softmax, tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";

describe("reductions and broadcasts past 2^27 rows", () => {
  it("softmax and logSoftmax over dim 0 of [2, 1.2e8]", () => {
    const x = empty([2, 120_000_000]);
    const d = x.hostData() as Float32Array;
    d[0] = 1; // column 0: [1, 0] -> softmax [e/(e+1), 1/(e+1)]
    d[120_000_000] = 0;
    d[1] = 0;
    d[120_000_001] = 0;
    const y = softmax(x, 0);
    const yd = y.hostData() as Float32Array;
    expect(yd[0]).toBeCloseTo(Math.E / (Math.E + 1), 6);
    expect(yd[120_000_000]).toBeCloseTo(1 / (Math.E + 1), 6);
    expect(yd[1]).toBeCloseTo(0.5, 6);
    y.dispose();
    const l = logSoftmax(x, 0);
    expect((l.hostData() as Float32Array)[1]).toBeCloseTo(Math.log(0.5), 6);
    l.dispose();
    x.dispose();
  }, 120_000);

  it("a broadcasting add with 1.5e8 outputs", () => {
    const a = empty([150_000_000]);
    (a.hostData() as Float32Array).fill(2);
    const b = tensor([3]);
    const y = add(a, b);
    const yd = y.hostData() as Float32Array;
    expect([yd[0], yd[149_999_999]]).toEqual([5, 5]);
    for (const t of [a, y]) t.dispose();
  }, 120_000);
});

describe("0-d softmax", () => {
  it("is 1 (log 0) for a finite value and NaN for ±Infinity and NaN, as in PyTorch 2.13", () => {
    for (const [v, want, wantLog] of [
      [3, 1, 0],
      [Number.NEGATIVE_INFINITY, Number.NaN, Number.NaN],
      [Number.POSITIVE_INFINITY, Number.NaN, Number.NaN],
      [Number.NaN, Number.NaN, Number.NaN],
    ]) {
      expect(softmax(tensor(v!), -1).toArray()).toEqual(want);
      expect(logSoftmax(tensor(v!), -1).toArray()).toEqual(wantLog);
    }
  });
});

describe("batch offsets past 2^31 elements", () => {
  it("stay exact (a GPU tensor of 4 GiB of float16 has them; an Int32Array wrapped them)", async () => {
    const { batchOffsets } = await import("@backplane/core/backend");
    const [off] = batchOffsets([3, 2], [[2 ** 31, 3 * 2 ** 30]]);
    expect(Array.from(off!)).toEqual([
      0,
      3 * 2 ** 30,
      2 ** 31,
      2 ** 31 + 3 * 2 ** 30,
      2 ** 32,
      2 ** 32 + 3 * 2 ** 30,
    ]);
  });
});
