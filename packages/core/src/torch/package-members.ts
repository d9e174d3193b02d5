/**
 * What the built-in backend packages add to the namespaces the core declares:
 * backend-nnpack's algorithmFor() and weight-transform cache on backends.nnpack, the path
 * API backend-opt-einsum's backends.optEinsum.getOptEinsum() returns, backend-cudnn's plan
 * cache and diagnostics, backend-webgpu's buffer pool. The contract
 * lives here, beside Backends, so `backends.nnpack.algorithmFor(x, w)` and
 * `getOptEinsum().contractPath(...)` are typed for npm and JSR users alike: a third-party
 * package types its namespace by augmenting Backends (docs/writing-a-backend.md), which JSR
 * refuses in a published package. Each package implements these types and exports them under
 * its own names, so the two cannot drift.
 */
import type { BuiltinFlagSchemas } from "../flags/builtin.ts";
import type { FlagValues } from "../flags/spec.ts";
import type { Conv2dOptions } from "../ops/conv2d.ts";
import type { Tensor } from "../tensor/tensor.ts";

// ---- backends.nnpack: @backplane/backend-nnpack ----

/** backend-nnpack's conv2d algorithms: Winograd, FFT, im2col + matmul, direct. */
export type NnpackAlgorithm = "wt8x8" | "wt6x6" | "ft8x8" | "ft16x16" | "implicit-gemm" | "direct";

/** The cache of transformed weights (NNPACK's precompute strategy). */
export interface NnpackTransformCacheInfo {
  enabled: boolean;
  entries: number;
  bytes: number;
  limitBytes: number;
  hits: number;
  misses: number;
}

/** Members @backplane/backend-nnpack adds to backends.nnpack. */
export interface NnpackMembers {
  /** The algorithm the "auto" kernel would run for conv2d(input, weight, opts). */
  algorithmFor(input: Tensor, weight: Tensor, opts?: Conv2dOptions): NnpackAlgorithm;
  /** Frees every cached transform. */
  clearTransformCache(): void;
  transformCacheInfo(): NnpackTransformCacheInfo;
  /** Bytes the cache may hold (default 256 MiB); 0 turns caching off. Returns the previous limit. */
  setTransformCacheLimit(bytes: number): number;
  /** Turns the cache on or off without dropping what it holds. Returns the previous setting. */
  setTransformCacheEnabled(on: boolean): boolean;
}

// ---- backends.optEinsum.getOptEinsum(): @backplane/backend-opt-einsum ----

/** A path-finding strategy: the values of the optEinsum.strategy flag. */
export type OptEinsumStrategy = FlagValues<BuiltinFlagSchemas["optEinsum"]["strategy"]>;

export interface OptEinsumSearchOptions {
  /** Seed of random-greedy's draws (default 0). */
  seed?: number;
  /** random-greedy trials (default 32, like opt_einsum's random-greedy). */
  repeats?: number;
  /** dp: also try splits into halves that share no index ("auto": when exact is cheap). */
  outer?: boolean | "auto";
  /** auto / auto-hq / random-greedy: time budget in ms (defaults 10 / 100 / none). */
  budgetMs?: number;
}

export interface OptEinsumContractPathOptions extends OptEinsumSearchOptions {
  /** A strategy name, or an explicit path in opt_einsum's linear form. Default: the
   * backends.optEinsum.strategy flag's default, "auto". */
  strategy?: OptEinsumStrategy | readonly (readonly number[])[];
  /** Largest intermediate allowed, in elements; "maxInput": the largest input (or output). */
  memoryLimit?: number | "maxInput" | "max_input";
}

/** An operand's shape, or anything with one (a Tensor). */
export type OptEinsumShapeLike = readonly number[] | { readonly shape: readonly number[] };

/** How the executor runs a step (opt_einsum's BLAS column). */
export type OptEinsumStepKind =
  | "GEMM"
  | "BMM"
  | "GEMV"
  | "DOT"
  | "OUTER"
  | "HADAMARD"
  | "SUM"
  | "EINSUM";

export interface OptEinsumPathStep {
  /** Positions in the current operand list (one entry of `path`). */
  operands: number[];
  /** This step as an einsum, e.g. "kl,jk->jl". */
  einsum: string;
  /** What is left afterwards, e.g. "ij,jl->il". */
  remaining: string;
  /** Indices summed away by this step. */
  removed: string;
  /** Cost (opt_einsum's flop_count). */
  cost: number;
  /** Distinct indices the step touches. */
  scaling: number;
  /** Elements of the step's result. */
  size: number;
  kind: OptEinsumStepKind;
}

/** What contractPath() returns: opt_einsum's PathInfo; String(info) is its table. */
export interface OptEinsumPathInfo {
  /** The explicit equation, "..." spelled with unused letters. */
  readonly equation: string;
  readonly inputSubscripts: string;
  readonly outputSubscript: string;
  /** opt_einsum's linear path: each step lists positions in the current operand list. */
  readonly path: number[][];
  readonly steps: OptEinsumPathStep[];
  readonly naiveCost: number;
  readonly optCost: number;
  /** naiveCost / optCost. */
  readonly speedup: number;
  /** Elements of the largest intermediate (step results, the output included). */
  readonly largestIntermediate: number;
  /** Distinct indices of the widest step (opt_einsum's "optimized scaling"). */
  readonly scaling: number;
  /** Distinct indices of the whole expression. */
  readonly naiveScaling: number;
  readonly sizes: Readonly<Record<string, number>>;
  readonly shapes: number[][];
  /** The strategy asked for ("explicit" for a given path). */
  readonly strategy: string;
  /** What ran, e.g. "auto: optimal". */
  readonly algorithm: string;
  /** Time spent finding the path, in ms. */
  readonly searchMs: number;
  /** The table opt_einsum's PathInfo prints. */
  toString(): string;
}

