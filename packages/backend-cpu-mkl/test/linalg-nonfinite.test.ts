/**
 * NaN and infinity into linear algebra: one answer from every kernel, a LinalgError, at
 * once (shown here on the iterative factorizations, eigh and svd, and on inv and solve). LAPACK's gesdd looped at 100% CPU on an 8 x 13 matrix
 * holding one infinity (150 s on Node before it was killed); square and tall inputs came
 * back as NaN while the WASM and reference kernels raised the error.
 */
import {
  eigh,
  LinalgError,
  randn,
  ready,
  svd,
  type Tensor,
  withKernelPriority,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import { NATIVE_BACKEND, WASM_BACKEND } from "../src/index.ts";

function withValue(shape: number[], dtype: "float32" | "float64", at: number, v: number): Tensor {
  const t = randn(shape, { seed: 5, dtype });
  t.hostData()[at] = v;
  return t;
}

const KERNELS = {
  svd: ["lapack-svd", "wasm-svd", "reference"],
  eigh: ["lapack-eigh", "wasm-eigh", "reference"],
};

describe("eigh and svd on non-finite input", () => {
  it("every kernel raises LinalgError at once, for NaN, Infinity and -Infinity, wide, square and tall", async () => {
    await ready(WASM_BACKEND);
    await ready(NATIVE_BACKEND);
    let checked = 0;
    for (const dtype of ["float64", "float32"] as const) {
      for (const v of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN]) {
        for (const shape of [
          [8, 13],
          [9, 9],
          [13, 8],
        ]) {
          for (const kernel of KERNELS.svd) {
            const a = withValue(shape, dtype, 17, v);
            const t0 = performance.now();
            expect(
              () => withKernelPriority("svd", [kernel], () => svd(a)),
              `${kernel} ${shape}`,
            ).toThrow(LinalgError);
            // At once means not looping (gesdd ran for 150 s): 10 s leaves room for a
            // loaded machine, where a call of microseconds can wait long for a core.
            expect(performance.now() - t0, `${kernel} ${shape}`).toBeLessThan(10_000);
            checked++;
          }
        }
        for (const kernel of KERNELS.eigh) {
          const a = withValue([9, 9], dtype, 40, v);
          expect(() => withKernelPriority("eigh", [kernel], () => eigh(a)), kernel).toThrow(
            /eigh: A contains NaN or infinity/,
          );
          checked++;
        }
      }
    }
    expect(checked).toBe(2 * 3 * (3 * 3 + 3));
  });

  it("the direct factorizations too: inv, solve (A or B), cholesky, luFactor, qr", async () => {
    const { cholesky, inv, luFactor, qr, solve } = await import("@backplane/core");
    const a = withValue([13, 13], "float32", 40, Number.NaN);
    const b = withValue([13, 2], "float32", 3, Number.POSITIVE_INFINITY);
    const ok = randn([13, 13], { seed: 9 });
    for (const f of [
      () => inv(a),
      () => solve(a, ok),
      () => solve(ok, b),
      () => cholesky(a),
      () => luFactor(a),
      () => qr(a),
    ])
      expect(f).toThrow(/contains NaN or infinity/);
  });

  it("a batch with one bad matrix, and a transposed view, are caught too", () => {
    const batch = withValue([3, 4, 4], "float64", 2 * 16 + 5, Number.NaN);
    expect(() => svd(batch)).toThrow(/svd: A contains NaN or infinity/);
    const wide = withValue([5, 7], "float64", 8, Number.POSITIVE_INFINITY);
    expect(() => svd(wide.permute([1, 0]))).toThrow(LinalgError);
  });
});
