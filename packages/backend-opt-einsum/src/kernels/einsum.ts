/**
 * The "opt-einsum" einsum kernel: each call finds (or reuses from a cache keyed by
 * equation, shapes and strategy) a contraction path and runs it as dispatched matmuls.
 */
import { type DType, getFlag, type Tensor } from "@backplane/core";
import type {
  EinsumParams,
  KernelDefinition,
  OptEinsumPathCacheInfo,
} from "@backplane/core/backend";
import { searchPath } from "../contract-path.ts";
import { executePath } from "../execute.ts";
import type { Strategy } from "../paths.ts";

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

/** size, maxSize, hits, misses (the core's contract for getOptEinsum()'s API). */
export type PathCacheInfo = OptEinsumPathCacheInfo;

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

export function einsumKernel(device: string): KernelDefinition<EinsumParams> {
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
