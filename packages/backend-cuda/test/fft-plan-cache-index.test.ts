/**
 * backends.cuda.cufftPlanCache[i] with a negative or fractional device index is an
 * ArgumentError naming the range (torch: "cufft_plan_cache: expected 0 <= device index <
 * ..."), not a silent undefined that fails later with a TypeError.
 */
import { ArgumentError } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { PlanCache, planCacheRegistry } from "../src/internals.ts";

describe("cufftPlanCache device indexes", () => {
  const reg = planCacheRegistry<number>(
    (d) => new PlanCache<number>(d, () => undefined),
    () => 0,
    () => 2,
  );

  it("refuses negative, fractional and past-the-end indexes with the range", () => {
    for (const bad of [-1, 1.5, 2, -0.5]) {
      expect(() => (reg as unknown as Record<number, unknown>)[bad], String(bad)).toThrow(
        ArgumentError,
      );
      expect(() => (reg as unknown as Record<number, unknown>)[bad], String(bad)).toThrow(
        /device index must be an integer in \[0, 2\)/,
      );
    }
  });

  it("still gives each valid device its cache, and other keys stay undefined", () => {
    expect(reg[1]!.device).toBe(1);
    expect(reg[0]!.maxSize).toBe(4096);
    expect((reg as unknown as Record<string, unknown>).other).toBeUndefined();
  });

  it("a device's size is read-only: an ArgumentError, as the core's stand-in gives", () => {
    const cache = reg[1] as unknown as { size: number };
    expect(() => {
      cache.size = 3;
    }).toThrow(ArgumentError);
    expect(() => {
      cache.size = 3;
    }).toThrow(/read-only/);
    expect(cache.size).toBe(0);
  });
});
