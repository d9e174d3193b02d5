/**
 * backends.nnpack's members. algorithmFor on an unbatched [C, H, W] input: the core prepares it as a
 * batch-of-one view that the caller disposes. algorithmFor did not, so the view held the
 * input's storage and each call's input stayed allocated after its dispose() (28,800 bytes
 * a call for x [8, 30, 30]). setTransformCacheEnabled took any value, a string "false" or a
 * 1 turning the cache off without a word.
 */
import "../src/index.ts";
import { ArgumentError, backends, memoryStats, randn } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { whenReady } from "./helpers.ts";

describe("backends.nnpack members", () => {
  it("frees an unbatched input's storage with the input, and answers as for its batch of one", async () => {
    await whenReady();
    const w = randn([8, 8, 3, 3], { seed: 1 });
    const before = memoryStats("cpu").allocatedBytes;
    for (let i = 0; i < 4; i++) {
      const x = randn([8, 30, 30], { seed: 2 + i });
      const batch = x.reshape([1, 8, 30, 30]);
      expect(backends.nnpack.algorithmFor(x, w, { padding: 1 })).toBe(
        backends.nnpack.algorithmFor(batch, w, { padding: 1 }),
      );
      batch.dispose();
      x.dispose();
    }
    expect(memoryStats("cpu").allocatedBytes - before).toBe(0);
    // A refused argument frees the view too (and is a typed error).
    const x = randn([8, 30, 30], { seed: 9 });
    expect(() => backends.nnpack.algorithmFor(x, w, { stride: 0 })).toThrow(/stride must be/);
    x.dispose();
    expect(memoryStats("cpu").allocatedBytes - before).toBe(0);
    w.dispose();
  });

  it("setTransformCacheEnabled takes a boolean only, leaving the setting as it was otherwise", () => {
    expect(backends.nnpack.transformCacheInfo().enabled).toBe(true);
    for (const bad of ["false", 1, 0, null, undefined])
      expect(() => backends.nnpack.setTransformCacheEnabled(bad as never)).toThrow(ArgumentError);
    expect(backends.nnpack.transformCacheInfo().enabled).toBe(true);
    expect(() => backends.nnpack.setTransformCacheEnabled("false" as never)).toThrow(
      /on must be true or false, got "false"/,
    );
    expect(backends.nnpack.setTransformCacheEnabled(false)).toBe(true);
    expect(backends.nnpack.setTransformCacheEnabled(true)).toBe(false);
  });
});
