/**
 * The WASM linalg kernels copy each matrix of a batch into one block in the CPU memory: they
 * took a new block per matrix and freed them all at the end, so a batch held a second copy
 * of itself in the WASM memory while the kernel ran (luFactor of 7.8 MB grew the heap by
 * 15.9 MB, not 8.1), which is capped at 4 GiB. Results still match the float64 reference.
 */
import {
  luFactor,
  type Recorded,
  randn,
  ready,
  record,
  solve,
  withKernelPriority,
} from "@backplane/core";
import { cpuMemory } from "@backplane/core/cpu";
import { maxAbsDiff } from "@backplane/testkit";
import { describe, expect, it } from "vitest";
import { WASM_BACKEND } from "../src/index.ts";

await ready(WASM_BACKEND);

function only<R>(op: string, kernel: string, fn: () => R): R {
  const { result, calls } = record(() => withKernelPriority(op, [kernel], fn)) as Recorded<R>;
  expect(calls.map((c) => c.kernel)).toEqual([kernel]);
  return result;
}

const heapTop = () => cpuMemory().stats().heapTop;

describe("WASM linalg kernels over a batch", () => {
  // First in the file (a fresh CPU memory): no freed blocks to hide the growth.
  it("wasm-luFactor grows the CPU memory by its outputs, not by a copy of the batch", () => {
    const [batch, n] = [4000, 16];
    const a = randn([batch, n, n], { dtype: "float64", seed: 21 });
    const inputBytes = batch * n * n * 8;
    const outputBytes = inputBytes + batch * n * 4; // LU and the int32 pivots
    const before = heapTop();
    const got = only("luFactor", "wasm-luFactor", () => luFactor(a));
    const grew = heapTop() - before;
    expect(grew).toBeLessThan(outputBytes + inputBytes / 4);
    const ref = withKernelPriority("luFactor", ["reference"], () => luFactor(a));
    expect(maxAbsDiff(got.LU, ref.LU)).toBeLessThan(1e-10);
    expect(Array.from(got.pivots.toFloat64())).toEqual(Array.from(ref.pivots.toFloat64()));
  });

  it("wasm-solve with a shared B matches the reference", () => {
    const a = randn([50, 7, 7], { dtype: "float64", seed: 22 });
    const b = randn([7, 3], { dtype: "float64", seed: 23 });
    const got = only("solve", "wasm-solve", () => solve(a, b));
    const ref = withKernelPriority("solve", ["reference"], () => solve(a, b));
    expect(maxAbsDiff(got, ref)).toBeLessThan(1e-9);
  });
});
