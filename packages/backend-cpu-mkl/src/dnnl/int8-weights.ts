/**
 * The onednn engine's weights in a primitive's own (blocked) layout, reordered once per
 * layer and plan and kept in the layer's engine cache (freed with the layer): what the
 * int8 matmul (qlinear.ts) and convolution (qconv.ts) share.
 */
import { empty, type PackedConv2d, type PackedLinear, type Tensor } from "@backplane/core";
import { execute } from "./call.ts";
import { ARG } from "./library.ts";
import { dnnlState } from "./state.ts";

/** What a plan knows of its weights: the reorder (0n: none), its size and memory objects. */
export interface WeightsPlan {
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
    d.dnnl_memory_set_data_handle(plan.mem.userWeights, layer.weight.storage().hostData());
    d.dnnl_memory_set_data_handle(plan.mem.weights, w.hostData());
    execute(plan.weightReorder, [
      [ARG.FROM, plan.mem.userWeights],
      [ARG.TO, plan.mem.weights],
    ]);
    cache.byPlan.set(plan.key, w);
  }
  return w;
}
