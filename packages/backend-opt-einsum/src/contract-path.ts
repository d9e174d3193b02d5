/**
 * contractPath(equation, ...shapes, options): the path a strategy finds and what it
 * costs, as opt_einsum's `contract_path` reports it (same cost model, same linear path
 * format, a PathInfo that prints the same table).
 */
import { ArgumentError } from "@backplane/core";
import {
  type OptEinsumContractPathOptions,
  type OptEinsumPathInfo,
  type OptEinsumPathStep,
  type OptEinsumShapeLike,
  type OptEinsumStepKind,
  parseEinsum,
} from "@backplane/core/backend";
import {
  checkKnownOptions,
  checkSearchOptions,
  findPath,
  SEARCH_OPTIONS,
  type SearchOptions,
  STRATEGIES,
  type Strategy,
  show,
} from "./paths.ts";
import { buildProblem, flopCount, ssaToLinear } from "./problem.ts";

// The types of getOptEinsum()'s API are the core's (backends.optEinsum is typed with them).
export type Shape = readonly number[];
export type ShapeLike = OptEinsumShapeLike;
export type ContractPathOptions = OptEinsumContractPathOptions;
export type StepKind = OptEinsumStepKind;
export type PathStep = OptEinsumPathStep;

const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

function sci(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const [m, e] = x.toExponential(3).split("e");
  const sign = e.startsWith("-") ? "-" : "+";
  const digits = e.replace(/^[+-]/, "");
  return `${m}e${sign}${digits.padStart(2, "0")}`;
}

// The fields are the core's OptEinsumPathInfo (documented there), set by the constructor:
// one declaration of them, not two.
export interface PathInfo extends OptEinsumPathInfo {}
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: every member is assigned in the constructor
export class PathInfo {
  constructor(fields: Omit<OptEinsumPathInfo, "toString">) {
    Object.assign(this, fields);
  }

  /** The table opt_einsum's PathInfo prints. */
  toString(): string {
    const rule = "-".repeat(80);
    const lines = [
      `  Complete contraction:  ${this.equation}`,
      `         Naive scaling:  ${this.naiveScaling}`,
      `     Optimized scaling:  ${this.scaling}`,
      `      Naive FLOP count:  ${sci(this.naiveCost)}`,
      `  Optimized FLOP count:  ${sci(this.optCost)}`,
      `   Theoretical speedup:  ${this.speedup.toFixed(3)}`,
      `  Largest intermediate:  ${sci(this.largestIntermediate)} elements`,
      `         Path strategy:  ${this.algorithm} (${this.searchMs.toFixed(3)} ms)`,
      rule,
      `${"scaling".padStart(6)} ${"BLAS".padStart(11)} ${"current".padStart(22)} ${"remaining".padStart(37)}`,
      rule,
    ];
    for (const s of this.steps) {
      lines.push(
        `${String(s.scaling).padStart(4)} ${s.kind.padStart(14)} ${s.einsum.padStart(22)} ${s.remaining.padStart(37)}`,
      );
    }
    return lines.join("\n");
  }
}

/** Splits contractPath's arguments into shapes and options. */
export function splitArgs(args: readonly unknown[]): {
  shapes: number[][];
  opts: ContractPathOptions;
} {
  let opts: ContractPathOptions = {};
  let list = args;
  const last = args[args.length - 1];
  if (
    last !== null &&
    typeof last === "object" &&
    !Array.isArray(last) &&
    !ArrayBuffer.isView(last) &&
    !("shape" in (last as object))
  ) {
    opts = last as ContractPathOptions;
    list = args.slice(0, -1);
  }
  const shapes = list.map((s, i) => {
    const shape = Array.isArray(s) ? s : (s as { shape?: unknown })?.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && (d as number) >= 0)) {
      throw new ArgumentError(
        `contractPath: operand ${i} must be a shape (an array of integers >= 0) or a tensor, got ${JSON.stringify(s)}`,
      );
    }
    return [...(shape as number[])];
  });
  return { shapes, opts };
}

