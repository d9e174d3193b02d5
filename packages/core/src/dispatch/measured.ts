/**
 * Kernel order by measurement: calibrate.ts times the CPU backends on a few sizes per op
 * and the ranker times them per shape; either way the figures reorder whole backends. Only the order
 * between backends changes (a backend's own kernels keep the order its author gave them,
 * which may itself be adaptive, like nnpack's "auto"), and a backend moves ahead of one
 * its priority puts first only when it measured at least MARGIN times faster, so noise
 * never flips a close call.
 */

import type { Kernel } from "../registry/kernels.ts";
import type { DType } from "../tensor/dtype.ts";

/** A backend needs to be this much faster to move ahead of one ranked above it. */
export const MARGIN = 1.1;

export interface KernelFigure {
  kernel: string;
  backend: string;
  /** Best time of one run, in milliseconds. */
  ms: number;
}

/** One calibration case: an op at one size, and what each backend's kernel took. */
export interface Measurement {
  op: string;
  /** A readable size, e.g. "256x256x256". */
  case: string;
  dtype: DType;
  deviceType: string;
  /** The op's work for these sizes (op.work(params), floating-point operations). */
  work: number;
  figures: KernelFigure[];
  /** How many measurements (one per process start) the figures are the best of. */
  runs: number;
  /** Whether one of them was made warm, after the op's kernels had run in the process. */
  warm?: boolean;
  /** Milliseconds the last measurement of this case took, warm-up runs included. */
  costMs?: number;
}

let current: readonly Measurement[] = [];

/** Replaces the figures in use (the caller bumps the registry generation). */
export function useMeasurements(m: readonly Measurement[]): void {
  current = m;
}

export function measurementsInUse(): readonly Measurement[] {
  return current;
}

/** Two measurements of one case: each kernel's best, and the runs counted. */
export function mergeBest(a: Measurement, b: Measurement): Measurement {
  const figures = b.figures.map((f) => {
    const old = a.figures.find((x) => x.kernel === f.kernel);
    return old ? { ...f, ms: Math.min(old.ms, f.ms) } : f;
  });
  return { ...b, figures, runs: (a.runs ?? 1) + b.runs, warm: a.warm || b.warm };
}

/** `kernels` (priority order) with the measured backends' kernels reordered by speed. */
export function reorderByMeasurement(kernels: readonly Kernel[], m: Measurement): Kernel[] {
  const msOf = new Map(m.figures.map((f) => [f.backend, f.ms]));
  const order: string[] = [];
  for (const k of kernels)
    if (msOf.has(k.backend) && !order.includes(k.backend)) order.push(k.backend);
  // Insertion sort with a margin: a backend passes the one above only if clearly faster.
  for (let i = 1; i < order.length; i++) {
    for (let j = i; j > 0; j--) {
      const a = msOf.get(order[j - 1]) as number;
      const b = msOf.get(order[j]) as number;
      if (!(b * MARGIN < a)) break;
      [order[j - 1], order[j]] = [order[j], order[j - 1]];
    }
  }
  const rank = (k: Kernel) => order.indexOf(k.backend);
  const moved = kernels.filter((k) => msOf.has(k.backend)).sort((a, b) => rank(a) - rank(b));
  let next = 0;
  return kernels.map((k) => (msOf.has(k.backend) ? moved[next++] : k));
}

/** The measurement whose size is nearest `work` (on a log scale); `sizes` is not empty. */
export function nearestBySize(sizes: readonly Measurement[], work: number): Measurement {
  if (sizes.length === 1 || !(work > 0)) return sizes[0];
  const lw = Math.log(work);
  let best = sizes[0];
  let bestD = Math.abs(Math.log(best.work) - lw);
  for (let i = 1; i < sizes.length; i++) {
    const d = Math.abs(Math.log(sizes[i].work) - lw);
    if (d < bestD) {
      bestD = d;
      best = sizes[i];
    }
  }
  return best;
}
