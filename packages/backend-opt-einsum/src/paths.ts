/**
 * The strategies, each a function Problem -> SSA path with its cost:
 * greedy, random-greedy, branch-*, dp, optimal, and auto / auto-hq that choose among
 * them by operand count and spend a time budget on the best ones.
 */

import { ArgumentError } from "@backplane/core";
import type { OptEinsumSearchOptions } from "@backplane/core/backend";
import { branchBound } from "./branch.ts";
import { components, denseDP, sparseDP } from "./dp.ts";
import { type Found, Greedy, leftToRight, singleCost } from "./greedy.ts";
import { type Problem, reduceLeaves, type SsaPath, ssaCost } from "./problem.ts";
import { reconfigure } from "./reconfigure.ts";

export const STRATEGIES = [
  "auto",
  "auto-hq",
  "optimal",
  "dp",
  "greedy",
  "random-greedy",
  "branch-all",
  "branch-2",
  "branch-1",
] as const;
export type Strategy = (typeof STRATEGIES)[number];

/** seed, repeats, outer, budgetMs (the core's contract for getOptEinsum()'s API). */
export type SearchOptions = OptEinsumSearchOptions;

/** The keys of SearchOptions. */
export const SEARCH_OPTIONS = ["seed", "repeats", "outer", "budgetMs"] as const;

export interface SearchResult extends Found {
  /** The algorithm that produced the path ("auto" resolves to what it ran). */
  algorithm: string;
}

/** Operands up to which dp and auto solve exactly with the dense table. */
const DENSE_AUTO = 11;
const DENSE_MAX = 16;

const now = (): number => (typeof performance !== "undefined" ? performance.now() : Date.now());

/** A seeded PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function trivial(p: Problem): Found | undefined {
  if (p.n === 1) return { ssa: [[0]], cost: singleCost(p) };
  if (p.n === 2) return { ssa: [[0, 1]], cost: ssaCost(p, [[0, 1]]).cost };
  return undefined;
}

function better(a: Found | undefined, b: Found | undefined): Found | undefined {
  if (!a) return b;
  if (!b) return a;
  return b.cost < a.cost ? b : a;
}

/**
 * Greedy: opt_einsum's "memory removed" greedy, a variant scored by result size, and
 * torch's left-to-right order; the cheapest of the three (never worse than torch).
 */
export function greedy(p: Problem): Found {
  const t = trivial(p);
  if (t) return t;
  const g = new Greedy(p);
  let best = g.run({ score: "memory" })!;
  best = better(best, g.run({ score: "size", bound: best.cost }))!;
  const ltr = leftToRight(p.n);
  const c = ssaCost(p, ltr);
  if (c.cost < best.cost && (c.largest <= p.limit || !Number.isFinite(p.limit)))
    best = { ssa: ltr, cost: c.cost };
  // One cheap pass of reconfiguration (windows of 6: 364 DP iterations each).
  return reconfigure(p, best, { k: 6, maxPasses: 1 });
}

/**
 * Random greedy: greedy first, then trials that draw each step among the 8 best
 * candidates (Boltzmann weights at a temperature drawn per trial), each abandoned once
 * it costs 30% more than the best so far; the `polish` cheapest distinct results are
 * reconfigured (default 4) and the cheapest kept.
 */
export function randomGreedy(
  p: Problem,
  opts: { seed?: number; repeats?: number; deadline?: number; start?: Found; polish?: number } = {},
): Found {
  const t = trivial(p);
  if (t) return t;
  const first = better(opts.start, greedy(p))!;
  const g = new Greedy(p);
  const rng = prng(opts.seed ?? 0);
  const repeats = opts.repeats ?? 32;
  const deadline = opts.deadline ?? Number.POSITIVE_INFINITY;
  const polish = opts.polish ?? 4;
  const top: Found[] = [first];
  for (let r = 0; r < repeats; r++) {
    if (r % 4 === 0 && now() > deadline) break;
    // Temperatures log-uniform in [0.01, 1]; scores alternate between the two greedy kinds.
    const temperature = 10 ** (-2 * rng());
    const found = g.run({
      score: r % 3 === 2 ? "size" : "memory",
      rng,
      temperature,
      bound: top[0].cost * (polish > 0 ? 1.3 : 1),
    });
    if (!found || top.some((x) => x.cost === found.cost)) continue;
    top.push(found);
    top.sort((a, b) => a.cost - b.cost);
    if (top.length > Math.max(1, polish)) top.length = Math.max(1, polish);
  }
  if (polish === 0) return top[0];
  let best = top[0];
  for (const f of top.slice(0, polish)) {
    const r = reconfigure(p, f, { maxPasses: 4 });
    if (r.cost < best.cost) best = r;
  }
  return best;
}

