/**
 * The "onednn" quantized engine (backends.quantized.engine): quantizedLinear on oneDNN's
 * int8 matmul primitive (uint8 activations with their zero point and the weights' as
 * primitive attributes, int8 weights reordered once per layer into the primitive's own
 * blocked layout, exact int32 sums) with the core's requantization fused into it
 * (int8-layers.ts, fusedRequantization: the reference's float32 steps), so the output
 * has the bits of the reference and of PyTorch's engines, and no int32 sum is stored.
 * PyTorch's onednn engine runs the same primitive.
 *
 * oneDNN's int8 kernels may saturate intermediate sums where the CPU has no VNNI
 * instructions (pairs of u8 x s8 products summed in int16): such CPUs are refused with the
 * reason, and the other engines serve.
 */
import { backends, empty, type PackedLinear, type QTensor, type Tensor } from "@backplane/core";
import { emptyQuantized, int32SumProblem, type QLinearParams } from "@backplane/core/backend";
import { linearChannelParams, requantizeLinear } from "@backplane/core/cpu";
import {
  building,
  check,
  execute,
  type Handles,
  mdText,
  memory,
  PlanCache,
  primitive,
  primitiveDesc,
  queryMd,
  reorder,
  stridedMd,
  taggedMd,
} from "./call.ts";
import { biasProblem, fusedRequantization, layerId, layerWeights } from "./int8-layers.ts";
import { ARG, ENUMS, MATMUL_DESC_BYTES } from "./library.ts";
import { dnnlState } from "./state.ts";

export const ONEDNN_ENGINE = "onednn";
const E = ENUMS;
const T = E.dnnl_data_type_t;

let vnni: boolean | undefined;

/**
 * Whether the CPU has VNNI (oneDNN's int8 kernels sum u8 x s8 pairs exactly there). Asked
 * once: the capability report took 3 µs, on every call of both int8 kernels' supports().
 */
export function hasVnni(): boolean {
  if (vnni === undefined) {
    const f = backends.cpu.getCpuCapabilityInfo().features;
    vnni = f.includes("avx512_vnni") || f.includes("avx_vnni") || f.includes("amx_int8");
  }
  return vnni;
}

interface QLinearPlan {
  key: string;
  matmul: bigint;
  weightReorder: bigint;
  weightBytes: number;
  scratchBytes: number;
  mem: Record<"src" | "userWeights" | "weights" | "dst" | "bias" | "scratch", bigint>;
  /** The primitives and memory objects above, destroyed when the cache forgets the plan. */
  handles: Handles;
}

const plans = new PlanCache<QLinearPlan>("oneDNN refused this int8 matmul", (plan) =>
  plan.handles.destroy(),
);

/** Forgets every plan (they belong to the engine of the library loaded before). */
export function resetQLinearPlans(): void {
  plans.clear();
}

/** The weights' one zero point (per tensor, or equal on every channel), or undefined. */
function weightZeroPoint(layer: PackedLinear): number | undefined {
  const w = layer.weight.qparams;
  if (w.scheme === "per_tensor_affine") return w.zeroPoint;
  return new Set(w.zeroPoints).size === 1 ? w.zeroPoints[0] : undefined;
}

