/**
 * Execution plans by problem key (shape, dtype, layout, alignment and the flags that change
 * the choice), as torch's cuDNN plan cache. Bounded: the oldest plan is destroyed first.
 */
import type { ExecutionPlan } from "./engines.ts";

export interface CachedPlan extends ExecutionPlan {
  /** How it was chosen: the heuristics' first allowed engine, or the fastest timed one. */
  readonly chosenBy: "heuristics" | "benchmark";
  /** Engines left out, and why (flags, or cuDNN refusing the plan). */
  readonly excluded: readonly { index: number; reason: string }[];
  /** Benchmark timings in ms, by engine. */
  readonly timings: readonly { engine: number; ms: number }[];
}

export class PlanCache {
  private readonly plans = new Map<string, CachedPlan>();
  constructor(readonly capacity = 256) {}

  get(key: string): CachedPlan | undefined {
    const p = this.plans.get(key);
    if (p) {
      // Most recently used last.
      this.plans.delete(key);
      this.plans.set(key, p);
    }
    return p;
  }

  set(key: string, plan: CachedPlan): void {
    this.plans.get(key)?.descriptor.destroy();
    this.plans.delete(key);
    this.plans.set(key, plan);
    while (this.plans.size > this.capacity) {
      const [oldest, p] = this.plans.entries().next().value as [string, CachedPlan];
      p.descriptor.destroy();
      this.plans.delete(oldest);
    }
  }

  get size(): number {
    return this.plans.size;
  }

  keys(): string[] {
    return [...this.plans.keys()];
  }

  clear(): void {
    for (const p of this.plans.values()) p.descriptor.destroy();
    this.plans.clear();
  }
}
