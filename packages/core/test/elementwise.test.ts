/**
 * relu as torch defines it, clamp_min(x, 0): only x < 0 becomes 0, so -0 and NaN pass
 * through unchanged (torch.relu(tensor(-0.)) is -0. in every dtype). The reference gave +0.
 */
import { ArgumentError, fromFloat64, gelu, randn, relu, withKernelPriority } from "@backplane/core";
import { describe, expect, it } from "vitest";

/** -0 printed as such (String(-0) is "0"). */
const fmt = (v: number) => (Object.is(v, -0) ? "-0" : String(v));

describe("reference relu", () => {
  it("keeps -0 and NaN, zeroes negatives, in every dtype it takes", () => {
    const x = [-0, 0, -1.5, 2.5, Number.NaN, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
    // torch 2.13: relu of each value above (float32, float64, float16, bfloat16 alike).
    const want = [-0, 0, 0, 2.5, Number.NaN, 0, Number.POSITIVE_INFINITY];
    for (const dtype of ["float32", "float64", "float16", "bfloat16"] as const) {
      const t = fromFloat64(Float64Array.from(x), [x.length], dtype);
      const got = withKernelPriority("relu", ["reference"], () => relu(t)).toFloat64();
      // Object.is tells -0 from +0 and matches NaN with NaN: exact, as relu rounds nothing.
      got.forEach((g, i) => {
        expect(Object.is(g, want[i]), `${dtype}[${i}] = ${fmt(g)}`).toBe(true);
      });
    }
  });

  it("int32 is unchanged: negatives become 0", () => {
    const t = fromFloat64(Float64Array.from([-3, 0, 7, -(2 ** 31)]), [4], "int32");
    const got = withKernelPriority("relu", ["reference"], () => relu(t)).toFloat64();
    expect(Array.from(got)).toEqual([0, 0, 7, 0]);
  });
});

/**
 * gelu's reference in float64 against torch 2.13 on random x in [-3.54, -3.3], where
 * 1 + erf(x / sqrt 2) is small: the erf series there summed alternating terms as large as
 * e^(x^2/2) and lost up to 18 eps |x| (torch's own error is under 0.5 eps |x|).
 */
describe("reference gelu accuracy", () => {
  // torch.rand(24, generator=torch.Generator().manual_seed(7), dtype=torch.float64) * 0.24 - 3.54
  const X = [
    -3.472948696822463, -3.474313508723576, -3.33309768925977, -3.3823947766588316,
    -3.318592951811283, -3.338509109817027, -3.4692690940769078, -3.4054268166306825,
    -3.3568695813090867, -3.357754265468812, -3.524874931091142, -3.526186600016871,
    -3.4998142555684306, -3.5309679022601594, -3.5106744378299024, -3.3365895430719474,
    -3.5368308625061484, -3.312033012825601, -3.5136153874301406, -3.301531934650872,
    -3.3181939024092793, -3.332350976795816, -3.381526774514836, -3.466236100300197,
  ];
  // torch.nn.functional.gelu(X) (float64, approximate="none")
  const TORCH = [
    -0.0008938914042680149, -0.0008897061035493656, -0.0014313118250325026, -0.001215240324443896,
    -0.0015012021203169952, -0.0014060008994618086, -0.0009052649298637727, -0.001124824684795688,
    -0.0013231149647302657, -0.0013192353930900392, -0.0007467143967277704, -0.0007433021708441323,
    -0.0008147260572298166, -0.0007309844860522728, -0.0007845856078770187, -0.001414932560125423,
    -0.0007161355950652447, -0.0015338126813383706, -0.0007766010072162575, -0.0015873499417634325,
    -0.00150316780824028, -0.0014348366325951773, -0.001218773389601905, -0.0009147389818243871,
  ];

  it("is within 4 eps |x| of torch's float64 gelu", () => {
    const x = fromFloat64(Float64Array.from(X), [X.length], "float64");
    const got = withKernelPriority("gelu", ["reference"], () => gelu(x)).toFloat64();
    X.forEach((v, i) => {
      const err = Math.abs(got[i] - TORCH[i]) / (Number.EPSILON * Math.abs(v));
      expect(err, `gelu(${v}) = ${got[i]}, torch ${TORCH[i]}`).toBeLessThanOrEqual(4);
    });
  });
});

describe("gelu options", () => {
  it("approximate: null is refused (only a missing option takes the default)", () => {
    const x = randn([5], { seed: 3 });
    expect(() => gelu(x, { approximate: null as unknown as "none" })).toThrow(ArgumentError);
    expect(() => gelu(x, { approximate: null as unknown as "none" })).toThrow(
      /approximate must be "none" or "tanh", got null/,
    );
    // A missing option is still the exact form.
    const dflt = gelu(x, {}).toFloat64();
    const none = gelu(x, { approximate: "none" }).toFloat64();
    expect(Array.from(dflt)).toEqual(Array.from(none));
  });
});
