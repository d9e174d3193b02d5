/**
 * Seeds as torch.manual_seed takes them: an integer in [-2^63, 2^64). seededRandom took any
 * value, and a string, NaN or nothing drew seed 0's numbers silently; rand and randn took
 * 1e300, which folded onto seed 0 too (torch: "Overflow when unpacking long long").
 */
import { ArgumentError, rand, randn, seededRandom } from "@backplane/core";
import { describe, expect, it } from "vitest";

const BAD: unknown[] = [
  "1",
  Number.NaN,
  undefined,
  null,
  1.5,
  Infinity,
  2 ** 64,
  1e300,
  -(2 ** 64),
  3n,
];

describe("seeds", () => {
  it("seededRandom refuses what is not an integer seed, naming it", () => {
    for (const seed of BAD) {
      expect(() => seededRandom(seed as number), String(seed)).toThrow(ArgumentError);
      expect(() => seededRandom(seed as number), String(seed)).toThrow(
        /seededRandom: seed must be an integer/,
      );
    }
  });

  it("rand and randn refuse seeds past torch's range", () => {
    for (const seed of [2 ** 64, 1e300, -(2 ** 64)]) {
      expect(() => rand([2], { seed }), String(seed)).toThrow(/rand: seed must be an integer/);
      expect(() => randn([2], { seed }), String(seed)).toThrow(ArgumentError);
    }
  });

  it("keeps every seed in range, the extremes included, and their streams apart", () => {
    const first = (seed: number) => seededRandom(seed)();
    const seeds = [0, 1, -1, 2 ** 32, 2 ** 53, -(2 ** 63), 2 ** 64 - 2 ** 12];
    const values = seeds.map(first);
    expect(new Set(values).size).toBe(seeds.length);
    for (const v of values) expect(v >= 0 && v < 1).toBe(true);
    // Unchanged streams: seed 7's first draws as before the check.
    expect(Array.from(rand([3], { seed: 7, dtype: "float64" }).toFloat64())).toEqual(
      Array.from({ length: 3 }, seededRandom(7)),
    );
  });
});