export function branch(p: Problem, nbranch: number | undefined): Found {
  const t = trivial(p);
  if (t) return t;
  return branchBound(p, greedy(p), { nbranch });
}

/** Appends a sub-problem's SSA path to `out`, mapping its ids; returns the id of its result. */
function embed(
  out: SsaPath,
  local: SsaPath,
  leaves: readonly number[],
  next: { id: number },
): number {
  const map = [...leaves];
  let last = leaves[0];
  for (const step of local) {
    out.push(step.map((i) => map[i]));
    map.push(next.id);
    last = next.id++;
  }
  return last;
}

/**
 * Solves each connected component with `solve`, then joins the components' results
 * (exactly with the dense table when there are at most 16, else cheapest pair first).
 */
function byComponents(p: Problem, solve: (sub: Problem) => Found): Found {
  const comps = components(p);
  if (comps.length === 1) return solve(p);
  const ssa: SsaPath = [];
  const next = { id: p.n };
  const results: number[] = [];
  for (const comp of comps) {
    if (comp.length === 1) {
      results.push(comp[0]);
      continue;
    }
    results.push(embed(ssa, solve(p.sub(comp)).ssa, comp, next));
  }
  // Labels of each component's result: its operands' labels that the output keeps.
  const W = p.W;
  const sets = new Uint32Array(comps.length * W);
  comps.forEach((comp, c) => {
    for (const i of comp) for (let w = 0; w < W; w++) sets[c * W + w] |= p.sets[i * W + w];
    if (comp.length > 1) for (let w = 0; w < W; w++) sets[c * W + w] &= p.out[w];
  });
  const top = p.withSets(sets);
  const join = comps.length <= DENSE_MAX ? (denseDP(top) ?? greedy(top)) : greedy(top);
  embed(ssa, join.ssa, results, next);
  return { ssa, cost: ssaCost(p, ssa).cost };
}

/** The exact optimum: the dense table up to 16 operands, the sparse exact search beyond. */
export function optimal(p: Problem, budget?: number): SearchResult {
  const t = trivial(p);
  if (t) return { ...t, algorithm: "optimal" };
  const ub = greedy(p);
  if (p.n <= DENSE_MAX) return { ...(denseDP(p, ub.cost) ?? ub), algorithm: "optimal" };
  if (p.n <= 31) {
    const start = reconfigure(p, randomGreedy(p, { repeats: 64, start: ub }), { maxPasses: 3 });
    const r = sparseDP(p, { outer: true, cap: start.cost, budget });
    if (r === "budget")
      return { ...start, algorithm: "optimal (budget spent: random-greedy + reconfigure)" };
    return { ...(r ?? start), algorithm: "optimal" };
  }
  const r = dp(p, { outer: false });
  return { ...r, algorithm: `optimal (${p.n} operands: ${r.algorithm})` };
}

/**
 * Dynamic programming: exact (outer products included) when `outer` is true, or "auto"
 * and at most 11 operands; otherwise opt_einsum's dp, without outer products inside a
 * connected component, on each component, capped by the cost of the reconfigured greedy
 * path (and never worse than it).
 */
