/**
 * Kernel order by measurement: calibrate.ts times the CPU backends on a few sizes per op,
 * and the dispatcher reorders backends by those figures, per size class. Only the order
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
  /** Milliseconds the last measurement of this case took, warm-up runs included. */
  costMs?: number;
}

/** The kernels to try for calls near `work`, and the figures behind that order. */
export interface SizeClass {
  work: number;
  kernels: Kernel[];
  measurement: Measurement;
}

let current: readonly Measurement[] = [];

/** Replaces the figures in use (the caller bumps the registry generation). */
export function useMeasurements(m: readonly Measurement[]): void {
  current = m;
}

export function measurementsInUse(): readonly Measurement[] {
  return current;
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

/** The size classes of an op on (device, dtype), or undefined when nothing was measured. */
export function sizeClasses(
  op: string,
  deviceType: string,
  dtype: DType,
  kernels: readonly Kernel[],
): SizeClass[] | undefined {
  const ms = current.filter(
    (m) => m.op === op && m.deviceType === deviceType && m.dtype === dtype && m.figures.length > 1,
  );
  if (ms.length === 0) return undefined;
  return ms
    .map((m) => ({ work: m.work, kernels: reorderByMeasurement(kernels, m), measurement: m }))
    .sort((a, b) => a.work - b.work);
}

/** The class whose measured size is nearest `work` (on a log scale). */
export function classFor(classes: readonly SizeClass[], work: number): SizeClass {
  if (classes.length === 1 || !(work > 0)) return classes[0];
  const lw = Math.log(work);
  let best = classes[0];
  let bestD = Math.abs(Math.log(best.work) - lw);
  for (let i = 1; i < classes.length; i++) {
    const d = Math.abs(Math.log(classes[i].work) - lw);
    if (d < bestD) {
      bestD = d;
      best = classes[i];
    }
  }
  return best;
}
