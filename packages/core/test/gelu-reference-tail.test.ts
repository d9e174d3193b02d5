/**
 * gelu's float64 reference in the negative tail, x in [-8, -1.5]: it computed
 * 0.5 x (1 + erf(x / sqrt 2)), and 1 + erf cancels there (2e-13 relative at x = -3.5, 5% at
 * x = -7.9; torch.nn.functional.gelu itself is 1.5e-3 off there). Now 0.5 x erfc(-x / sqrt 2).
 */
import { fromFloat64, gelu, withKernelPriority } from "@backplane/core";
import { describe, expect, it } from "vitest";

// torch.rand(24, generator=torch.Generator().manual_seed(11), dtype=torch.float64) * 6.5 - 8
const X = [
  -6.749830749514335, -2.245599593790976, -3.6349412146799365, -3.6795833011440084,
  -4.2496227342422, -6.994435087617543, -6.861841999905171, -7.109193148527725, -2.6698529227823355,
  -5.215818508575802, -1.713028602861133, -3.5054238479898236, -3.34772963284175,
  -5.062654342733371, -7.366955380708985, -7.86958891328975, -1.8221653435414087,
  -7.493563687436953, -2.0183884822507876, -5.371320169701452, -5.463721042484394,
  -2.6184755940771938, -2.8587108931219154, -2.150358283013838,
];
// torch 2.13, float64: 0.5 * x * torch.special.erfc(-x / math.sqrt(2)) (8e-15 relative of
// mpmath's value at 40 digits).
const WANT = [
  -4.995472730816494e-11, -0.02776646456113451, -0.0005053368493680584, -0.00042980360920851174,
  -4.5498767782805687e-5, -9.314134427158479e-12, -2.3322793002256093e-11, -4.149042504222356e-12,
  -0.010130019827938284, -4.772664254632979e-7, -0.07426602331768907, -0.0007990278819709563,
  -0.0013638057307871687, -1.0466002338645404e-6, -6.43020571441027e-13, -1.4000331656259847e-14,
  -0.06234529736873085, -2.5114036409804386e-13, -0.04395123470076661, -2.0991734358488497e-7,
  -1.2737464802032163e-7, -0.011563660785856808, -0.006079995782985284, -0.03389704966385206,
];

describe("reference gelu, negative tail", () => {
  it("is within 5e-14 relative of 0.5 x erfc(-x / sqrt 2)", () => {
    const x = fromFloat64(Float64Array.from(X), [X.length], "float64");
    const got = withKernelPriority("gelu", ["reference"], () => gelu(x)).toFloat64();
    got.forEach((g, i) => {
      const rel = Math.abs(g - WANT[i]) / Math.abs(WANT[i]);
      expect(rel, `x = ${X[i]}: ${g}, want ${WANT[i]}`).toBeLessThan(5e-14);
    });
  });
});
