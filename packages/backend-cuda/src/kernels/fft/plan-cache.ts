/**
 * torch.backends.cuda.cufft_plan_cache: one LRU cache of cuFFT plans per device. `size` is
 * read-only, `maxSize` (default 4096) bounds it (lowering it evicts the least recently used
 * plans; 0 turns caching off), `clear()` destroys every plan. `cufftPlanCache[i]` is device
 * i's cache; `cufftPlanCache.size` / `.maxSize` / `.clear()` mean the current device's.
 */
import { ArgumentError, type CufftPlanCache } from "@backplane/core";

/** Creates and destroys the plans of one device (cufftCreate/cufftMakePlanMany/cufftDestroy). */
export interface PlanFactory<P> {
  create(key: string): P;
  destroy(plan: P): void;
}

export const DEFAULT_MAX_SIZE = 4096;

export class PlanCache<P> implements CufftPlanCache {
  /** Insertion order is recency order: the first entry is the least recently used. */
  private readonly plans = new Map<string, P>();
  private max = DEFAULT_MAX_SIZE;
  /** Plans made since start, and lookups served from the cache. */
  misses = 0;
  hits = 0;

  constructor(
    readonly device: number,
    private readonly factory: () => PlanFactory<P> | undefined,
  ) {}

  get size(): number {
    return this.plans.size;
  }

  /** Read-only, as in torch: an ArgumentError rather than strict mode's TypeError. */
  set size(_: number) {
    throw new ArgumentError(
      `cufftPlanCache[${this.device}].size is read-only (the plans cached); maxSize is the one setting`,
    );
  }

  get maxSize(): number {
    return this.max;
  }

  set maxSize(n: number) {
    if (!Number.isInteger(n) || n < 0)
      throw new ArgumentError(
        `cufftPlanCache[${this.device}].maxSize must be an integer >= 0, got ${String(n)}`,
      );
    this.max = n;
    this.evict();
  }

  /** Destroys every cached plan. */
  clear(): void {
    const f = this.factory();
    for (const p of this.plans.values()) f?.destroy(p);
    this.plans.clear();
  }

  /** Cached keys, least recently used first. */
  keys(): string[] {
    return [...this.plans.keys()];
  }

  /**
   * Runs `use` with the plan for `key`, made on a miss. With maxSize 0 the plan is made for
   * this call and destroyed after it.
   */
  with<R>(key: string, use: (plan: P) => R): R {
    const hit = this.plans.get(key);
    if (hit !== undefined) {
      this.hits++;
      this.plans.delete(key);
      this.plans.set(key, hit);
      return use(hit);
    }
    const f = this.factory();
    if (!f) throw new ArgumentError(`cufftPlanCache[${this.device}]: cuFFT is not loaded`);
    this.misses++;
    const plan = f.create(key);
    if (this.max === 0) {
      try {
        return use(plan);
      } finally {
        f.destroy(plan);
      }
    }
    this.plans.set(key, plan);
    this.evict();
    return use(plan);
  }

  private evict(): void {
    const f = this.factory();
    while (this.plans.size > this.max) {
      const [oldest, plan] = this.plans.entries().next().value as [string, P];
      this.plans.delete(oldest);
      f?.destroy(plan);
    }
  }
}

export type PlanCacheRegistry<P> = CufftPlanCache & {
  readonly [device: number]: PlanCache<P>;
};

/**
 * The `backends.cuda.cufftPlanCache` object: indexing gives a device's cache, bare use the
 * current device's. `deviceCount()` bounds the index when it is known (> 0).
 */
export function planCacheRegistry<P>(
  cacheOf: (device: number) => PlanCache<P>,
  currentDevice: () => number,
  deviceCount: () => number,
): PlanCacheRegistry<P> {
  const slot = (d: number) => {
    const n = deviceCount();
    if (!Number.isInteger(d) || d < 0 || (n > 0 && d >= n))
      throw new ArgumentError(
        `cufftPlanCache[${String(d)}]: device index must be an integer in [0, ${n > 0 ? n : "device count"})`,
      );
    return cacheOf(d);
  };
  // Any numeric key is a device index: [-1] or [1.5] reach slot() and its error, not undefined.
  const isIndex = (prop: string | symbol): boolean =>
    typeof prop === "string" && prop.trim() !== "" && !Number.isNaN(Number(prop));
  return new Proxy({} as PlanCacheRegistry<P>, {
    get(_, prop) {
      if (isIndex(prop)) return slot(Number(prop as string));
      if (prop === "clear") return () => slot(currentDevice()).clear();
      if (prop === "size" || prop === "maxSize") return slot(currentDevice())[prop];
      return undefined;
    },
    has(_, prop) {
      return (
        prop === "size" ||
        prop === "maxSize" ||
        prop === "clear" ||
        (typeof prop === "string" && /^\d+$/.test(prop))
      );
    },
    set(_, prop, value) {
      if (prop === "maxSize") {
        slot(currentDevice()).maxSize = value;
        return true;
      }
      throw new ArgumentError(
        `cufftPlanCache.${String(prop)} is read-only; maxSize is the one setting`,
      );
    },
  });
}
