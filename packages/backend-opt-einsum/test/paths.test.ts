import { seededRandom } from "@backplane/core";
import { parseEinsum } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { EXPRESSIONS } from "../src/expressions.ts";
import { contractPath, randomEquation, STRATEGIES } from "../src/index.ts";

/**
 * Minimum cost by exhaustive search over every pairwise order (outer products included),
 * where an input may also first sum the indices only it holds (opt_einsum's single-term
 * step, which its dp takes): the space the exact strategies search.
 */
function bruteForce(equation: string, shapes: number[][]): number {
  const { inputs, output, sizes } = parseEinsum(equation, shapes);
  const out = new Set(output);
  const size = (s: Set<string>) => [...s].reduce((a, l) => a * sizes[l], 1);
  let best = Number.POSITIVE_INFINITY;
  type Operand = { labels: Set<string>; input: boolean };
  const rec = (ops: Operand[], cost: number) => {
    if (cost >= best) return;
    if (ops.length === 1) {
      best = cost;
      return;
    }
    for (let i = 0; i < ops.length; i++) {
      const others = ops.filter((_, q) => q !== i);
      if (ops[i].input) {
        const own = [...ops[i].labels].filter(
          (l) => !out.has(l) && !others.some((o) => o.labels.has(l)),
        );
        if (own.length > 0) {
          const kept = new Set([...ops[i].labels].filter((l) => !own.includes(l)));
          rec([...others, { labels: kept, input: false }], cost + 2 * size(ops[i].labels));
        }
      }
      for (let j = i + 1; j < ops.length; j++) {
        const rest = ops.filter((_, q) => q !== i && q !== j);
        const keep = new Set(out);
        for (const o of rest) for (const l of o.labels) keep.add(l);
        const all = new Set([...ops[i].labels, ...ops[j].labels]);
        const kept = new Set([...all].filter((l) => keep.has(l)));
        rec(
          [...rest, { labels: kept, input: false }],
          cost + size(all) * (kept.size < all.size ? 2 : 1),
        );
      }
    }
  };
  if (inputs.length === 1) {
    const all = new Set(inputs[0]);
    return size(all) * ([...all].some((l) => !out.has(l)) ? 2 : 1);
  }
  rec(
    inputs.map((x) => ({ labels: new Set(x), input: true })),
    0,
  );
  return best;
}

/** A random expression: 3-6 operands over a few letters, some repeated, some in the output. */
function randomExpression(r: () => number): { equation: string; shapes: number[][] } {
  const n = 3 + Math.floor(r() * 4);
  const letters = "abcdefghij".slice(0, 3 + Math.floor(r() * 7));
  const sizes: Record<string, number> = {};
  for (const l of letters) sizes[l] = 1 + Math.floor(r() * 6);
  const terms = Array.from({ length: n }, () => {
    let t = "";
    const k = Math.floor(r() * 4);
    for (let j = 0; j < k; j++) {
      const l = letters[Math.floor(r() * letters.length)];
      if (!t.includes(l)) t += l;
    }
    return t;
  });
  const used = [...new Set(terms.join(""))];
  const out = used.filter(() => r() < 0.3).join("");
  return {
    equation: `${terms.join(",")}->${out}`,
    shapes: terms.map((t) => [...t].map((l) => sizes[l])),
  };
}

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));

