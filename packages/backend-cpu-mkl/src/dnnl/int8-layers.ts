/**
 * What the onednn engine's int8 matmul (qlinear.ts) and convolution (qconv.ts) share: the
 * weights in a primitive's own (blocked) layout, reordered once per layer and plan and
 * kept in the layer's engine cache (freed with the layer); the requantization fused into
 * the primitive; a number per layer for the plan keys; the check of the bias.
 */
import { empty, type PackedConv2d, type PackedLinear, type Tensor } from "@backplane/core";
import { execute, type PrimitiveAttrs } from "./call.ts";
import { ARG, ENUMS } from "./library.ts";
import { dnnlState } from "./state.ts";

const ALG = ENUMS.dnnl_alg_kind_t;

/**
 * The core's requantization as a primitive's attributes, step for step in float32 as the
 * reference computes it, so the output has its bits:
 *
 *   fl(acc) * mult[c]      output scales (one per output channel)
 *   + bias[c]              a binary post-op (`bias`: its descriptor; only with a bias)
 *   * fl(1 / scale)        eltwise linear (alpha, beta 0: one rounding)
 *   rint                   eltwise round (to nearest, ties to even)
 *   + zero point           the output's zero point (exact: added to integers)
 *   -> uint8               the store saturates to [0, 255]
 *
 * Without the round post-op oneDNN adds the zero point before rounding, which moves ties
 * when it is odd; a second linear post-op for it gave wrong values in oneDNN 2.6.
 */
export function fusedRequantization(
  mult: Float32Array,
  bias: Uint8Array | undefined,
  outScale: number,
  outZeroPoint: number,
): PrimitiveAttrs {
  const inv = Math.fround(1 / Math.fround(outScale));
  return {
    outputScales: mult,
    postOps: [
      ...(bias ? [{ binary: ALG.dnnl_binary_add, src1: bias }] : []),
      { alg: ALG.dnnl_eltwise_linear, alpha: inv, beta: 0 },
      { alg: ALG.dnnl_eltwise_round, alpha: 0, beta: 0 },
    ],
    dstZeroPoint: outZeroPoint,
  };
}

const layerIds = new WeakMap<object, number>();
let nextLayer = 0;

/** A number for `layer` (plans bake its multipliers in, so their keys name it). */
export function layerId(layer: PackedLinear | PackedConv2d): number {
  let id = layerIds.get(layer);
  if (id === undefined) layerIds.set(layer, (id = nextLayer++));
  return id;
}

const finite = new WeakMap<object, boolean>();

/**
 * Why the layer's bias cannot be fused (a value that is not finite: the reference's clamp
 * and oneDNN's saturation disagree on NaN), or undefined. Checked once per layer.
 */
export function biasProblem(layer: PackedLinear | PackedConv2d): string | undefined {
  if (!layer.bias) return undefined;
  let ok = finite.get(layer);
  if (ok === undefined) {
    ok = (layer.bias.hostData() as Float32Array).every(Number.isFinite);
    finite.set(layer, ok);
  }
  return ok
    ? undefined
    : "the bias has a value that is not finite; oneDNN's saturation would not match the reference's clamp";
}

/** What a plan knows of its weights: the reorder (0n: none), its size and memory objects. */
export interface WeightsPlan {
  /** Names the reordered weights in the layer's cache: their layout, shared by plans. */
  key: string;
  weightReorder: bigint;
  weightBytes: number;
  mem: { userWeights: bigint; weights: bigint };
}

type Cache = { byPlan: Map<string, Tensor>; dispose(): void };

/** The layer's weights in `plan`'s layout (the layer's own integers when no reorder is needed). */
export function layerWeights(
  layer: PackedLinear | PackedConv2d,
  engine: string,
  plan: WeightsPlan,
): Tensor {
  if (plan.weightReorder === 0n) return layer.weight.storage();
  let cache = layer.engineCache.get(engine) as Cache | undefined;
  if (!cache) {
    const byPlan = new Map<string, Tensor>();
    const dispose = () => {
      for (const t of byPlan.values()) t.dispose();
    };
    cache = { byPlan, dispose };
    layer.engineCache.set(engine, cache);
  }
  let w = cache.byPlan.get(plan.key);
  if (!w) {
    const d = dnnlState.ready().dnnl;
    w = empty([Math.max(1, plan.weightBytes)], { dtype: "uint8" });
    try {
      d.dnnl_memory_set_data_handle(plan.mem.userWeights, layer.weight.storage().hostData());
      d.dnnl_memory_set_data_handle(plan.mem.weights, w.hostData());
      execute(plan.weightReorder, [
        [ARG.FROM, plan.mem.userWeights],
        [ARG.TO, plan.mem.weights],
      ]);
    } catch (e) {
      w.dispose();
      throw e;
    }
    cache.byPlan.set(plan.key, w);
  }
  return w;
}
