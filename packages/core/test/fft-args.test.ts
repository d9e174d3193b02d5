/**
 * fft, ifft, rfft, irfft on bad arguments: typed errors whose messages say what was wrong and
 * what to do. torch.fft raises on the same inputs (irfft of one bin: "Invalid number of data
 * points (0) specified"; a dim out of range: IndexError).
 */
import {
  ArgumentError,
  DTypeError,
  fft,
  ifft,
  irfft,
  randn,
  rfft,
  ShapeError,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

describe("fft ops: bad arguments", () => {
  it("irfft of one bin: n = 2 * (1 - 1) = 0 from the input, and the message says to pass n", () => {
    const x = randn([3, 1, 2], { dtype: "float64", seed: 1 });
    // It said "got 0 (from the input length 1)" with no way out; an explicit n works.
    expect(() => irfft(x)).toThrow(ArgumentError);
    expect(() => irfft(x)).toThrow(/got 0 \(2 \* \(1 - 1\) from the input length 1\); pass n/);
    expect(irfft(x, { n: 1 }).shape).toEqual([3, 1]);
  });

  it("an empty signal dimension says to pass n (zero padding)", () => {
    const x = randn([0, 2], { dtype: "float64", seed: 2 });
    expect(() => fft(x)).toThrow(/got 0 \(the input length 0\); pass n/);
    expect(() => ifft(x)).toThrow(ArgumentError);
    expect(fft(x, { n: 4 }).shape).toEqual([4, 2]);
  });

  it("a dim out of range on complex input says the (re, im) dim does not count", () => {
    // x has rank 3 but signal rank 2: "out of range for a tensor of rank 2" alone misled.
    const x = randn([4, 5, 2], { dtype: "float64", seed: 3 });
    for (const op of [fft, ifft, irfft]) {
      expect(() => op(x, { dim: 2 })).toThrow(ShapeError);
      expect(() => op(x, { dim: 2 })).toThrow(/not counting the trailing \(re, im\) dim/);
    }
    // Real input (rfft) has no such dim to mention.
    expect(() => rfft(randn([4, 5], { dtype: "float64", seed: 4 }), { dim: 2 })).toThrow(
      /rfft: dim: dimension 2 is out of range/,
    );
  });

  it("an explicit bad n or norm is named as given", () => {
    const x = randn([6, 2], { dtype: "float64", seed: 5 });
    for (const n of [0, -3, 2.5, Number.NaN, "4"]) {
      expect(() => fft(x, { n: n as number })).toThrow(ArgumentError);
      expect(() => fft(x, { n: n as number })).toThrow(/fft: n must be a positive integer, got/);
    }
    expect(() => rfft(randn([6], { seed: 6 }), { norm: "unitary" as "ortho" })).toThrow(
      /norm must be "backward", "ortho" or "forward"/,
    );
  });

  it("integer and bool input name the cast that gives torch's result (it promotes to float32)", () => {
    // It said only "expected a floating dtype", not what to do.
    const real = [3, -1, 4, 1, -5];
    for (const dtype of ["int32", "int64", "int8", "uint8", "bool"] as const) {
      const r = tensor(dtype === "bool" ? [1, 0, 1] : dtype === "uint8" ? [3, 1, 4] : real, {
        dtype,
      });
      const c = tensor(
        [
          [1, 0],
          [0, 1],
          [1, 1],
        ],
        { dtype },
      );
      for (const [op, x] of [
        [rfft, r],
        [fft, c],
        [ifft, c],
        [irfft, c],
      ] as const) {
        expect(() => op(x), `${op.name} ${dtype}`).toThrow(DTypeError);
        expect(() => op(x), `${op.name} ${dtype}`).toThrow(
          new RegExp(`has dtype ${dtype}; .*x\\.astype\\("float32"\\)`),
        );
      }
    }
    // The cast gives torch's numbers: torch.fft.rfft(torch.tensor([3, -1, 4, 1, -5], dtype=torch.int32)).
    const torch = [
      2, 0, -2.8991870880126953, -5.567582130432129, 9.399187088012695, 0.5020287036895752,
    ];
    const got = rfft(tensor(real, { dtype: "int32" }).astype("float32"));
    expect(got.dtype).toBe("float32");
    const values = got.toFloat64();
    for (let i = 0; i < torch.length; i++) expect(values[i]).toBeCloseTo(torch[i]!, 5);
  });
});
