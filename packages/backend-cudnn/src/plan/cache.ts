/**
 * Execution plans by problem key (device, shape, dtype, layout, alignment and the flags that
 * change the choice), as torch's cuDNN plan cache. Bounded: the oldest plan is destroyed first.
 */
import type { CudnnPlanSummary } from "@backplane/core/backend";
import { type ExecutionPlan, releasePlan } from "./engines.ts";

export interface CachedPlan extends ExecutionPlan {
  /** How it was chosen: the heuristics' first allowed engine, or the fastest timed one. */
  readonly chosenBy: "heuristics" | "benchmark";
  /** Engines left out, and why (flags, or cuDNN refusing the plan). */
  readonly excluded: readonly { index: number; reason: string }[];
  /** Benchmark timings in ms, by engine. */
  readonly timings: readonly { engine: number; ms: number }[];
}

/** What a cached plan is, for users: the problem, the engine and how it was chosen. */
export type PlanSummary = CudnnPlanSummary;

export class PlanCache {
  private readonly plans = new Map<string, CachedPlan>();
  /** The key used last: a repeated call skips reordering the map. */
  private mostRecent: string | undefined;
  /** Problems cuDNN made no plan for, with its error, so they are not built again. */
  private readonly refusals = new Map<string, Error>();
  constructor(readonly capacity = 256) {}

  /** cuDNN's error for a problem it refused before, if any. */
  refusal(key: string): Error | undefined {
    return this.refusals.get(key);
  }

  refuse(key: string, error: Error): void {
    this.refusals.set(key, error);
    if (this.refusals.size > this.capacity)
      this.refusals.delete(this.refusals.keys().next().value!);
  }

  get(key: string): CachedPlan | undefined {
    const p = this.plans.get(key);
    if (p && key !== this.mostRecent) {
      this.mostRecent = key;
      // Most recently used last.
      this.plans.delete(key);
      this.plans.set(key, p);
    }
    return p;
  }

  set(key: string, plan: CachedPlan): void {
    const old = this.plans.get(key);
    if (old) releasePlan(old);
    this.plans.delete(key);
    this.plans.set(key, plan);
    this.mostRecent = key;
    while (this.plans.size > this.capacity) {
      const [oldest, p] = this.plans.entries().next().value as [string, CachedPlan];
      releasePlan(p);
      this.plans.delete(oldest);
    }
  }

  get size(): number {
    return this.plans.size;
  }

  keys(): string[] {
    return [...this.plans.keys()];
  }

  summaries(): PlanSummary[] {
    return [...this.plans].map(([key, p]) => ({
      key,
      engine: p.engine,
      chosenBy: p.chosenBy,
      workspaceBytes: p.workspaceBytes,
      excluded: p.excluded,
      timings: p.timings,
    }));
  }

  clear(): void {
    for (const p of this.plans.values()) releasePlan(p);
    this.plans.clear();
    this.mostRecent = undefined;
    this.refusals.clear();
  }
}
