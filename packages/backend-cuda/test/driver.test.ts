/**
 * The driver layer's host logic over a RecordingLayer: kernel parameter packing, launches,
 * contexts and streams (each launch and copy in its device's context), every status checked
 * and named, and the "cuda" DeviceMemory going through the driver (the recording layer copies
 * bytes between its fake allocations, so uploads and downloads round-trip; it computes
 * nothing), a freed storage's handle refused.
 */
import { ArgumentError, DeviceError, tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  CudaDriver,
  CudaError,
  cudaMemory,
  launchArg,
  packKernelParams,
  RecordingLayer,
  statusName,
} from "../src/internals.ts";
import { SM80, withRecording } from "./helpers.ts";

describe("kernel parameters", () => {
  it("packs pointers first, then each value at its natural alignment", () => {
    const p = packKernelParams([
      { type: "ptr", value: 0x1234n },
      { type: "i32", value: -7 },
      { type: "f32", value: 0.5 },
      { type: "i64", value: 3n },
      { type: "f64", value: 2.25 },
      { type: "bytes", value: new Uint8Array([1, 2, 3]), align: 4 },
      { type: "u32", value: 9 },
    ]);
    expect(p.offsets).toEqual([56, 64, 68, 72, 80, 88, 92]);
    const dv = new DataView(p.buffer);
    expect(dv.getBigUint64(56, true)).toBe(0x1234n);
    expect(dv.getInt32(64, true)).toBe(-7);
    expect(dv.getFloat32(68, true)).toBe(0.5);
    expect(dv.getBigInt64(72, true)).toBe(3n);
    expect(dv.getFloat64(80, true)).toBe(2.25);
    expect([...new Uint8Array(p.buffer, 88, 3)]).toEqual([1, 2, 3]);
    expect(dv.getUint32(92, true)).toBe(9);
    expect(() => packKernelParams([{ type: "bytes", value: new Uint8Array(2), align: 3 }])).toThrow(
      ArgumentError,
    );
  });

  it("refuses 32-bit arguments out of range instead of wrapping them (an int L of 2^31 would read as -2^31)", () => {
    for (const a of [
      { type: "i32", value: 2 ** 31 },
      { type: "i32", value: -(2 ** 31) - 1 },
      { type: "i32", value: 1.5 },
      { type: "u32", value: -1 },
      { type: "u32", value: 2 ** 32 },
    ] as const)
      expect(
        () => packKernelParams([{ type: "ptr", value: 0n }, a]),
        `${a.type} ${a.value}`,
      ).toThrow(/kernel argument 1 is (i|u)32 and must be an integer in/);
    const edge = packKernelParams([
      { type: "i32", value: 2 ** 31 - 1 },
      { type: "i32", value: -(2 ** 31) },
      { type: "u32", value: 2 ** 32 - 1 },
    ]);
    const dv = new DataView(edge.buffer);
    expect(dv.getInt32(edge.offsets[0]!, true)).toBe(2 ** 31 - 1);
    expect(dv.getInt32(edge.offsets[1]!, true)).toBe(-(2 ** 31));
    expect(dv.getUint32(edge.offsets[2]!, true)).toBe(2 ** 32 - 1);
  });
});

