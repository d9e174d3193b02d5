import { ArgumentError, backends, FlagError, randn } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { contract, optEinsum, PathInfo } from "../src/index.ts";

describe("backends.optEinsum", () => {
  it("is available, and getOptEinsum() returns the path API", () => {
    expect(backends.optEinsum.isAvailable()).toBe(true);
    expect(backends.optEinsum.status().backend).toBe("opt-einsum");
    const oe = backends.optEinsum.getOptEinsum() as typeof optEinsum;
    expect(oe).toBe(optEinsum);
    expect(oe.strategies).toContain("dp");
    const info = oe.contractPath("ij,jk,kl->il", [2, 2], [2, 5], [5, 2], { strategy: "dp" });
    expect(info).toBeInstanceOf(PathInfo);
    expect(info.speedup).toBeCloseTo(120 / 56, 10);
    // Tensors work in place of shapes.
    const again = oe.contractPath("ij,jk,kl->il", randn([2, 2]), randn([2, 5]), randn([5, 2]));
    expect(again.path).toEqual(info.path);
  });

  it("validates the strategy flag and the options", () => {
    expect(backends.optEinsum.strategy).toBe("auto");
    expect(() => {
      backends.optEinsum.strategy = "fastest" as never;
    }).toThrow(FlagError);
    {
      using _ = backends.optEinsum.flags({ strategy: "branch-2" });
      expect(backends.optEinsum.strategy).toBe("branch-2");
    }
    expect(backends.optEinsum.strategy).toBe("auto");
    expect(() =>
      optEinsum.contractPath("ij,jk", [2, 3], [3, 4], { strategy: "best" as never }),
    ).toThrow(ArgumentError);
    expect(() => optEinsum.contractPath("ij,jk", [2, 3], [3, 4], { memoryLimit: 0 })).toThrow(
      ArgumentError,
    );
    expect(() => optEinsum.contractPath("ij,jk", [2, 3], [3, 4], { strategy: [[0]] })).toThrow(
      /leaves 2 operands/,
    );
  });

  it("points at the character of a bad expression", () => {
    expect(() => optEinsum.contractPath("ij,j1->i", [2, 3], [3, 4])).toThrow(
      /\n {2}ij,j1->i\n {6}\^/,
    );
    expect(() => optEinsum.contractPath("ij,jk->ik", [2, 3], [4, 5])).toThrow(/index j has size 4/);
  });

  it("prints a PathInfo like opt_einsum's", () => {
    const info = optEinsum.contractPath(
      "...ij,...jk,...kl->...il",
      [4, 8, 2],
      [4, 2, 8],
      [4, 8, 3],
    );
    const text = info.toString();
    const lines = text.split("\n");
    expect(lines[0]).toBe("  Complete contraction:  aij,ajk,akl->ail");
    expect(lines[1]).toBe("         Naive scaling:  5");
    expect(text).toContain("scaling        BLAS                current");
    expect(info.steps.map((s) => s.kind)).toEqual(["BMM", "BMM"]);
    // b·c first: 384 + 384 multiply-adds against 1024 + 1536 for a·b first.
    expect(info.path).toEqual([
      [1, 2],
      [0, 1],
    ]);
    expect(info.optCost).toBe(768);
  });

  it("contract() evaluates along a strategy's path or an explicit one", () => {
    const a = randn([3, 4], { seed: 1 });
    const b = randn([4, 5], { seed: 2 });
    const c = randn([5, 2], { seed: 3 });
    const x = contract("ij,jk,kl->il", a, b, c, { strategy: "optimal" }).toFloat64();
    const y = contract("ij,jk,kl->il", a, b, c, {
      strategy: [
        [0, 1],
        [0, 1],
      ],
    }).toFloat64();
    for (let i = 0; i < x.length; i++) expect(x[i]).toBeCloseTo(y[i], 5);
  });
});