export function dp(
  p: Problem,
  opts: { outer?: boolean | "auto"; budget?: number } = {},
): SearchResult {
  const t = trivial(p);
  if (t) return { ...t, algorithm: "dp" };
  const outer = opts.outer ?? "auto";
  if (outer === true) {
    const r = optimal(p, opts.budget);
    return { ...r, algorithm: r.algorithm.replace(/^optimal/, "dp") };
  }
  if (outer === "auto" && p.n <= DENSE_AUTO) {
    return { ...(denseDP(p, greedy(p).cost) ?? greedy(p)), algorithm: "dp" };
  }
  let fellBack = false;
  const found = byComponents(p, (sub) => {
    if (outer === "auto" && sub.n <= DENSE_AUTO)
      return denseDP(sub, greedy(sub).cost) ?? greedy(sub);
    // Any path's cost caps the search; a reconfigured greedy path is a tight one.
    const ub = reconfigure(sub, greedy(sub), { maxPasses: 3 });
    if (sub.n > 31) {
      fellBack = true;
      return reconfigure(sub, randomGreedy(sub, { repeats: 128, start: ub }), { maxPasses: 3 });
    }
    const r = sparseDP(sub, { outer: false, cap: ub.cost, budget: opts.budget });
    if (r === "budget") {
      fellBack = true;
      return ub;
    }
    return r ?? ub;
  });
  return { ...found, algorithm: fellBack ? "dp (random-greedy beyond 31 operands)" : "dp" };
}

/**
 * auto's time budget is spent as work budgets, never by reading a clock, so a path does
 * not depend on how loaded the machine is: the same expression always gets the same path.
 * The rates, measured on a 2-core x64 VM: sparse-search units per ms (a pair checked: 1,
 * a pair priced: 4), about 110k with up to 32 distinct index groups and 40k above;
 * reconfiguration units (dense-DP iterations, 3000 per window) per ms; one greedy trial
 * takes about n^1.5 microseconds for n operands.
 */
const unitsPerMs = (W: number) => (W === 1 ? 110_000 : 40_000);
/** budgetMs as the sparse search's work units (none: no limit, the exact search runs out). */
const workBudget = (p: Problem, budgetMs: number | undefined) =>
  budgetMs === undefined ? undefined : budgetMs * unitsPerMs(p.W);
const RECONF_PER_MS = 100_000;
const trialMs = (n: number) => n ** 1.5 / 1000;

/**
 * One connected component under auto: exact up to `dense` operands. Otherwise: greedy,
 * reconfigured (one pass, up to ~15% of the budget); the dp capped by that cost (~50%;
 * its optimum when it finishes); if it does not finish (or above 31 operands, where it
 * does not run), random-greedy trials, the best reconfigured, then with wider windows.
 */
function autoComponent(p: Problem, budgetMs: number, dense: number): Found & { how: string } {
  if (p.n <= dense) {
    const ub = greedy(p);
    return { ...(denseDP(p, ub.cost) ?? ub), how: "optimal" };
  }
  const units = (share: number) => budgetMs * share * RECONF_PER_MS;
  let best = reconfigure(p, greedy(p), { maxPasses: 4, minPasses: 1, budget: units(0.15) });
  if (p.n <= 31) {
    const r = sparseDP(p, {
      outer: false,
      cap: best.cost,
      budget: budgetMs * 0.5 * unitsPerMs(p.W),
    });
    if (r !== "budget") {
      if (r && r.cost < best.cost) return { ...r, how: "dp" };
      return { ...best, how: "greedy + reconfigure (dp: no cheaper path)" };
    }
  }
  // Above 31 operands there is no dp: its share goes to the trials.
  const trials = budgetMs * (p.n <= 31 ? 0.08 : 0.5);
  const repeats = Math.max(4, Math.round(trials / trialMs(p.n)));
  const rg = randomGreedy(p, { repeats, start: best, polish: 0 });
  if (rg.cost < best.cost)
    best = reconfigure(p, rg, { maxPasses: 4, minPasses: 1, budget: units(0.08) });
  best = reconfigure(p, best, { k: 10, maxPasses: 1, budget: units(0.08) });
  return { ...best, how: "random-greedy + reconfigure" };
}

/**
 * auto / auto-hq: trivial for 1-2 operands, exact up to 11 (14 for auto-hq) operands,
 * and beyond that each connected component gets a share of the budget (10 ms / 100 ms,
 * as work, by operand count): see autoComponent.
 */
