/**
 * lapack-inv on singular and nearly singular matrices. It handed the row-major array to
 * getrf as is, so it factored Aᵀ, not A as luFactor, solve and torch do: with a zero
 * column it named the last pivot (U[7,7]) where torch names the column, with a zero row
 * the row where torch names the last pivot; and a nearly singular matrix whose LU meets an
 * exact zero pivot (torch raises) could come back "inverted", or the reverse (where an
 * exact zero turns up depends on rounding, so only the exact cases are tested here).
 * The float64 reference factors A as torch does; lapack-inv is held to it.
 */
import {
  fromFloat64,
  inv,
  kernelPriority,
  LinalgError,
  randn,
  ready,
  type Tensor,
} from "@backplane/core";
import { describe, expect } from "vitest";
import { NATIVE_BACKEND } from "../src/index.ts";
import { itNative } from "./native-helpers.ts";

/** The position of inv's LinalgError on `kernel`, or 0 when it inverts the matrix. */
function zeroPivotOn(kernel: string, a: Tensor): number {
  using _ = kernelPriority("inv", [kernel]);
  try {
    inv(a).dispose();
    return 0;
  } catch (e) {
    expect(e).toBeInstanceOf(LinalgError);
    return (e as LinalgError).position ?? -1;
  }
}

describe("lapack-inv factors A, not Aᵀ", () => {
  itNative("a zero column is named where the reference (and torch) name it", async () => {
    await ready(NATIVE_BACKEND);
    const n = 7;
    const a = randn([n, n], { dtype: "float64", seed: 31 }).toFloat64();
    for (const column of [0, 2, 5]) {
      const z = Float64Array.from(a);
      for (let i = 0; i < n; i++) z[i * n + column] = 0;
      const t = fromFloat64(z, [n, n], "float64");
      // torch.linalg.inv: "The diagonal element {column + 1} is zero".
      expect(zeroPivotOn("reference", t)).toBe(column + 1);
      expect(zeroPivotOn("lapack-inv", t), `zero column ${column}`).toBe(column + 1);
    }
  });

  itNative("a zero row is the last pivot, as in the reference (and torch)", async () => {
    await ready(NATIVE_BACKEND);
    const n = 7;
    const a = randn([n, n], { dtype: "float64", seed: 37 }).toFloat64();
    for (const row of [0, 2, 5]) {
      const z = Float64Array.from(a);
      z.fill(0, row * n, (row + 1) * n);
      const t = fromFloat64(z, [n, n], "float64");
      // torch.linalg.inv: "The diagonal element 7 is zero" whatever the row.
      expect(zeroPivotOn("reference", t)).toBe(n);
      expect(zeroPivotOn("lapack-inv", t), `zero row ${row}`).toBe(n);
    }
  });
});