describe("CudaDriver over a RecordingLayer", () => {
  it("reads devices, retains one primary context and one stream per device", () => {
    const layer = new RecordingLayer({
      devices: [
        { name: "GPU A", major: 9, minor: 0, totalMemory: 2 ** 34 },
        { name: "GPU B", major: 8, minor: 6, totalMemory: 2 ** 33 },
      ],
    });
    const d = new CudaDriver(layer);
    expect(d.deviceCount()).toBe(2);
    expect(d.device(1)).toMatchObject({ name: "GPU B", major: 8, minor: 6, capability: "8.6" });
    expect(() => d.device(2)).toThrow(/cuda:2 does not exist: 2 CUDA devices/);
    d.stream(0);
    d.stream(0);
    d.stream(1);
    expect(layer.callsOf("cuInit")).toHaveLength(1);
    expect(layer.callsOf("cuDevicePrimaryCtxRetain")).toHaveLength(2);
    expect(layer.callsOf("cuStreamCreate")).toHaveLength(2);
    // Work on a device switches contexts, not the current device (torch's device guard).
    expect(d.currentDevice()).toBe(0);
    d.select(1);
    d.stream(0);
    expect(d.currentDevice()).toBe(1);
    expect(() => d.select(2)).toThrow(/cuda:2 does not exist/);
    expect(d.currentDevice()).toBe(1);
  });

  it("launches with checked dimensions and records the arguments", () => {
    const layer = new RecordingLayer();
    const d = new CudaDriver(layer, () => new Uint8Array([0]));
    const fn = d.function(0, "copy", "scale_f32");
    d.launch(0, fn, "scale_f32", [4, 1, 1], [256, 1, 1], 0, [
      { type: "ptr", value: 0xabcn },
      { type: "i64", value: 1000 },
      { type: "f32", value: 0.25 },
    ]);
    const l = layer.launches[0]!;
    expect(l.kernel).toBe("scale_f32");
    expect(l.grid).toEqual([4, 1, 1]);
    expect(launchArg(l, 0, "ptr")).toBe(0xabcn);
    expect(launchArg(l, 1, "i64")).toBe(1000n);
    expect(launchArg(l, 2, "f32")).toBe(0.25);
    // The module loads once per device, the function is looked up once.
    d.function(0, "copy", "scale_f32");
    expect(layer.callsOf("cuModuleLoadData")).toHaveLength(1);
    expect(() => d.launch(0, fn, "scale_f32", [1, 1, 1], [2048, 1, 1], 0, [])).toThrow(
      /block dimension 0 is 2048/,
    );
  });

  it("makes each launch's, copy's and memset's device current, whichever device ran last", async () => {
    const layer = new RecordingLayer({ devices: [SM80, SM80] });
    const d = new CudaDriver(layer, () => new Uint8Array([0]));
    const fn = [0, 1].map((i) => d.function(i, "copy", "scale_f32"));
    const mem = [0, 1].map((i) => d.memAlloc(i, 64));
    // Both streams exist, and cuda:1's context is current.
    d.stream(0);
    d.stream(1);
    layer.clear();
    const launch = (i: number) =>
      d.launch(i, fn[i]!, "scale_f32", [1, 1, 1], [32, 1, 1], 0, [
        { type: "ptr", value: mem[i]! },
        { type: "i64", value: 16 },
        { type: "f32", value: 2 },
      ]);
    launch(0);
    launch(1);
    launch(0);
    expect(layer.launches.map((l) => l.device)).toEqual([0, 1, 0]);
    d.copyHtoD(1, mem[1]!, new Uint8Array(8));
    d.memset(0, mem[0]!, 7, 8);
    d.copyDtoD(1, mem[1]! + 8n, mem[1]!, 8);
    d.copyDtoH(0, new Uint8Array(8), mem[0]!);
    const at = (name: string) => layer.callsOf(name).map((c) => c.device);
    expect(at("cuMemcpyHtoDAsync_v2")).toEqual([1]);
    expect(at("cuMemsetD8Async")).toEqual([0]);
    expect(at("cuMemcpyDtoDAsync_v2")).toEqual([1]);
    expect(at("cuMemcpyDtoHAsync_v2")).toEqual([0]);
    // Synchronizing a device that does not exist is an error, not "nothing to wait for".
    expect(() => d.synchronize(2)).toThrow(/cuda:2 does not exist: 2 CUDA devices/);
    await expect(d.synchronizeAsync(2)).rejects.toThrow(DeviceError);
  });

  it("names every failing CUresult", () => {
    const layer = new RecordingLayer();
    const d = new CudaDriver(layer, () => new Uint8Array([0]));
    layer.fail("cuMemAlloc_v2", 2);
    let err: unknown;
    try {
      d.memAlloc(0, 1024);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CudaError);
    const e = err as CudaError;
    expect(e.statusName).toBe("CUDA_ERROR_OUT_OF_MEMORY");
    expect(e.status).toBe(2);
    expect(e.call).toBe("cuMemAlloc_v2");
    expect(e.code).toBe("E_CUDA_OOM");
    expect(e.message).toMatch(/^cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY \(2\)/);
    layer.fail("cuModuleLoadData", 218);
    expect(() => d.function(0, "copy", "x")).toThrow(
      /cuModuleLoadData\(copy\) failed: CUDA_ERROR_INVALID_PTX \(218\)/,
    );
    layer.fail("cuStreamCreate", 12345);
    expect(() => d.stream(0)).toThrow(/unknown CUresult 12345/);
    expect(statusName("runtime", 35)).toBe("cudaErrorInsufficientDriver");
    expect(statusName("cublas", 14)).toBe("CUBLAS_STATUS_INTERNAL_ERROR");
    expect(statusName("cufft", 5)).toBe("CUFFT_INTERNAL_ERROR");
    expect(statusName("cusolver", 6)).toBe("CUSOLVER_STATUS_EXECUTION_FAILED");
  });
});

