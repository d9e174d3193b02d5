/**
 * The oneDNN plan caches (onednn-matmul's plans, the attention's matmul steps) own
 * primitives and memory objects in native memory: the plans their limit forgets, and the
 * objects made before oneDNN refused a plan part way, must be destroyed, or each new shape
 * leaks. Counted by wrapping the library's create and destroy functions, as
 * dnnl-conv-plans.test.ts does; results checked against a float64 product.
 */
import {
  backends,
  explain,
  kernelPriority,
  linearPrepack,
  matmul,
  quantizedLinear,
  quantizePerTensor,
  randn,
  type Tensor,
  withKernelPriority,
} from "@backplane/core";
import { expect } from "vitest";
import { matmulStep } from "../src/dnnl/matmul-step.ts";
import { ONEDNN_ENGINE } from "../src/dnnl/qlinear.ts";
import { countLive, itDnnl } from "./dnnl-helpers.ts";

/** The largest |c - a b| over the largest |a b|, the product in float64. */
function relErr(c: Tensor, a: Tensor, b: Tensor, m: number, k: number, n: number): number {
  const [x, y, z] = [a.toFloat64(), b.toFloat64(), c.toFloat64()];
  let err = 0;
  let scale = 1e-30;
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s += x[i * k + t] * y[t * n + j];
      err = Math.max(err, Math.abs(z[i * n + j] - s));
      scale = Math.max(scale, Math.abs(s));
    }
  return err / scale;
}

itDnnl("onednn-matmul frees the plans past its limit (no leak per shape)", () => {
  using _ = backends.openmp.numThreadsScope(2);
  // 100 new shapes: more than the 64 plans kept.
  const { live, result: worst } = countLive(() => {
    let worst = 0;
    for (let m = 1; m <= 100; m++) {
      const a = randn([m, 24], { seed: m });
      const b = randn([24, 7], { seed: 1000 + m });
      const c = withKernelPriority("matmul", ["onednn-matmul"], () => matmul(a, b));
      worst = Math.max(worst, relErr(c, a, b, m, 24, 7));
      for (const t of [a, b, c]) t.dispose();
    }
    return worst;
  });
  // float32 against float64, 24 products a sum.
  expect(worst).toBeLessThan(1e-5);
  // At most the 64 kept plans' objects (a primitive and four memories each); before the
  // fix every shape's stayed (500).
  expect(live).toBeLessThanOrEqual(64 * 5);
});

itDnnl("the attention's matmul steps past the cache limit are freed", () => {
  const { live, result: refused } = countLive(() => {
    let refused = 0;
    for (let m = 1; m <= 100; m++) {
      const step = matmulStep({ m, k: 16, n: 16, lda: 16, ws: [16, 1], ldc: 16 }, 1);
      if (typeof step === "string") refused++;
    }
    return refused;
  });
  expect(refused).toBe(0);
  // A primitive and three memories a step, 64 kept; before the fix 400 stayed.
  expect(live).toBeLessThanOrEqual(64 * 4);
});

itDnnl("a step oneDNN refuses destroys the memory objects made before the refusal", () => {
  // Sizes no other test makes, so the step is new here (the refusal is then cached).
  const { live, result: step } = countLive(
    () => matmulStep({ m: 3, k: 131, n: 5, lda: 131, ws: [5, 1], ldc: 5 }, 1),
    true,
  );
  expect(typeof step).toBe("string");
  // Before the fix the three memory objects made before the primitive stayed.
  expect(live).toBe(0);
});

itDnnl("onednn-qlinear frees its plans past the limit and keeps one weight copy a layout", () => {
  const w = quantizePerTensor(randn([32, 64], { seed: 5 }), 0.01, 0, "qint8");
  const layer = linearPrepack(w);
  const x1 = quantizePerTensor(randn([1, 64], { seed: 6 }), 0.02, 128, "quint8");
  const why = explain("quantizedLinear", x1, layer, 0.3, 7).candidates.find(
    (c) => c.kernel === "onednn-qlinear",
  )?.reason;
  if (why?.includes("VNNI")) return; // oneDNN's int8 kernels are not offered on this CPU
  const y = (x: ReturnType<typeof quantizePerTensor>, kernel: string) => {
    using _ = kernelPriority("quantizedLinear", [kernel]);
    return Array.from(quantizedLinear(x, layer, 0.3, 7).intRepr().toFloat64());
  };
  // 100 batch sizes: a plan each, more than the 64 kept.
  const { live, result: mismatches } = countLive(() => {
    let mismatches = 0;
    for (let m = 1; m <= 100; m++) {
      const x = quantizePerTensor(randn([m, 64], { seed: m }), 0.02, 128, "quint8");
      const want = y(x, "reference");
      if (y(x, "onednn-qlinear").some((v, i) => v !== want[i])) mismatches++;
      x.dispose();
    }
    return mismatches;
  });
  expect(mismatches).toBe(0);
  // Two primitives and six memory objects a plan at most, 64 kept (before: 100 plans').
  expect(live).toBeLessThanOrEqual(64 * 8);
  // The reordered weights are kept per layout, not per batch size (before: one for each m).
  const cache = layer.engineCache.get(ONEDNN_ENGINE) as { byPlan: Map<string, Tensor> } | undefined;
  expect(cache?.byPlan.size ?? 0).toBeLessThanOrEqual(4);
  layer.dispose();
});