function memoryArg(
  limit: ContractPathOptions["memoryLimit"],
  inputs: string[][],
  output: string[],
  sizes: Record<string, number>,
): number {
  if (limit === undefined || limit === -1) return Number.POSITIVE_INFINITY;
  if (limit === "maxInput" || limit === "max_input") {
    const sz = (ls: string[]) => [...new Set(ls)].reduce((a, l) => a * sizes[l], 1);
    return Math.max(...inputs.map(sz), sz(output));
  }
  if (typeof limit !== "number" || !(limit >= 1)) {
    throw new ArgumentError(
      `contractPath: memoryLimit must be a number >= 1, -1 (none) or "maxInput", got ${show(limit)}`,
    );
  }
  return Math.floor(limit);
}

export function checkStrategy(s: unknown): asserts s is Strategy {
  if (!(STRATEGIES as readonly unknown[]).includes(s)) {
    throw new ArgumentError(
      `unknown opt_einsum strategy ${JSON.stringify(s)}; expected one of ${STRATEGIES.join(", ")} or an explicit path`,
    );
  }
}

export interface Parsed {
  inputs: string[][];
  output: string[];
  sizes: Record<string, number>;
}

/** The linear path a strategy finds for parsed labels (what the kernel caches). */
export function searchPath(
  parsed: Parsed,
  strategy: Strategy,
  opts: SearchOptions = {},
  limit = Number.POSITIVE_INFINITY,
): { path: number[][]; algorithm: string } {
  const n = parsed.inputs.length;
  if (n === 1) return { path: [[0]], algorithm: strategy };
  const p = buildProblem(parsed.inputs, parsed.output, parsed.sizes, limit);
  const r = findPath(p, strategy, opts);
  return { path: ssaToLinear(n, r.ssa), algorithm: r.algorithm };
}

function checkPath(path: readonly (readonly number[])[], n: number): number[][] {
  let live = n;
  const out = path.map((step, t) => {
    if (
      !Array.isArray(step) ||
      step.length === 0 ||
      !step.every((x) => Number.isInteger(x) && x >= 0 && x < live) ||
      new Set(step).size !== step.length
    ) {
      throw new ArgumentError(
        `contractPath: step ${t} of the path (${JSON.stringify(step)}) must list distinct positions below ${live}`,
      );
    }
    live -= step.length - 1;
    return [...step];
  });
  if (live !== 1) {
    throw new ArgumentError(
      `contractPath: the path leaves ${live} operands; it must contract all ${n} into one`,
    );
  }
  return out;
}

/** A label the equation names (a letter), not one of the dimensions "..." covers. */
const isLetter = (l: string): boolean => /^[a-zA-Z]$/.test(l);

/** Display names: "..." labels (never letters) become letters the equation does not use. */
function displayNames(parsed: Parsed): (l: string) => string {
  const used = new Set(Object.keys(parsed.sizes).filter(isLetter));
  const free = [...LETTERS].filter((c) => !used.has(c));
  const names = new Map<string, string>();
  let extra = 0;
  return (l: string) => {
    if (isLetter(l)) return l;
    let name = names.get(l);
    if (!name) {
      name = free.shift() ?? String.fromCharCode(0x3b1 + extra++);
      names.set(l, name);
    }
    return name;
  };
}

function kindOf(inputs: string[][], kept: Set<string>): StepKind {
  if (inputs.length === 1) return "SUM";
  if (inputs.length > 2) return "EINSUM";
  const [a, b] = inputs.map((x) => new Set(x));
  let batch = 0;
  let m = 0;
  let n = 0;
  let k = 0;
  for (const l of a) {
    if (b.has(l)) {
      if (kept.has(l)) batch++;
      else k++;
    } else if (kept.has(l)) m++;
  }
  for (const l of b) if (!a.has(l) && kept.has(l)) n++;
  if (k === 0) return m === 0 && n === 0 ? "HADAMARD" : "OUTER";
  if (batch > 0) return "BMM";
  if (m === 0 && n === 0) return "DOT";
  if (m === 0 || n === 0) return "GEMV";
  return "GEMM";
}

