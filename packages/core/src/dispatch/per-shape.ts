/**
 * Kernel order measured per input shape, for ops whose best backend depends on the shape
 * more than on its size (conv2d: a depthwise, a 1x1 and a 3x3 layer of equal work favour
 * different backends). The first call of a shape times the first accepting kernel of each
 * CPU backend (a warm-up each, then the best of two interleaved rounds) and keeps the
 * order, with measured.ts's margin; later calls of the shape only look it up.
 */
import type { Kernel, OpParams, OpRecord } from "./kernels.ts";
import { type Measurement, reorderByMeasurement } from "./measured.ts";

export interface ShapeOrder {
  kernels: Kernel[];
  measurement: Measurement | undefined;
}

/** Shapes remembered per dispatcher entry (the oldest forgotten first). */
const LIMIT = 256;

const now = (): number => (typeof performance !== "undefined" ? performance.now() : Date.now());

function disposeAll(x: unknown): void {
  if (x && typeof (x as { dispose?: unknown }).dispose === "function")
    (x as { dispose(): void }).dispose();
  else if (x && typeof x === "object") for (const v of Object.values(x)) disposeAll(v);
}

function accepts(k: Kernel, params: OpParams): boolean {
  try {
    return k.supports === undefined || k.supports(params as never) === true;
  } catch {
    return false;
  }
}

function measure(op: OpRecord, kernels: Kernel[], params: OpParams): ShapeOrder {
  const first = new Map<string, Kernel>();
  for (const k of kernels)
    if (k.backend !== "reference" && !first.has(k.backend) && accepts(k, params))
      first.set(k.backend, k);
  if (first.size < 2) return { kernels, measurement: undefined };
  const best = new Map<Kernel, number>();
  for (const k of first.values()) {
    disposeAll(k.run(params as never));
    best.set(k, Number.POSITIVE_INFINITY);
  }
  for (let round = 0; round < 2; round++)
    for (const k of best.keys()) {
      const t0 = now();
      disposeAll(k.run(params as never));
      best.set(k, Math.min(best.get(k) as number, now() - t0));
    }
  const measurement: Measurement = {
    op: op.name,
    case: op.shapeKey(params),
    dtype: params.dtype,
    deviceType: params.deviceType,
    work: op.work?.(params) ?? 0,
    figures: [...best].map(([k, ms]) => ({ kernel: k.name, backend: k.backend, ms })),
    runs: 1,
  };
  return { kernels: reorderByMeasurement(kernels, measurement), measurement };
}

/** The order for this shape: remembered, or measured now when `mayMeasure` (else undefined). */
export function shapeOrder(
  op: OpRecord,
  orders: Map<string, ShapeOrder>,
  kernels: Kernel[],
  params: OpParams,
  mayMeasure: boolean,
): ShapeOrder | undefined {
  const key = op.shapeKey(params);
  const hit = orders.get(key);
  if (hit || !mayMeasure) return hit;
  const order = measure(op, kernels, params);
  if (orders.size >= LIMIT) orders.delete(orders.keys().next().value as string);
  orders.set(key, order);
  return order;
}
