/**
 * Device memory outliving its runtime: backends.cuda.reprobe() releases the runtime (its
 * primary contexts, and with them every allocation), so a tensor made before it holds a
 * dangling device address. Kernels and memory operations must refuse it with a DeviceError
 * before any FFI call sees that address (a library of the new runtime would read or write
 * memory it does not own).
 */
import { DeviceError, matmul, randn, rfft, type Tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { type CudaRuntime, maybeRuntime } from "../src/internals.ts";
import { SM80, withRecording } from "./helpers.ts";

describe("tensors of a replaced CUDA runtime", () => {
  it("kernels refuse them before any library call or launch; memory ops after release() too", async () => {
    let a: Tensor | undefined;
    let old: CudaRuntime | undefined;
    await withRecording({ devices: [SM80] }, () => {
      a = randn([3, 4], { seed: 31 }).to("cuda");
      old = maybeRuntime();
    });
    await withRecording({ devices: [SM80] }, (layer) => {
      const b = randn([4, 2], { seed: 32 }).to("cuda");
      expect(() => matmul(a!, b)).toThrow(DeviceError);
      expect(() => matmul(a!, b)).toThrow(/replaced \(backends\.cuda\.reprobe\(\)\)/);
      expect(() => rfft(a!)).toThrow(DeviceError);
      expect(layer.names("cublas")).toEqual([]);
      expect(layer.names("cufft")).toEqual([]);
      expect(layer.launches).toEqual([]);
      // The current runtime's own tensors still run.
      expect(matmul(b.transpose(0, 1), b).shape).toEqual([2, 2]);
    });
    // reprobe() releases the old runtime: its memory is gone with its contexts.
    old!.release();
    await expect(a!.data()).rejects.toThrow(DeviceError);
    await expect(a!.data()).rejects.toThrow(/released/);
    expect(() => a!.dispose()).not.toThrow();
  });
});
