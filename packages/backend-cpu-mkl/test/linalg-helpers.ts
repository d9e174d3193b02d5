/** What the linalg tests share. */
import type { Tensor } from "@backplane/core";
import { expect } from "vitest";

/** Largest |a - b| over two tensors of one shape; a NaN anywhere is an infinite difference. */
export function maxAbsDiff(a: Tensor, b: Tensor): number {
  expect(a.shape).toEqual(b.shape);
  const x = a.toFloat64();
  const y = b.toFloat64();
  let d = 0;
  for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i] - y[i]));
  return Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
}
