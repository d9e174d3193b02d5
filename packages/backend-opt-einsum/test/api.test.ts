import {
  ArgumentError,
  backends,
  FlagError,
  memoryStats,
  randn,
  ShapeError,
  type Tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import { contract, optEinsum, type PathCacheInfo, PathInfo, type StepKind } from "../src/index.ts";

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

  it("getOptEinsum() is typed: the README's example compiles without a cast", () => {
    // tsc checks this file (npx tsc -p tsconfig.json): before the core typed the path API,
    // getOptEinsum() was unknown and oe.contractPath error TS18046.
    const oe = backends.optEinsum.getOptEinsum();
    expect(oe).toBe(optEinsum);
    const info = oe.contractPath("ij,jk,kl->il", [2, 2], [2, 5], [5, 2], { strategy: "dp" });
    const path: number[][] = info.path;
    expect(path).toEqual([
      [1, 2],
      [0, 1],
    ]);
    const kinds: StepKind[] = info.steps.map((s) => s.kind);
    expect(kinds).toEqual(["GEMM", "GEMM"]);
    expect(String(info)).toMatch(/Complete contraction: {2}ij,jk,kl->il/);
    const y: Tensor = oe.contract("ij,jk->ik", randn([2, 3]), randn([3, 4]), {
      strategy: "greedy",
    });
    expect(y.shape).toEqual([2, 4]);
    y.dispose();
    const cache: PathCacheInfo = oe.pathCacheInfo();
    expect(cache.maxSize).toBeGreaterThan(0);
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

describe("robustness", () => {
  it("a failing contraction step frees every intermediate and view", () => {
    const a = randn([300, 2]);
    const b = randn([2, 300]);
    const c = randn([300, 300]);
    const before = memoryStats("cpu").allocatedBytes;
    // Step 1 makes a 300x300 intermediate; step 2's outer product is too big and throws.
    expect(() =>
      contract("ab,bc,de->acde", a, b, c, {
        strategy: [
          [0, 1],
          [0, 1],
        ],
      }),
    ).toThrow(ShapeError);
    expect(memoryStats("cpu").allocatedBytes).toBe(before);
    // A success afterwards still works and frees its intermediates.
    const r = contract("ab,bc->ac", a, b);
    r.dispose();
    expect(memoryStats("cpu").allocatedBytes).toBe(before);
    for (const t of [a, b, c]) t.dispose();
  });
});

describe("argument checks", () => {
  const eq = "ij,jk,kl,lm->im";
  const shapes = [
    [2, 2],
    [2, 3],
    [3, 4],
    [4, 2],
  ];
  it("rejects bad search options with an ArgumentError naming the option", () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ strategy: "random-greedy", repeats: Number.POSITIVE_INFINITY }, /repeats/],
      [{ strategy: "random-greedy", repeats: -1 }, /repeats/],
      [{ strategy: "random-greedy", repeats: 2.5 }, /repeats/],
      [{ strategy: "auto", budgetMs: Number.NaN }, /budgetMs.*NaN/],
      [{ strategy: "auto", budgetMs: -5 }, /budgetMs.*-5/],
      [{ strategy: "random-greedy", seed: "x" }, /seed/],
      [{ strategy: "dp", outer: "yes" }, /outer/],
      // Checked even where the strategy would not read them.
      [{ strategy: "greedy", repeats: 0 }, /repeats/],
    ];
    for (const [opts, msg] of bad) {
      expect(() => optEinsum.contractPath(eq, ...shapes, opts as never)).toThrow(ArgumentError);
      expect(() => optEinsum.contractPath(eq, ...shapes, opts as never)).toThrow(msg);
      const ts = shapes.map((s) => randn(s));
      expect(() => contract(eq, ...ts, opts as never)).toThrow(msg);
      for (const t of ts) t.dispose();
    }
    const ok = optEinsum.contractPath(eq, ...shapes, {
      strategy: "random-greedy",
      repeats: 3,
      seed: 7,
      budgetMs: 0,
    });
    expect(ok.path.length).toBe(3);
  });

  it("rejects unknown option keys (a typo was silently ignored)", () => {
    const ts = shapes.map((s) => randn(s));
    expect(() => optEinsum.contractPath(eq, ...shapes, { stratgy: "dp" } as never)).toThrow(
      /contractPath: unknown option "stratgy"/,
    );
    expect(() => contract(eq, ...ts, { strategy: "dp", seeed: 1 } as never)).toThrow(ArgumentError);
    // contract() has no memory limit (contractPath does): refused, not ignored.
    expect(() => contract(eq, ...ts, { memoryLimit: 4 } as never)).toThrow(
      /contract: unknown option "memoryLimit"/,
    );
    expect(optEinsum.contractPath(eq, ...shapes, { memoryLimit: 4 }).path.length).toBeGreaterThan(
      0,
    );
    for (const t of ts) t.dispose();
  });

  it("contract with null options is a typed error; memoryLimit NaN shows NaN", () => {
    const a = randn([2, 3]);
    const b = randn([3, 4]);
    expect(() => contract("ij,jk->ik", a, b, null as never)).toThrow(ArgumentError);
    expect(() => contract("ij,jk->ik", a, b, null as never)).toThrow(/operand 2 .*got null/);
    expect(() =>
      optEinsum.contractPath("ij,jk", [2, 3], [3, 4], { memoryLimit: Number.NaN }),
    ).toThrow(/got NaN/);
    a.dispose();
    b.dispose();
  });

  it("randomEquation validates its arguments and keeps its invariant", () => {
    const bad: [number, number, Record<string, unknown>, RegExp][] = [
      [2.5, 2, {}, /\bn must be/],
      [1, 2, {}, /\bn must be an integer >= 2/],
      [3, 0, {}, /reg must be/],
      [3, Number.NaN, {}, /reg must be.*NaN/],
      [3, 2, { nOut: -2 }, /nOut/],
      [3, 2, { dMin: -3, dMax: -2 }, /dMin/],
      [3, 2, { dMin: 5, dMax: 2 }, /dMax/],
      [3, 2, { seed: "x" }, /seed/],
    ];
    for (const [n, reg, opts, msg] of bad) {
      expect(() => optEinsum.randomEquation(n, reg, opts as never)).toThrow(ArgumentError);
      expect(() => optEinsum.randomEquation(n, reg, opts as never)).toThrow(msg);
    }
    const e = optEinsum.randomEquation(5, 3, { nOut: 2, seed: 3 });
    expect(e.equation).not.toMatch(/undefined/);
    expect(e.shapes.flat().every((d) => d >= 2 && d <= 9)).toBe(true);
  });
});