function makePlan(p: QLinearParams, wZp: number): QLinearPlan {
  const d = dnnlState.ready().dnnl;
  const src = stridedMd([p.m, p.k], [p.k, 1], T.dnnl_u8);
  // W is [n, k] row-major: the product's [k, n] operand with strides (1, k).
  const userW = stridedMd([p.k, p.n], [1, p.k], T.dnnl_s8);
  const anyW = taggedMd([p.k, p.n], E.dnnl_format_tag_t.dnnl_format_tag_any, T.dnnl_s8);
  const dst = stridedMd([p.m, p.n], [p.n, 1], T.dnnl_u8);
  const bias = p.packed.bias ? stridedMd([1, p.n], [p.n, 1], T.dnnl_f32) : undefined;
  const desc = new Uint8Array(MATMUL_DESC_BYTES);
  check("dnnl_matmul_desc_init", d.dnnl_matmul_desc_init(desc, src, anyW, null, dst));
  const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
  const pd = primitiveDesc(desc, {
    srcZeroPoint: xZp,
    weightsZeroPoint: wZp,
    ...fusedRequantization(linearChannelParams(p).mult, bias, p.outScale, p.outZeroPoint),
  });
  try {
    const weights = queryMd(pd, E.dnnl_query_t.dnnl_query_weights_md);
    const scratch = queryMd(pd, E.dnnl_query_t.dnnl_query_scratchpad_md);
    return building((h) => ({
      // The layer's reordered weights are kept per layout (not per plan: one a batch size).
      key: `weights ${mdText(weights)}`,
      matmul: h.primitive(primitive(pd)),
      weightReorder: h.primitive(reorder(userW, weights)),
      weightBytes: Number(d.dnnl_memory_desc_get_size(weights)),
      scratchBytes: Number(d.dnnl_memory_desc_get_size(scratch)),
      mem: {
        src: h.memory(memory(src)),
        userWeights: h.memory(memory(userW)),
        weights: h.memory(memory(weights)),
        dst: h.memory(memory(dst)),
        bias: bias ? h.memory(memory(bias)) : 0n,
        scratch: h.memory(memory(scratch)),
      },
      handles: h,
    }));
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

/** The layer's multipliers and the output's parameters are baked into the primitive. */
function planFor(p: QLinearParams, wZp: number): QLinearPlan | string {
  const x = p.x.qparams as { zeroPoint: number; scale: number };
  const key = () =>
    `${layerId(p.packed)}:${p.m},${p.k},${p.n},${x.zeroPoint},${x.scale},${wZp},${p.outScale},${p.outZeroPoint}`;
  return plans.forParams(p, key, () => makePlan(p, wZp));
}

/** Why the onednn engine refuses these inputs, or true. */
export function dnnlQLinearSupports(p: QLinearParams): true | string {
  // oneDNN's int8 matmul sums in s32: exact only while every sum fits int32.
  const overflow = int32SumProblem(p);
  if (overflow) return overflow;
  if (!dnnlState.lib) return "oneDNN is not loaded";
  if (!hasVnni())
    return "this CPU has no VNNI: oneDNN's int8 kernels may saturate their int16 intermediate sums (qnnpack serves)";
  const wZp = weightZeroPoint(p.packed);
  if (wZp === undefined)
    return "the weights' per-channel zero points differ; oneDNN's int8 matmul takes one weight zero point (symmetric weights, zero point 0, run here)";
  const bias = biasProblem(p.packed);
  if (bias) return bias;
  if (p.m === 0 || p.n === 0 || p.k === 0) return true;
  const plan = planFor(p, wZp);
  return typeof plan === "string" ? plan : true;
}

/**
 * The quint8 output of oneDNN's matmul with its requantization fused. A layer without
 * input features (k = 0: every sum is 0, the bias alone remains) takes the core's
 * requantization of zero sums.
 */
export function dnnlQLinear(p: QLinearParams): QTensor {
  if (p.k === 0 && p.m > 0 && p.n > 0) return requantizeLinear(p, new Int32Array(p.m * p.n));
  const result = emptyQuantized(p.outShape, "quint8", p.outScale, p.outZeroPoint);
  if (p.m === 0 || p.n === 0) return result;
  try {
    matmul(p, planFor(p, weightZeroPoint(p.packed)!) as QLinearPlan, result.storage());
    return result;
  } catch (e) {
    result.dispose();
    throw e;
  }
}

/** out = requantize((x - x_zp)(w - w_zp)ᵀ) on oneDNN's threads. */
function matmul(p: QLinearParams, plan: QLinearPlan, out: Tensor): void {
  const { dnnl: d, stream } = dnnlState.ready();
  const w = layerWeights(p.packed, ONEDNN_ENGINE, plan);
  const scratch = empty([Math.max(1, plan.scratchBytes)], { dtype: "uint8" });
  try {
    dnnlState.applyThreads();
    d.dnnl_memory_set_data_handle(plan.mem.src, p.x.storage().hostData());
    d.dnnl_memory_set_data_handle(plan.mem.weights, w.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.dst, out.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.scratch, scratch.hostData());
    const args: [number, bigint][] = [
      [ARG.SRC, plan.mem.src],
      [ARG.WEIGHTS, plan.mem.weights],
      [ARG.DST, plan.mem.dst],
      [ARG.SCRATCHPAD, plan.mem.scratch],
    ];
    if (plan.mem.bias) {
      d.dnnl_memory_set_data_handle(plan.mem.bias, p.packed.bias!.hostData());
      args.push([ARG.POST_OP_0_SRC_1, plan.mem.bias]);
    }
    execute(plan.matmul, args);
    check("dnnl_stream_wait", d.dnnl_stream_wait(stream));
  } finally {
    scratch.dispose();
  }
}
