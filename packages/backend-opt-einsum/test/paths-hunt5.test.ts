/**
 * Path costs past float64's range: with sizes whose products overflow to Infinity, the
 * greedy search's first run (bound Infinity) counted a cost of Infinity as "reached the
 * bound", gave up, and every strategy crashed on `undefined.cost` (a raw TypeError). Each
 * strategy must still return a path that contracts every operand.
 */
import { describe, expect, it } from "vitest";
import { contractPath, STRATEGIES } from "../src/index.ts";

/** Operands left after a linear path over n operands (1 when it contracts them all). */
function operandsLeft(path: readonly (readonly number[])[], n: number): number {
  return path.reduce((live, step) => live - (step.length - 1), n);
}

describe("contractPath with costs past float64's range", () => {
  const cases: [string, number[][]][] = [
    ["ab,bc,cd->ad", Array.from({ length: 3 }, () => [1e160, 1e160])],
    [
      "ab,bc,cd,de->ae",
      [
        [1e100, 1e100],
        [1e100, 1e200],
        [1e200, 1e100],
        [1e100, 3],
      ],
    ],
    // Safe-integer sizes: 21 indices of 2^53 - 1 in one step.
    [
      "abcdefghijk,klmnopqrstu,uvwxyzABCDE->aE",
      Array.from({ length: 3 }, () => new Array<number>(11).fill(2 ** 53 - 1)),
    ],
  ];
  for (const [equation, shapes] of cases) {
    it(`${equation}: every strategy returns a complete path`, () => {
      for (const strategy of STRATEGIES) {
        const info = contractPath(equation, ...shapes, { strategy });
        expect(operandsLeft(info.path, shapes.length), strategy).toBe(1);
        expect(info.steps.length, strategy).toBe(info.path.length);
      }
    });
  }

  it("a path whose total cost fits float64 is still found and costed", () => {
    const [equation, shapes] = cases[1];
    const info = contractPath(equation, ...shapes, { strategy: "greedy" });
    // Contracting from the right keeps every step under 1e301; left to right would pass 1e400.
    expect(Number.isFinite(info.optCost)).toBe(true);
    const optimal = contractPath(equation, ...shapes, { strategy: "optimal" });
    expect(info.optCost).toBeGreaterThanOrEqual(optimal.optCost);
  });
});
