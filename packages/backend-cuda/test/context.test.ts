/**
 * The "cuda" DeviceContext this package provides to core (what backend-cudnn runs on), over
 * the recording layer: device facts, the package's stream, workspaces from the caching
 * allocator, tensor addresses, and the reason when CUDA is unavailable.
 */
import { empty, Tensor } from "@backplane/core";
import { deviceContext } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { cudaApi, cudaContext, cudaStatus } from "../src/internals.ts";
import { SM80, withRecording } from "./helpers.ts";

describe("the cuda DeviceContext", () => {
  it("is what core hands out for 'cuda' once the package is imported", () => {
    expect(deviceContext("cuda")).toBe(cudaContext);
  });

  it("without CUDA, says why (the probe's reason)", () => {
    if (cudaStatus().available) return;
    expect(cudaContext.unavailableReason()).toBe(cudaStatus().reason);
  });

  it("over a device: facts, stream, workspaces from the allocator, addresses", async () => {
    await withRecording({ devices: [SM80] }, () => {
      expect(cudaContext.unavailableReason()).toBeUndefined();
      expect(cudaContext.deviceCount()).toBe(1);
      expect(cudaContext.properties(0)).toMatchObject({ name: "Fake A100", major: 8, minor: 0 });
      expect(cudaContext.stream(0)).not.toBe(0n);
      const before = cudaApi.memoryAllocated();
      const ws = cudaContext.allocate(0, 1000);
      expect(cudaApi.memoryAllocated()).toBeGreaterThan(before);
      ws.free();
      ws.free(); // a second free is a no-op
      expect(cudaApi.memoryAllocated()).toBe(before);
      const t = empty([4, 8], { device: "cuda" });
      // Row 2 of t: a view 16 elements into the same storage.
      const view = new Tensor(t.storage, "float32", [8], [1], 16);
      expect(cudaContext.indexOf(t)).toBe(0);
      const base = cudaContext.address(t);
      expect(typeof base).toBe("bigint");
      expect(cudaContext.address(view) - base).toBe(64n);
    });
  });
});