describe("path finding", () => {
  it("optimal and dp return a minimum-cost path (brute force, 3 to 6 operands)", () => {
    const r = seededRandom(2024);
    for (let i = 0; i < 80; i++) {
      const { equation, shapes } = randomExpression(r);
      const best = bruteForce(equation, shapes);
      for (const strategy of ["optimal", "dp", "auto", "auto-hq"] as const) {
        const info = contractPath(equation, ...shapes, { strategy });
        expect(close(info.optCost, best), `${strategy} ${equation} ${JSON.stringify(shapes)}`).toBe(
          true,
        );
      }
    }
  });

  it("every strategy returns a valid path, never cheaper than the optimum", () => {
    const r = seededRandom(7);
    for (let i = 0; i < 30; i++) {
      const { equation, shapes } = randomExpression(r);
      const best = bruteForce(equation, shapes);
      for (const strategy of STRATEGIES) {
        const info = contractPath(equation, ...shapes, { strategy });
        expect(info.optCost).toBeGreaterThanOrEqual(best * (1 - 1e-9));
        // Re-pricing the returned path as an explicit path gives the same cost.
        const again = contractPath(equation, ...shapes, { strategy: info.path });
        expect(close(again.optCost, info.optCost)).toBe(true);
      }
    }
  });

  it("greedy is never worse than left to right on the bench set", () => {
    for (const e of EXPRESSIONS) {
      const n = e.shapes.length;
      // torch's order ((A B) C) D...: the running result is last, the next operand first.
      const ltr =
        n === 1 ? [[0]] : Array.from({ length: n - 1 }, (_, t) => [0, t === 0 ? 1 : n - t - 1]);
      const torch = contractPath(e.equation, ...e.shapes, { strategy: ltr });
      const greedy = contractPath(e.equation, ...e.shapes, { strategy: "greedy" });
      expect(greedy.optCost, e.name).toBeLessThanOrEqual(torch.optCost);
    }
  });

  // auto spends its 10 ms as work units sized on a 2-core VM, never by reading a clock, so
  // its time follows the CPU's speed: the bound here is 2.5x that (an unbounded dp takes
  // 77 ms on seed 0), so a slower CPU or a busy core does not fail it; the log line shows
  // the time, and the 10 ms target itself is the einsum bench's to report.
  it("auto on random 20-operand networks: bounded time (10 ms of work), at most 1.1x the dp cost", () => {
    const net = (seed: number) => randomEquation(20, 3, { dMin: 2, dMax: 10, seed });
    // CPU time of this process where the runtime tells it (the tests may share a busy
    // machine, where wall time also counts waiting for a core); wall time otherwise.
    const usage = (
      globalThis as { process?: { cpuUsage?: () => { user: number; system: number } } }
    ).process?.cpuUsage;
    const cpuMs = () => {
      const u = usage?.();
      return u ? (u.user + u.system) / 1000 : performance.now();
    };
    // Warm the JIT on other networks first.
    for (let s = 100; s < 104; s++) {
      const e = net(s);
      contractPath(e.equation, ...e.shapes, { strategy: "auto" });
      contractPath(e.equation, ...e.shapes, { strategy: "dp" });
    }
    const lines: string[] = [];
    for (let seed = 0; seed < 6; seed++) {
      const e = net(seed);
      const dp = contractPath(e.equation, ...e.shapes, { strategy: "dp" });
      let wall = Number.POSITIVE_INFINITY;
      let cpu = Number.POSITIVE_INFINITY;
      let auto = dp;
      // The best of 5 runs, up to 20 while over 25 ms (auto is deterministic: every run
      // finds the same path, so only the machine's load differs between runs).
      for (let rep = 0; rep < 20 && (rep < 5 || Math.min(wall, cpu) >= 25); rep++) {
        const c0 = cpuMs();
        const t0 = performance.now();
        auto = contractPath(e.equation, ...e.shapes, { strategy: "auto" });
        wall = Math.min(wall, performance.now() - t0);
        cpu = Math.min(cpu, cpuMs() - c0);
      }
      lines.push(
        `seed ${seed}: auto/dp ${(auto.optCost / dp.optCost).toFixed(3)}, auto ${wall.toFixed(2)} ms (cpu ${cpu.toFixed(2)} ms; ${auto.algorithm}), dp ${dp.searchMs.toFixed(1)} ms`,
      );
      expect(auto.optCost, lines.at(-1)).toBeLessThanOrEqual(dp.optCost * 1.1);
      expect(Math.min(wall, cpu), lines.at(-1)).toBeLessThan(25);
    }
    console.log(lines.join("\n"));
  });

  it("memoryLimit caps every intermediate", () => {
    const e = EXPRESSIONS.find((x) => x.name === "lattice-3x3-open")!;
    const free = contractPath(e.equation, ...e.shapes, { strategy: "greedy" });
    const limit = Math.floor(free.largestIntermediate / 4);
    for (const strategy of ["greedy", "dp", "optimal", "branch-2", "auto"] as const) {
      const info = contractPath(e.equation, ...e.shapes, { strategy, memoryLimit: limit });
      // The last step makes the output, which the limit does not cover.
      for (const s of info.steps.slice(0, -1)) expect(s.size).toBeLessThanOrEqual(limit);
    }
    const tiny = contractPath("ij,jk,kl->il", [4, 4], [4, 4], [4, 4], { memoryLimit: "maxInput" });
    expect(tiny.largestIntermediate).toBeLessThanOrEqual(16);
  });

  it("reports what opt_einsum reports for its documented example", () => {
    const info = contractPath(
      "ea,fb,abcd,gc,hd->efgh",
      [10, 10],
      [10, 10],
      [10, 10, 10, 10],
      [10, 10],
      [10, 10],
      { strategy: "optimal" },
    );
    expect(info.optCost).toBe(8e5);
    expect(info.largestIntermediate).toBe(1e4);
    expect(info.scaling).toBe(5);
    expect(info.naiveScaling).toBe(8);
    // opt_einsum's flop_count: 10^8 * (max(1, 5 - 1) + 1 for the inner product).
    expect(info.naiveCost).toBe(5e8);
    expect(info.steps).toHaveLength(4);
    const text = String(info);
    expect(text).toContain("Complete contraction:  ea,fb,abcd,gc,hd->efgh");
    expect(text).toContain("Optimized FLOP count:  8.000e+05");
    expect(text).toContain("Largest intermediate:  1.000e+04 elements");
    const chain = contractPath("ij,jk,kl->il", [2, 2], [2, 5], [5, 2]);
    expect(chain.path).toEqual([
      [1, 2],
      [0, 1],
    ]);
    expect(chain.optCost).toBe(56);
  });
});

describe("budgetMs bounds the exact strategies", () => {
  it("optimal and dp with outer products stop at the budget with the best path found", () => {
    // 24 operands, 4 indices each: the exact search took 5.7 s here (Zen 5); minutes for
    // some larger networks.
    const r = randomEquation(24, 4, { seed: 2, dMin: 2, dMax: 3 });
    const greedyCost = contractPath(r.equation, ...r.shapes, { strategy: "greedy" }).optCost;
    for (const opts of [
      { strategy: "optimal" as const, budgetMs: 20 },
      { strategy: "dp" as const, outer: true, budgetMs: 20 },
    ]) {
      const info = contractPath(r.equation, ...r.shapes, opts);
      expect(info.algorithm, opts.strategy).toMatch(/budget spent/);
      expect(info.optCost).toBeLessThanOrEqual(greedyCost);
      expect(info.path.length).toBe(23);
    }
    // The same path whatever the machine's load: the budget is counted as work, not time.
    const again = contractPath(r.equation, ...r.shapes, { strategy: "optimal", budgetMs: 20 });
    expect(again.path).toEqual(
      contractPath(r.equation, ...r.shapes, { strategy: "optimal", budgetMs: 20 }).path,
    );
  });
});
