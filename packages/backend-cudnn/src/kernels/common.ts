/** What both kernels share: the flags that steer plan choice, the device, the plan timer. */
import { getFlag, type Tensor } from "@backplane/core";
import { type DeviceContext, deviceContext } from "@backplane/core/backend";
import type { SelectionFlags } from "../plan/select.ts";
import type { CudnnRuntime, PlanTimer } from "../runtime.ts";
import { maybeRuntime, unavailableReason } from "../state.ts";

/** The flags as they stand now (useDeterministicAlgorithms counts as cudnn.deterministic). */
export function selectionFlags(): SelectionFlags {
  return {
    deterministic:
      (getFlag("cudnn.deterministic") as boolean) || (getFlag("core.deterministic") as boolean),
    allowTf32: getFlag("cudnn.allowTf32") as boolean,
    benchmark: getFlag("cudnn.benchmark") as boolean,
    benchmarkLimit: getFlag("cudnn.benchmarkLimit") as number,
  };
}

/** The part of a plan key the flags contribute: plans chosen under other flags are not reused. */
export function flagsKey(f: SelectionFlags): string {
  return `det${+f.deterministic}tf32${+f.allowTf32}bench${+f.benchmark}:${f.benchmark ? f.benchmarkLimit : 0}`;
}

export interface Device {
  ctx: DeviceContext;
  rt: CudnnRuntime;
  index: number;
}

/**
 * The part of a plan key the device contributes: a plan is finalized with one device's handle
 * for its architecture, so another device builds (or is refused) its own.
 */
export function deviceKey(d: Device): string {
  return `cuda:${d.index}@sm${capability(d)}`;
}

/** The device context and runtime a kernel runs on, or the reason there are none. */
export function deviceFor(t: Tensor): Device | string {
  const why = unavailableReason();
  if (why) return why;
  const ctx = deviceContext("cuda")!;
  return { ctx, rt: maybeRuntime()!, index: ctx.indexOf(t) };
}

/** Compute capability as 80 for 8.0. */
export function capability(d: Device): number {
  const p = d.ctx.properties(d.index);
  return p.major * 10 + p.minor;
}

/** Benchmark mode's measure: one warm-up, then the best of three runs, device-synchronized. */
export function planTimer(d: Device, run: (plan: Parameters<PlanTimer>[0]) => void): PlanTimer {
  return (plan) => {
    run(plan);
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 3; i++) {
      d.ctx.synchronize(d.index);
      const t0 = performance.now();
      run(plan);
      d.ctx.synchronize(d.index);
      best = Math.min(best, performance.now() - t0);
    }
    return best;
  };
}
