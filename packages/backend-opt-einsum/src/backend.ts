/**
 * The backend: the "opt-einsum" einsum kernel (paths cached per equation, shapes and
 * strategy), backends.optEinsum's isAvailable() and getOptEinsum().
 */
import { type DType, getFlag, Tensor } from "@backplane/core";
import {
  type BackendDefinition,
  defineBackend,
  type EinsumParams,
  einsumOp,
  type KernelDefinition,
} from "@backplane/core/backend";
import {
  type ContractPathOptions,
  checkStrategy,
  contractPath,
  type PathInfo,
  searchPath,
} from "./contract-path.ts";
import { executePath } from "./execute.ts";
import { STRATEGIES, type Strategy } from "./paths.ts";
import { randomEquation } from "./random-equation.ts";

export const OPT_EINSUM_BACKEND = "opt-einsum";
export const VERSION = "0.1.0";

/**
 * Devices the einsum kernel is registered for. The executor only uses views (permute,
 * strided views, reshape), contiguous() and the dispatched matmul and mul, so a device
 * whose memory the core can copy strided views of and that has those ops can be added.
 */
export const EINSUM_DEVICES: readonly string[] = ["cpu"];

const FLOATS: readonly DType[] = ["float32", "float64", "float16", "bfloat16"];

// ---- path cache ----

const CACHE_SIZE = 512;
const cache = new Map<string, number[][]>();
let hits = 0;
let misses = 0;

/** The path for params under a strategy, from the cache (LRU, 512 entries) or found now. */
export function cachedPath(p: EinsumParams, strategy: Strategy): number[][] {
  const key = `${strategy}|${p.equation}|${p.operands.map((t) => t.shape.join("x")).join(",")}`;
  const found = cache.get(key);
  if (found) {
    hits++;
    cache.delete(key);
    cache.set(key, found);
    return found;
  }
  misses++;
  const { path } = searchPath(p, strategy);
  cache.set(key, path);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return path;
}

export interface PathCacheInfo {
  size: number;
  maxSize: number;
  hits: number;
  misses: number;
}

export function pathCacheInfo(): PathCacheInfo {
  return { size: cache.size, maxSize: CACHE_SIZE, hits, misses };
}

export function clearPathCache(): void {
  cache.clear();
  hits = 0;
  misses = 0;
}

// ---- the kernel ----

function runEinsum(p: EinsumParams): Tensor {
  const strategy = getFlag("optEinsum.strategy") as Strategy;
  return executePath(p, cachedPath(p, strategy));
}

function einsumKernel(device: string): KernelDefinition<EinsumParams> {
  return {
    op: "einsum",
    name: device === "cpu" ? "opt-einsum" : `opt-einsum-${device}`,
    device,
    dtypes: FLOATS,
    deterministic: true,
    flags: ["optEinsum.enabled"],
    priority: 60,
    run: runEinsum,
  };
}

// ---- the API getOptEinsum() returns ----

/**
 * opt_einsum's contract: evaluates the einsum along the path a strategy finds (or an
 * explicit path), whatever backends.optEinsum says; the last argument may be options.
 */
export function contract(
  equation: string,
  ...args: (
    | Tensor
    | Pick<ContractPathOptions, "strategy" | "seed" | "repeats" | "outer" | "budgetMs">
  )[]
): Tensor {
  const last = args[args.length - 1];
  const hasOpts = last !== undefined && !(last instanceof Tensor) && typeof last === "object";
  const opts = (hasOpts ? last : {}) as ContractPathOptions;
  const tensors = (hasOpts ? args.slice(0, -1) : args) as Tensor[];
  const p = einsumOp.prepare(equation, ...tensors) as EinsumParams;
  const strategy = opts.strategy ?? (getFlag("optEinsum.strategy") as Strategy);
  let path: number[][];
  if (Array.isArray(strategy)) {
    path = contractPath(equation, ...tensors.map((t) => t.shape), { strategy }).path;
  } else {
    checkStrategy(strategy);
    path = searchPath(p, strategy, opts).path;
  }
  return executePath(p, path);
}

export interface OptEinsumApi {
  /** opt_einsum.contract_path: the path, its cost and a printable PathInfo. */
  contractPath: typeof contractPath;
  /** opt_einsum.contract: evaluate along a strategy's path or an explicit one. */
  contract: typeof contract;
  /** A seeded random tensor network (opt_einsum.helpers.rand_equation). */
  randomEquation: typeof randomEquation;
  strategies: readonly Strategy[];
  /** The kernel's path cache. */
  pathCacheInfo: typeof pathCacheInfo;
  clearPathCache: typeof clearPathCache;
  version: string;
}

export const optEinsum: OptEinsumApi = Object.freeze({
  contractPath,
  contract,
  randomEquation,
  strategies: STRATEGIES,
  pathCacheInfo,
  clearPathCache,
  version: VERSION,
});

export const optEinsumBackend: BackendDefinition = defineBackend({
  name: OPT_EINSUM_BACKEND,
  namespaces: ["optEinsum"],
  devices: [...EINSUM_DEVICES],
  packageName: "@backplane/backend-opt-einsum",
  version: () => VERSION,
  isAvailable: () => ({ available: true }),
  capability: () => ({ strategies: [...STRATEGIES], pathCache: pathCacheInfo() }),
  kernels: EINSUM_DEVICES.map(einsumKernel),
  api: { optEinsum: { getOptEinsum: () => optEinsum } },
});

export type { PathInfo };
