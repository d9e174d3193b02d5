/**
 * configureWebGPU() refuses what it cannot use with an ArgumentError, and changes nothing
 * then: a string pool limit had turned the limit off, a string of Dawn options was spread
 * into characters, a misspelt option was ignored, null was a TypeError.
 */
import { ArgumentError } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { configureWebGPU, poolStats } from "../src/index.ts";

describe("configureWebGPU()", () => {
  it("refuses bad options with an ArgumentError and keeps the settings", () => {
    const before = poolStats().limitBytes;
    const bad: [unknown, RegExp][] = [
      [{ poolLimitBytes: "big" }, /poolLimitBytes must be a finite number/],
      [{ poolLimitBytes: -1 }, /poolLimitBytes must be a finite number/],
      [{ poolLimitBytes: Number.NaN }, /poolLimitBytes must be a finite number/],
      [{ dawnOptions: "backend=vulkan" }, /dawnOptions must be an array of strings/],
      [{ dawnOptions: [1] }, /dawnOptions must be an array of strings/],
      [{ gpu: 5 }, /gpu must be a GPU object/],
      [{ poolLimit: 2 ** 20 }, /unknown option poolLimit/],
      [null, /expected an object/],
      [7, /expected an object/],
    ];
    for (const [c, message] of bad) {
      expect(() => configureWebGPU(c as never)).toThrow(ArgumentError);
      expect(() => configureWebGPU(c as never)).toThrow(message);
    }
    expect(poolStats().limitBytes).toBe(before);
  });

  it("takes good options", () => {
    const before = poolStats().limitBytes;
    try {
      configureWebGPU({ poolLimitBytes: 0 });
      expect(poolStats().limitBytes).toBe(0);
      configureWebGPU({ poolLimitBytes: 2 ** 20, gpu: undefined });
      expect(poolStats().limitBytes).toBe(2 ** 20);
    } finally {
      configureWebGPU({ poolLimitBytes: before });
    }
  });
});
