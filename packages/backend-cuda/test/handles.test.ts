/**
 * Library handles whose setup fails part-way: the half-made handle is destroyed (and its
 * workspace freed) instead of being cached, so the next call makes a complete one rather than
 * using a handle left on the legacy stream (which would race the device's stream).
 */
import { describe, expect, it } from "vitest";
import { CudaDriver, CudaRuntime, RecordingLayer } from "../src/internals.ts";
import { SM80 } from "./helpers.ts";

const CUBLAS_STATUS_INTERNAL_ERROR = 14;
const CUSOLVER_STATUS_INTERNAL_ERROR = 7;

function freshRuntime(): { layer: RecordingLayer; rt: CudaRuntime } {
  const layer = new RecordingLayer();
  return { layer, rt: new CudaRuntime(layer, () => new Uint8Array([0])) };
}

describe("library handle setup and driver release failures", () => {
  it("cuBLAS: a failed cublasSetStream_v2 destroys the handle and is retried", () => {
    const { layer, rt } = freshRuntime();
    layer.fail("cublasSetStream_v2", CUBLAS_STATUS_INTERNAL_ERROR);
    expect(() => rt.cublas(0)).toThrow(/cublasSetStream_v2/);
    const created = layer.callsOf("cublasCreate_v2").length;
    expect(layer.callsOf("cublasDestroy_v2").length).toBe(created);
    const { handle } = rt.cublas(0);
    const bound = layer.callsOf("cublasSetStream_v2").filter((c) => c.status === 0);
    expect(bound.map((c) => c.args[0])).toEqual([handle]);
    expect(layer.callsOf("cublasSetWorkspace_v2").map((c) => c.args[0])).toEqual([handle]);
    expect(rt.cublas(0).handle).toBe(handle);
  });

  it("cuBLAS: a failed cublasSetWorkspace_v2 frees the workspace and the handle", () => {
    const { layer, rt } = freshRuntime();
    layer.fail("cublasSetWorkspace_v2", CUBLAS_STATUS_INTERNAL_ERROR);
    expect(() => rt.cublas(0)).toThrow(/cublasSetWorkspace_v2/);
    expect(layer.callsOf("cublasDestroy_v2")).toHaveLength(1);
    expect(rt.allocator(0).stats().allocatedBytes.current).toBe(0);
    const { handle } = rt.cublas(0);
    expect(layer.callsOf("cublasSetWorkspace_v2").at(-1)!.args[0]).toBe(handle);
    rt.release();
    expect(layer.callsOf("cublasDestroy_v2").map((c) => c.args[0])).toContain(handle);
  });

  it("cuSOLVER: a failed cusolverDnSetStream destroys the handle and is retried", () => {
    const { layer, rt } = freshRuntime();
    layer.fail("cusolverDnSetStream", CUSOLVER_STATUS_INTERNAL_ERROR);
    expect(() => rt.cusolver(0)).toThrow(/cusolverDnSetStream/);
    expect(layer.callsOf("cusolverDnDestroy")).toHaveLength(1);
    const { handle } = rt.cusolver(0);
    const bound = layer.callsOf("cusolverDnSetStream").filter((c) => c.status === 0);
    expect(bound.map((c) => c.args[0])).toEqual([handle]);
  });

  it("driver release goes on past a context that cannot be made current", () => {
    const layer = new RecordingLayer({ devices: [SM80, SM80] });
    const d = new CudaDriver(layer, () => new Uint8Array([0]));
    d.stream(0);
    d.stream(1);
    d.function(1, "copy", "copy2d_b4");
    layer.fail("cuCtxSetCurrent", 201); // CUDA_ERROR_INVALID_CONTEXT, making cuda:0 current
    expect(() => d.release()).not.toThrow();
    expect(layer.callsOf("cuStreamDestroy_v2")).toHaveLength(1);
    expect(layer.callsOf("cuModuleUnload")).toHaveLength(1);
    expect(layer.callsOf("cuDevicePrimaryCtxRelease_v2")).toHaveLength(2);
  });
});
