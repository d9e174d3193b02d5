/**
 * Kernel order measured per input shape, for ops whose best backend depends on the shape
 * more than on its size (conv2d: a depthwise, a 1x1 and a 3x3 layer of equal work favour
 * different backends). The first call of a shape times the first accepting kernel of each
 * CPU backend (a warm-up each, then the best of ROUNDS interleaved rounds) and keeps the
 * order, with measured.ts's margin; later calls of the shape only look it up.
 */
import type { Kernel, OpParams, OpRecord } from "../registry/kernels.ts";
import { type KernelFigure, type Measurement, reorderByMeasurement } from "./measured.ts";
import { firstPerBackend, timeInterleaved } from "./timing.ts";

export interface ShapeOrder {
  kernels: Kernel[];
  measurement: Measurement | undefined;
}

/**
 * Interleaved rounds per shape. Two let one stalled call decide: a 1x1 96>24 @56 layer
 * went to nnpack (157 us) instead of oneDNN (105 us) in one run of the conv2d suite.
 */
const ROUNDS = 3;

/** Shapes remembered per dispatcher entry (the oldest forgotten first). */
const LIMIT = 256;

function measure(op: OpRecord, kernels: Kernel[], params: OpParams): ShapeOrder {
  const first = firstPerBackend(kernels, params);
  if (first.length < 2) return { kernels, measurement: undefined };
  const figures = timeInterleaved(first, params, { rounds: ROUNDS }) as KernelFigure[];
  const measurement: Measurement = {
    op: op.name,
    case: op.shapeKey(params),
    dtype: params.dtype,
    deviceType: params.deviceType,
    work: op.work?.(params) ?? 0,
    figures,
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