export interface OptEinsumRandomEquationOptions {
  /** Indices that stay in the output (default 0: a scalar result). */
  nOut?: number;
  /** Index sizes are drawn uniformly from [dMin, dMax] (default 2..9). */
  dMin?: number;
  dMax?: number;
  seed?: number;
  /** Add one index held by every operand and the output (a batch dimension). */
  globalDim?: boolean;
}

export interface OptEinsumRandomEquation {
  equation: string;
  shapes: number[][];
  sizes: Record<string, number>;
}

/** The einsum kernel's path cache. */
export interface OptEinsumPathCacheInfo {
  size: number;
  maxSize: number;
  hits: number;
  misses: number;
}

/** What backends.optEinsum.getOptEinsum() returns (torch returns the opt_einsum module). */
export interface OptEinsumApi {
  /**
   * opt_einsum.contract_path: `contractPath("ij,jk,kl->il", [2, 2], [2, 5], [5, 2])`, with an
   * options object last (`{ strategy: "dp", memoryLimit: 1e6 }`); tensors may stand for shapes.
   */
  contractPath(
    equation: string,
    ...args: (OptEinsumShapeLike | OptEinsumContractPathOptions)[]
  ): OptEinsumPathInfo;
  /** opt_einsum.contract: evaluate along a strategy's path or an explicit one. */
  contract(
    equation: string,
    ...args: (
      | Tensor
      | Pick<OptEinsumContractPathOptions, "strategy" | "seed" | "repeats" | "outer" | "budgetMs">
    )[]
  ): Tensor;
  /** A seeded random tensor network (opt_einsum.helpers.rand_equation). */
  randomEquation(
    n: number,
    reg: number,
    opts?: OptEinsumRandomEquationOptions,
  ): OptEinsumRandomEquation;
  strategies: readonly OptEinsumStrategy[];
  /** The kernel's path cache. */
  pathCacheInfo(): OptEinsumPathCacheInfo;
  clearPathCache(): void;
  version: string;
}

// ---- backends.cudnn: @backplane/backend-cudnn ----

/** Where libcudnn was found, its version, or why not. */
export interface CudnnLibraryStatus {
  /** Where libcudnn was loaded from. */
  path?: string;
  /** cudnnGetVersion(), e.g. 92400. */
  version?: number;
  /** The CUDA runtime it was built against, e.g. 13030. */
  cudartVersion?: number;
  /** Where libcublasLt was found, or why not. */
  cublasLt?: { path?: string; reason?: string };
  /** Why the library is unusable. */
  reason?: string;
  /** The search behind the reason. */
  detail?: string;
}

/** What a cached plan is, for users: the problem, the engine and how it was chosen. */
export interface CudnnPlanSummary {
  /** The problem: op, device, dtype, layout, shapes, flags (as the cache keys it). */
  readonly key: string;
  /** cuDNN's engine index (the heuristics' list position). */
  readonly engine: number;
  readonly chosenBy: "heuristics" | "benchmark";
  readonly workspaceBytes: number;
  /** Engines left out, and why (flags, or cuDNN refusing the plan). */
  readonly excluded: readonly { index: number; reason: string }[];
  /** Benchmark timings in ms, by engine (empty unless chosen by benchmark). */
  readonly timings: readonly { engine: number; ms: number }[];
}

/** Members @backplane/backend-cudnn adds to backends.cudnn. */
export interface CudnnMembers {
  /** Where libcudnn and libcublasLt were found, their versions, or why not. */
  diagnostics(): CudnnLibraryStatus & { planCacheSize: number };
  /** Drops every cached execution plan (they are rebuilt on next use). */
  clearPlanCache(): void;
  /** Every cached plan, least recently used first: its problem key and the engine chosen. */
  plans(): CudnnPlanSummary[];
}

// ---- backends.webgpu: @backplane/backend-webgpu ----

/** A buffer pool's counters (GPU buffers, not tensors). */
export interface WebGPUPoolCounters {
  /** GPU buffers created since the device opened. */
  created: number;
  /** GPU buffers destroyed (pool over its limit, emptyCache(), device closed). */
  destroyed: number;
  /** Requests served. */
  requests: number;
  /** Requests served by a pooled buffer (no createBuffer). */
  reused: number;
  /** Buffers handed out and not yet returned, and their size-class bytes. */
  liveBuffers: number;
  liveBytes: number;
  /** Buffers waiting in the pool, and their bytes. */
  pooledBuffers: number;
  pooledBytes: number;
  /** Highest liveBytes + pooledBytes since the device opened (or resetPeak()). */
  peakBytes: number;
}

export interface WebGPUPoolStats extends WebGPUPoolCounters {
  /** Most bytes the pool keeps for reuse. */
  limitBytes: number;
  /** The MAP_READ staging buffers downloads copy through. */
  staging: WebGPUPoolCounters;
}

/**
 * Members @backplane/backend-webgpu adds to backends.webgpu that the core can type (its
 * configure(), reinitialize() and device() speak of WebGPU's own types: import them from
 * the package).
 */
export interface WebGPUMembers {
  /** The buffer pool's counters (GPU buffers, not tensors: memoryStats("webgpu") counts those). */
  poolStats(): WebGPUPoolStats;
  /** Destroys every pooled (unused) buffer, as torch.cuda.empty_cache(). Returns the bytes freed. */
  emptyCache(): number;
}
