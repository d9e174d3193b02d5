/**
 * GEMM on views BLAS cannot read in place (issue 21): an expanded operand (stride 0) and
 * overlapping rows (a Hankel view, row stride 1) used to be taken as dense and gave
 * products 1e12 off; now they are copied first. Every GEMM kernel that can run here is
 * checked against the float64 reference, with a poisoned output.
 */
import {
  DeviceError,
  explain,
  matmul,
  memoryStats,
  randn,
  ready,
  Tensor,
  withKernelPriority,
} from "@backplane/core";
import { getKernel, ops } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { NATIVE_BACKEND, WASM_BACKEND } from "../src/index.ts";

function maxError(y: Tensor, a: Tensor, b: Tensor): number {
  const ref = getKernel("matmul", "reference")!.run(
    ops.matmul.prepare(a.astype("float64"), b.astype("float64")),
  ) as Tensor;
  const got = y.toFloat64();
  const want = ref.toFloat64();
  let err = 0;
  for (let i = 0; i < want.length; i++)
    err = Math.max(err, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
  return got.length === want.length ? err : Number.POSITIVE_INFINITY;
}

describe("matmul on expanded and overlapping views", () => {
  it("every GEMM kernel matches the reference", async () => {
    await ready(WASM_BACKEND);
    await ready(NATIVE_BACKEND);
    const row = randn([1, 64], { seed: 3 });
    const line = randn([127], { seed: 4 });
    const dense = randn([64, 64], { seed: 5 });
    const views: [string, Tensor][] = [
      ["expanded rows [0, 1]", new Tensor(row.storage, "float32", [64, 64], [0, 1], row.offset)],
      ["expanded columns [1, 0]", new Tensor(row.storage, "float32", [64, 64], [1, 0], row.offset)],
      [
        "overlapping rows [1, 1]",
        new Tensor(line.storage, "float32", [64, 64], [1, 1], line.offset),
      ],
      ["column of stride 0", new Tensor(row.storage, "float32", [64, 1], [0, 1], row.offset)],
    ];
    let checked = 0;
    for (const [name, v] of views) {
      for (const [a, b] of [
        [v, dense],
        [dense, v],
      ] as [Tensor, Tensor][]) {
        if (a.shape[1] !== b.shape[0]) continue;
        for (const kernel of ["blas-gemm", "wasm-gemm"]) {
          const ok = withKernelPriority(
            "matmul",
            [kernel],
            () => explain("matmul", a, b).selected === kernel,
          );
          if (!ok) continue;
          const y = withKernelPriority("matmul", [kernel], () => matmul(a, b));
          expect(maxError(y, a, b), `${kernel}: ${name}`).toBeLessThan(1e-5);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(7); // wasm-gemm on every case; blas-gemm too where OpenBLAS loads
  });

  it("a 1-D operand of stride 0 is copied with its matrix strides (blas-gemm passed an undefined ld)", async () => {
    await ready(WASM_BACKEND);
    await ready(NATIVE_BACKEND);
    const one = randn([1], { seed: 6 });
    const vec = new Tensor(one.storage, "float32", [8], [0], one.offset);
    const m = randn([2, 8], { seed: 7 });
    const mt = randn([8, 3], { seed: 8 });
    let checked = 0;
    for (const kernel of ["blas-gemm", "wasm-gemm"]) {
      for (const [a, b] of [
        [m, vec],
        [vec, mt],
        [vec, vec],
      ] as [Tensor, Tensor][]) {
        const ok = withKernelPriority("matmul", [kernel], () => explain("matmul", a, b).selected);
        if (ok !== kernel) continue;
        const y = withKernelPriority("matmul", [kernel], () => matmul(a, b));
        expect(maxError(y, a, b), `${kernel}: [${a.shape}] x [${b.shape}]`).toBeLessThan(1e-5);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(3);
  });

  it("a copied operand is freed when the other operand's copy runs out of memory", async () => {
    await ready(WASM_BACKEND);
    await ready(NATIVE_BACKEND);
    const one = randn([1], { seed: 9 });
    const dense = randn([40000, 5], { seed: 10 });
    // Both expanded (stride 0), so both are copied: a's copy fits, b's (6.4 GB) cannot.
    const view = (shape: number[]) => {
      one.storage.retain();
      return new Tensor(one.storage, "float32", shape, [0, 0], one.offset);
    };
    const a = view([3, 40000]);
    const huge = view([40000, 40000]);
    let checked = 0;
    for (const kernel of ["blas-gemm", "wasm-gemm"]) {
      if (
        withKernelPriority("matmul", [kernel], () => explain("matmul", a, huge).selected) !== kernel
      )
        continue;
      const live = memoryStats("cpu").liveBuffers;
      expect(() => withKernelPriority("matmul", [kernel], () => matmul(a, huge))).toThrow(
        DeviceError,
      );
      expect(memoryStats("cpu").liveBuffers, kernel).toBe(live);
      // The same copied operand still multiplies right where the other one fits.
      const y = withKernelPriority("matmul", [kernel], () => matmul(a, dense));
      expect(maxError(y, a, dense), kernel).toBeLessThan(1e-4);
      y.dispose();
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(1);
    for (const t of [a, huge, one, dense]) t.dispose();
  });
});
