/** explain's random inputs, without spawning the command. */
import { DTYPES, FLOAT_DTYPES } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { inputsFor } from "../src/explain.ts";

describe("inputsFor", () => {
  it("gives every dtype's tensor of each shape; integer dtypes get small random integers", () => {
    const ints = DTYPES.filter((d) => !(FLOAT_DTYPES as readonly string[]).includes(d));
    expect(ints.length).toBeGreaterThan(0);
    for (const dtype of DTYPES) {
      const [a, b] = inputsFor("add", [[3, 5], [7]], dtype, "cpu");
      expect(a.dtype).toBe(dtype);
      expect(a.shape).toEqual([3, 5]);
      expect(b.shape).toEqual([7]);
      const v = a.toFloat64();
      // Random: not all one value (all zeros would hide a kernel that ignores its input).
      expect(new Set(v).size, dtype).toBeGreaterThan(1);
      if (ints.includes(dtype)) expect(v.every(Number.isInteger), dtype).toBe(true);
      if (dtype === "uint8" || dtype === "bool") expect(v.every((x) => x >= 0)).toBe(true);
      if (dtype === "bool") expect(v.every((x) => x === 0 || x === 1)).toBe(true);
    }
  });
});
