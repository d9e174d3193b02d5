/**
 * conv2d on the CPU stand-in multiplies the zero padding by the kernel taps that fall on
 * it, as torch and the core's reference do: an infinite or NaN tap over the padding makes
 * NaN (0 * inf). The stand-in used to skip those taps and gave finite values there.
 */
import { conv2d, type DType, randn, type Tensor, withKernelPriority } from "@backplane/core";
import { beforeAll, describe, expect, it } from "vitest";
import { loadHelper } from "../src/index.ts";
import { standin } from "./helpers.ts";

const built = standin();
const d = built.path ? describe : describe.skip;

/** Elements of a tensor on any device, as float64. */
const values = (t: Tensor): Float64Array => (t.device === "cpu" ? t : t.to("cpu")).toFloat64();

/** A random weight with an infinity and a NaN on taps that reach the padding. */
function weightWithNonFiniteTaps(dtype: DType): Tensor {
  const w64 = randn([4, 3, 3, 3], { dtype: "float64", seed: 7 });
  const data = w64.hostData() as Float64Array;
  data[0] = Number.POSITIVE_INFINITY; // filter 0, channel 0, top-left tap
  data[2 * 27 + 9 + 8] = Number.NaN; // filter 2, channel 1, bottom-right tap
  data[3 * 27 + 3] = Number.NEGATIVE_INFINITY; // filter 3, channel 0, middle-left tap
  return w64.astype(dtype);
}

d("conv2d on the mps stand-in: padding taps are multiplied, as in the reference", () => {
  beforeAll(async () => {
    await loadHelper(built.path!);
  });

  const dtypes: DType[] = ["float32", "float16", "bfloat16"];
  const forms = [
    { stride: 1, padding: 1, dilation: 1 },
    { stride: 2, padding: 2, dilation: 2 },
  ];
  for (const dtype of dtypes)
    for (const opts of forms)
      it(`${dtype}, ${JSON.stringify(opts)}`, () => {
        const x = randn([2, 3, 6, 7], { dtype, seed: 3 });
        const w = weightWithNonFiniteTaps(dtype);
        const bias = randn([4], { dtype, seed: 5 });
        const want = values(
          withKernelPriority("conv2d", ["reference"], () => conv2d(x, w, { bias, ...opts })),
        );
        const got = values(conv2d(x.to("mps"), w.to("mps"), { bias: bias.to("mps"), ...opts }));
        expect(got.length).toBe(want.length);
        const nanAt = (a: Float64Array) => [...a.keys()].filter((i) => Number.isNaN(a[i]!));
        expect(nanAt(want).length).toBeGreaterThan(0);
        expect(nanAt(got)).toEqual(nanAt(want));
        for (let i = 0; i < want.length; i++) {
          if (Number.isNaN(want[i]!) || !Number.isFinite(want[i]!)) {
            expect(
              Object.is(got[i], want[i]) || (Number.isNaN(got[i]!) && Number.isNaN(want[i]!)),
            ).toBe(true);
            continue;
          }
          expect(Math.abs(got[i]! - want[i]!)).toBeLessThanOrEqual(
            1e-2 * Math.max(1, Math.abs(want[i]!)),
          );
        }
      });
});