export function auto(p: Problem, budgetMs: number, hq: boolean): SearchResult {
  const name = hq ? "auto-hq" : "auto";
  const t = trivial(p);
  if (t) return { ...t, algorithm: `${name}: trivial` };
  const dense = hq ? 14 : DENSE_AUTO;
  if (p.n <= dense) {
    // Few operands: the exact optimum over the whole expression, components and all.
    const ub = greedy(p);
    return { ...(denseDP(p, ub.cost) ?? ub), algorithm: `${name}: optimal` };
  }
  const hows = new Set<string>();
  const found = byComponents(p, (sub) => {
    const r = autoComponent(sub, (budgetMs * sub.n) / p.n, dense);
    hows.add(r.how);
    return r;
  });
  return { ...found, algorithm: `${name}: ${[...hows].join("; ")}` };
}

/**
 * Throws an ArgumentError naming the first bad search option: an unbounded `repeats` or a
 * NaN budget would make a search never return, and a silently coerced seed hides a typo.
 */
export function checkSearchOptions(
  opts: unknown,
  where = "contractPath",
): asserts opts is SearchOptions {
  if (opts === undefined) return;
  if (opts === null || typeof opts !== "object" || Array.isArray(opts)) {
    throw new ArgumentError(`${where}: options must be an object, got ${show(opts)}`);
  }
  const o = opts as Record<string, unknown>;
  const bad = (name: string, want: string) =>
    new ArgumentError(`${where}: option ${name} must be ${want}, got ${show(o[name])}`);
  if (o.seed !== undefined && !Number.isSafeInteger(o.seed)) throw bad("seed", "an integer");
  if (o.repeats !== undefined && !(Number.isSafeInteger(o.repeats) && (o.repeats as number) >= 1))
    throw bad("repeats", "a finite integer >= 1");
  if (o.outer !== undefined && typeof o.outer !== "boolean" && o.outer !== "auto")
    throw bad("outer", 'true, false or "auto"');
  if (
    o.budgetMs !== undefined &&
    !(typeof o.budgetMs === "number" && Number.isFinite(o.budgetMs) && o.budgetMs >= 0)
  )
    throw bad("budgetMs", "a finite number of milliseconds >= 0");
}

/**
 * Rejects option keys `where` does not know: a misspelled { stratgy: "dp" }, or a
 * memoryLimit given to contract(), which has none, was silently ignored.
 */
export function checkKnownOptions(opts: object, where: string, known: readonly string[]): void {
  for (const key of Object.keys(opts)) {
    if (!known.includes(key))
      throw new ArgumentError(`${where}: unknown option ${show(key)}; known: ${known.join(", ")}`);
  }
}

/** A value as a message shows it: NaN and Infinity as themselves (JSON says null). */
export function show(v: unknown): string {
  if (typeof v === "number" || typeof v === "bigint" || v === undefined) return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

export function findPath(p: Problem, strategy: Strategy, opts: SearchOptions = {}): SearchResult {
  checkSearchOptions(opts, "findPath");
  const r = search(p, strategy, opts);
  // Inputs that sum their own indices first where that is cheaper (exact per tree).
  const reduced = reduceLeaves(p, r.ssa);
  return { ...r, ...reduced };
}

function search(p: Problem, strategy: Strategy, opts: SearchOptions): SearchResult {
  switch (strategy) {
    case "greedy":
      return { ...greedy(p), algorithm: "greedy" };
    case "random-greedy": {
      const deadline = opts.budgetMs === undefined ? undefined : now() + opts.budgetMs;
      return {
        ...randomGreedy(p, { seed: opts.seed, repeats: opts.repeats, deadline }),
        algorithm: "random-greedy",
      };
    }
    case "branch-all":
      return { ...branch(p, undefined), algorithm: "branch-all" };
    case "branch-2":
      return { ...branch(p, 2), algorithm: "branch-2" };
    case "branch-1":
      return { ...branch(p, 1), algorithm: "branch-1" };
    case "dp":
      return dp(p, { outer: opts.outer, budget: workBudget(p, opts.budgetMs) });
    case "optimal":
      return optimal(p, workBudget(p, opts.budgetMs));
    case "auto":
      return auto(p, opts.budgetMs ?? 10, false);
    case "auto-hq":
      return auto(p, opts.budgetMs ?? 100, true);
  }
}
