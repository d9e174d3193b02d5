/**
 * gelu's reference in the negative tail, both forms, against mpmath at 40 digits (torch
 * 2.13 is no yardstick there: its float64 and float32 gelu give -0 for every x below).
 * - "tanh" computed 0.5 x (1 + tanh(u)); 1 + tanh cancelled: 0.7% off at x = -7 and 0 from
 *   x = -6.5 on, in float32 too (gelu(-6.86) is -1.17e-14, far above float32's smallest).
 * - "none" took erfc of x / sqrt 2 rounded, and erfc multiplies that rounding by 2 z^2:
 *   1e-13 relative near x = -30 (and exp(-z^2) lost z^2 eps more).
 */
import { fromFloat64, gelu, withKernelPriority } from "@backplane/core";
import { describe, expect, it } from "vitest";

const reference = (xs: number[], dtype: "float32" | "float64", approximate: "none" | "tanh") =>
  withKernelPriority("gelu", ["reference"], () =>
    gelu(fromFloat64(Float64Array.from(xs), [xs.length], dtype), { approximate }),
  ).toFloat64();

// torch.rand(12, generator=torch.Generator().manual_seed(5), dtype=torch.float64) * 20 - 25
const X_TANH = [
  -12.159699867438118, -19.804841696473694, -17.783447611456914, -18.697347837018988,
  -19.677657224454556, -7.971426041253981, -13.414045771236012, -10.599074491138474,
  -8.051681606093098, -15.938569943602692, -17.837623124514778, -18.48555737044529,
];
// mpmath: x / (1 + exp(-2 sqrt(2 / pi) (x + 0.044715 x^3))), 40 digits
const WANT_TANH = [
  -8.756349317860925e-64, -7.015393786714567e-254, -4.3883776065676766e-186,
  -5.711035703310465e-215, -3.4626652472096497e-249, -4.787455868022861e-21,
  -1.0806762227377373e-83, -6.039769111707591e-44, -1.4123411160115085e-21, -4.807603822992757e-136,
  -1.0195602376929261e-187, -5.059974483369605e-208,
];
// The same generator's next 12, * 22 - 37
const X_ERF = [
  -19.37160618978073, -32.19073352041376, -34.55700090417058, -29.760225061700584,
  -29.226714792204902, -28.822521536890225, -20.332053412982784, -25.827689730171244,
  -22.590040158670348, -28.25365623437094, -36.1928243379656, -29.33001700201342,
];
// mpmath: x / 2 erfc(-x / sqrt 2), 40 digits
const WANT_ERF = [
  -1.2980051751007008e-82, -3.829244346511605e-226, -1.9332340138331555e-260,
  -1.9028649809240714e-193, -1.2973097705679632e-186, -1.6142803898714883e-181,
  -6.805304511302874e-91, -5.5969014269119075e-146, -6.133003589562536e-112,
  -1.813164264787915e-174, -1.428727570197158e-285, -6.302530293112721e-188,
];
// The next 10 of torch.rand (float32) * 6 - 12, and mpmath's gelu (tanh) rounded to float32
const X_F32 = [
  -6.861785888671875, -9.755144119262695, -6.563642978668213, -9.256674766540527,
  -9.618654251098633, -7.402707099914551, -7.786184310913086, -7.091755390167236,
];
const WANT_F32 = [
  -1.1722722537696809e-14, -2.8883902231322805e-35, -3.202786614479175e-13, -9.371115255998248e-31,
  -5.4933670363657546e-34, -1.4716027825157318e-17, -7.367969134648311e-20, -7.642163125397609e-16,
];

function expectRelative(got: Float64Array, xs: number[], want: number[], tol: number): void {
  got.forEach((g, i) => {
    const rel = Math.abs(g - want[i]) / Math.abs(want[i]);
    expect(rel, `gelu(${xs[i]}) = ${g}, want ${want[i]}`).toBeLessThan(tol);
  });
}

describe("reference gelu, far negative tail", () => {
  it('approximate "tanh": float64 within 1e-12 relative (the exp argument rounds)', () => {
    expectRelative(reference(X_TANH, "float64", "tanh"), X_TANH, WANT_TANH, 1e-12);
  });
  it('approximate "tanh": float32 within 1 ulp of the float32 rounding', () => {
    expectRelative(reference(X_F32, "float32", "tanh"), X_F32, WANT_F32, 2 ** -23);
  });
  it('approximate "none": float64 within 1e-14 relative', () => {
    expectRelative(reference(X_ERF, "float64", "none"), X_ERF, WANT_ERF, 1e-14);
  });
});