describe('the "cuda" DeviceMemory', () => {
  it("uploads, downloads and copies through the driver layer", async () => {
    await withRecording({}, async (layer) => {
      const t = tensor([1, 2, 3, 4], { device: "cuda" });
      expect(t.device).toBe("cuda:0");
      expect(layer.callsOf("cuMemcpyHtoDAsync_v2")).toHaveLength(1);
      expect([...(await t.data())]).toEqual([1, 2, 3, 4]);
      expect([...t.dataSync()]).toEqual([1, 2, 3, 4]);
      const c = t.clone();
      expect(layer.callsOf("cuMemcpyDtoDAsync_v2")).toHaveLength(1);
      expect(c.toArray()).toEqual([1, 2, 3, 4]);
      const back = c.to("cpu");
      expect(back.device).toBe("cpu");
      expect(back.toArray()).toEqual([1, 2, 3, 4]);
      // One 2 MiB segment from cuMemAlloc serves both small storages.
      expect(layer.callsOf("cuMemAlloc_v2").map((x) => Number(x.args[1]))).toEqual([2 << 20]);
      t.dispose();
      c.dispose();
    });
  });

  it("refuses a freed storage's handle: no write into the block the next storage was given", async () => {
    await withRecording({ devices: [SM80] }, () => {
      const h = cudaMemory.allocate(16, "cuda");
      cudaMemory.upload(h, 0, new Uint8Array(16).fill(7));
      cudaMemory.free(h);
      expect(() => cudaMemory.free(h)).toThrow(DeviceError);
      expect(() => cudaMemory.free(h)).toThrow(/double free/);
      // The caching allocator hands the same block to the next request of its size.
      const next = cudaMemory.allocate(16, "cuda");
      cudaMemory.upload(next, 0, new Uint8Array(16).fill(1));
      expect((next as { block: unknown }).block).toBe((h as { block: unknown }).block);
      expect(() => cudaMemory.upload(h, 0, new Uint8Array(4).fill(9))).toThrow(
        /cuda memory upload: the storage was freed/,
      );
      expect(() => cudaMemory.downloadSync!(h, 0, 4)).toThrow(DeviceError);
      expect(() => cudaMemory.copy(h, 0, next, 0, 4)).toThrow(/copy source: the storage was freed/);
      expect(() => cudaMemory.copy(next, 0, h, 0, 4)).toThrow(/copy destination/);
      expect(() => cudaMemory.gather!(h, 0, [2, 2], [1, 2], 4, next)).toThrow(/gather source/);
      expect(() => cudaMemory.gather!(next, 0, [2, 2], [1, 2], 4, h)).toThrow(/gather destination/);
      expect([...cudaMemory.downloadSync!(next, 0, 16)]).toEqual(Array(16).fill(1));
      cudaMemory.free(next);
    });
  });

  it("copies between devices with cuMemcpyPeerAsync and bounds-checks offsets", async () => {
    await withRecording(
      {
        devices: [
          { name: "A", major: 8, minor: 0, totalMemory: 2 ** 32 },
          { name: "B", major: 8, minor: 0, totalMemory: 2 ** 32 },
        ],
      },
      (layer) => {
        const a = cudaMemory.allocate(16, "cuda:0");
        const b = cudaMemory.allocate(16, "cuda:1");
        cudaMemory.upload(a, 0, new Uint8Array([9, 8, 7, 6]));
        cudaMemory.copy(a, 0, b, 4, 4);
        expect(layer.callsOf("cuMemcpyPeerAsync")).toHaveLength(1);
        expect([...cudaMemory.downloadSync!(b, 4, 4)]).toEqual([9, 8, 7, 6]);
        expect(() => cudaMemory.upload(a, 14, new Uint8Array(4))).toThrow(
          /outside the 16-byte storage/,
        );
        cudaMemory.free(a);
        cudaMemory.free(b);
      },
    );
  });
});