/** Builds the PathInfo of a linear path over parsed labels. */
export function pathInfo(
  parsed: Parsed,
  shapes: number[][],
  path: number[][],
  strategy: string,
  algorithm: string,
  searchMs: number,
): PathInfo {
  const name = displayNames(parsed);
  const { sizes, output } = parsed;
  const sizeOf = (ls: Iterable<string>) => {
    let s = 1;
    for (const l of ls) s *= sizes[l];
    return s;
  };
  const inputSubscripts = parsed.inputs.map((ls) => ls.map(name).join("")).join(",");
  const outputSubscript = output.map(name).join("");
  const indices = new Set(Object.keys(sizes));
  const sets = parsed.inputs.map((ls) => new Set(ls));
  const naiveInner = sets.reduce((a, s) => a + s.size, 0) - indices.size > 0;
  const naiveCost = flopCount(sizeOf(indices), naiveInner, parsed.inputs.length);
  let terms = parsed.inputs.map((ls) => [...ls]);
  let live = sets.map((s) => s);
  const outSet = new Set(output);
  const steps: PathStep[] = path.map((positions, t) => {
    const inTerms = positions.map((q) => terms[q]);
    const contract = new Set<string>();
    for (const q of positions) for (const l of live[q]) contract.add(l);
    const restSets = live.filter((_, q) => !positions.includes(q));
    const restTerms = terms.filter((_, q) => !positions.includes(q));
    const keep = new Set(outSet);
    for (const s of restSets) for (const l of s) keep.add(l);
    const kept = new Set([...contract].filter((l) => keep.has(l)));
    const removed = [...contract].filter((l) => !keep.has(l));
    const last = t === path.length - 1;
    // opt_einsum's order for intermediates: first appearance in the step's inputs.
    const all = inTerms.flat();
    const resTerm = last ? [...output] : [...kept].sort((x, y) => all.indexOf(x) - all.indexOf(y));
    live = [...restSets, kept];
    terms = [...restTerms, resTerm];
    const str = (ts: string[][]) => ts.map((x) => x.map(name).join("")).join(",");
    return {
      operands: [...positions],
      einsum: `${str(inTerms)}->${resTerm.map(name).join("")}`,
      remaining: `${str(terms)}->${outputSubscript}`,
      removed: removed.map(name).join(""),
      cost: flopCount(sizeOf(contract), removed.length > 0, positions.length),
      scaling: contract.size,
      size: sizeOf(kept),
      kind: kindOf(inTerms, kept),
    };
  });
  const optCost = steps.reduce((a, s) => a + s.cost, 0);
  return new PathInfo({
    equation: `${inputSubscripts}->${outputSubscript}`,
    inputSubscripts,
    outputSubscript,
    path,
    steps,
    naiveCost,
    optCost,
    speedup: optCost === 0 ? (naiveCost === 0 ? 1 : Number.POSITIVE_INFINITY) : naiveCost / optCost,
    largestIntermediate: steps.reduce((a, s) => Math.max(a, s.size), 0) || 1,
    scaling: steps.reduce((a, s) => Math.max(a, s.scaling), 0),
    naiveScaling: indices.size,
    sizes: Object.fromEntries(Object.entries(sizes).map(([l, s]) => [name(l), s])),
    shapes,
    strategy,
    algorithm,
    searchMs,
  });
}

const now = (): number => (typeof performance !== "undefined" ? performance.now() : Date.now());

/**
 * opt_einsum's contract_path: `contractPath("ij,jk,kl->il", [2, 2], [2, 5], [5, 2])`,
 * with an options object last: `{ strategy: "dp", memoryLimit: 1e6 }`. Tensors may be
 * passed instead of shapes.
 */
export function contractPath(
  equation: string,
  ...args: (ShapeLike | ContractPathOptions)[]
): PathInfo {
  const { shapes, opts } = splitArgs(args);
  // Checked whatever the strategy, so a bad option is never silently ignored.
  checkSearchOptions(opts, "contractPath");
  checkKnownOptions(opts, "contractPath", [...SEARCH_OPTIONS, "strategy", "memoryLimit"]);
  const parsed = parseEinsum(equation, shapes);
  const limit = memoryArg(opts.memoryLimit, parsed.inputs, parsed.output, parsed.sizes);
  const strategy = opts.strategy ?? "auto";
  const n = shapes.length;
  const t0 = now();
  let path: number[][];
  let algorithm: string;
  if (Array.isArray(strategy)) {
    path = checkPath(strategy, n);
    algorithm = "explicit";
  } else {
    checkStrategy(strategy);
    const r = searchPath(parsed, strategy as Strategy, opts, limit);
    path = r.path;
    algorithm = r.algorithm;
  }
  const ms = now() - t0;
  return pathInfo(
    parsed,
    shapes,
    path,
    Array.isArray(strategy) ? "explicit" : (strategy as string),
    algorithm,
    ms,
  );
}
