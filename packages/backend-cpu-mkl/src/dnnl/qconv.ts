/**
 * The onednn engine's quantized conv2d: oneDNN's int8 convolution primitive (uint8
 * activations with their zero point set as a primitive attribute, so the padding counts as
 * real zeros; int8 weights; exact int32 sums), then the requantization in WASM
 * (requant_planes_u8: the core's formula), so the output has the bits of the reference
 * and of PyTorch's engines. The activations' and weights' layouts are oneDNN's choice
 * ("any"): the activations are reordered in per call, the weights once per layer and
 * plan (kept in the layer's engine cache). The sums come out in oneDNN's layout, are
 * reordered to NCHW int32 and requantized plane by plane (requant_planes_u8: one
 * channel's multiplier and bias per plane). Measured against requantizing channels-last
 * sums and reordering the uint8 result instead: as fast or faster on every layer of the
 * quantized suite (3x3 64>64 @56: 0.50 against 0.90 ms). The scratchpad is a CPU tensor
 * of the call.
 *
 * Refused, with the reason: CPUs without VNNI (oneDNN's int8 kernels there may saturate or
 * scale the weights), and weights with a zero point other than 0 (oneDNN's convolution
 * takes symmetric weights only).
 */
import { empty, type QTensor, type Tensor } from "@backplane/core";
import { conv2dChannelParams, emptyQuantized, type QConv2dParams } from "@backplane/core/backend";
import { modules } from "../kernels/wasm.ts";
import { addressOf } from "../wasm/scratch.ts";
import {
  check,
  dims,
  execute,
  implOf,
  memory,
  PlanCache,
  primitive,
  primitiveDesc,
  queryMd,
  reorder,
  taggedMd,
} from "./call.ts";
import { creationThreads } from "./conv.ts";
import { layerWeights } from "./int8-weights.ts";
import { ARG, CONV_DESC_BYTES, ENUMS } from "./library.ts";
import { hasVnni, ONEDNN_ENGINE } from "./qlinear.ts";
import { dnnlState } from "./state.ts";

const E = ENUMS;
const T = E.dnnl_data_type_t;
const TAG = E.dnnl_format_tag_t;

interface QConvPlan {
  key: string;
  conv: bigint;
  impl: string;
  srcReorder: bigint;
  weightReorder: bigint;
  /** int32 sums, oneDNN's layout -> NCHW (0n when they are the same). */
  dstReorder: bigint;
  srcBytes: number;
  weightBytes: number;
  dstBytes: number;
  scratchBytes: number;
  mem: Record<"userSrc" | "src" | "userWeights" | "weights" | "dst" | "sums" | "scratch", bigint>;
}

const plans = new PlanCache<QConvPlan>("oneDNN refused this int8 convolution");

/** Forgets every plan (they belong to the engine of the library loaded before). */
export function resetQConvPlans(): void {
  plans.clear();
}

function keyOf(p: QConv2dParams): string {
  const { stride, padding, dilation, groups } = p.packed;
  const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
  return `${p.n},${p.c},${p.h},${p.w},${p.oc},${p.kh},${p.kw},${stride},${padding},${dilation},${groups},${xZp}`;
}

// Long: the descriptors of one int8 convolution (user and "any" layouts, geometry), the primitive and its three reorders.
function makePlan(p: QConv2dParams, key: string): QConvPlan {
  const d = dnnlState.ready().dnnl;
  const { stride, padding, dilation, groups: g } = p.packed;
  const x = [p.n, p.c, p.h, p.w];
  const y = [p.n, p.oc, p.oh, p.ow];
  const w = g === 1 ? [p.oc, p.c, p.kh, p.kw] : [g, p.oc / g, p.c / g, p.kh, p.kw];
  const wTag = g === 1 ? TAG.dnnl_abcd : TAG.dnnl_abcde;
  const any = TAG.dnnl_format_tag_any;
  const userSrc = taggedMd(x, TAG.dnnl_abcd, T.dnnl_u8);
  const userW = taggedMd(w, wTag, T.dnnl_s8);
  const userSums = taggedMd(y, TAG.dnnl_abcd, T.dnnl_s32);
  const padB = (p.oh - 1) * stride[0] + (p.kh - 1) * dilation[0] + 1 - p.h - padding[0];
  const padR = (p.ow - 1) * stride[1] + (p.kw - 1) * dilation[1] + 1 - p.w - padding[1];
  const desc = new Uint8Array(CONV_DESC_BYTES);
  check(
    "dnnl_dilated_convolution_forward_desc_init",
    d.dnnl_dilated_convolution_forward_desc_init(
      desc,
      E.dnnl_prop_kind_t.dnnl_forward_inference,
      E.dnnl_alg_kind_t.dnnl_convolution_direct,
      taggedMd(x, any, T.dnnl_u8),
      taggedMd(w, any, T.dnnl_s8),
      null,
      taggedMd(y, any, T.dnnl_s32),
      dims([stride[0], stride[1]]),
      dims([dilation[0] - 1, dilation[1] - 1]), // oneDNN counts dilation from 0
      dims([padding[0], padding[1]]),
      dims([padB, padR]),
    ),
  );
  const srcZeroPoint = (p.x.qparams as { zeroPoint: number }).zeroPoint;
  const pd = primitiveDesc(desc, { srcZeroPoint });
  try {
    const scratch = queryMd(pd, E.dnnl_query_t.dnnl_query_scratchpad_md);
    const src = queryMd(pd, E.dnnl_query_t.dnnl_query_src_md);
    const wts = queryMd(pd, E.dnnl_query_t.dnnl_query_weights_md);
    const dst = queryMd(pd, E.dnnl_query_t.dnnl_query_dst_md);
    return {
      key,
      conv: primitive(pd),
      impl: implOf(pd),
      srcReorder: reorder(userSrc, src),
      weightReorder: reorder(userW, wts),
      dstReorder: reorder(dst, userSums),
      srcBytes: Number(d.dnnl_memory_desc_get_size(src)),
      weightBytes: Number(d.dnnl_memory_desc_get_size(wts)),
      dstBytes: Number(d.dnnl_memory_desc_get_size(dst)),
      scratchBytes: Number(d.dnnl_memory_desc_get_size(scratch)),
      mem: {
        userSrc: memory(userSrc),
        src: memory(src),
        userWeights: memory(userW),
        weights: memory(wts),
        dst: memory(dst),
        sums: memory(userSums),
        scratch: memory(scratch),
      },
    };
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

function planFor(p: QConv2dParams): QConvPlan | string {
  const key = keyOf(p);
  return plans.get(key, () => {
    dnnlState.applyThreads(creationThreads());
    return makePlan(p, key);
  });
}

/** Why the onednn engine's conv2d refuses these inputs, or true. */
export function dnnlQConvSupports(p: QConv2dParams): true | string {
  if (!dnnlState.lib) return "oneDNN is not loaded";
  if (!modules.kernels)
    return "backend-cpu-mkl's WASM kernels (its requantization) have not loaded";
  if (!hasVnni())
    return "this CPU has no VNNI: oneDNN's int8 convolutions there may saturate or rescale the weights (qnnpack serves)";
  const w = p.packed.weight.qparams;
  const zps = w.scheme === "per_tensor_affine" ? [w.zeroPoint] : Array.from(w.zeroPoints);
  if (zps.some((z) => z !== 0))
    return "the weights' zero point is not 0; oneDNN's int8 convolution takes symmetric weights";
  if (p.n === 0) return true;
  const plan = planFor(p);
  return typeof plan === "string" ? plan : true;
}

/** The int32 sums on oneDNN, reordered to NCHW, then requant_planes_u8 into the output. */
// Long: one call: the input's reorder, the convolution, the sums' reorder and the requantization, on CPU-device tensors freed in finally.
export function dnnlQConv(p: QConv2dParams): QTensor {
  const result = emptyQuantized(p.outShape, "quint8", p.outScale, p.outZeroPoint);
  const out = result.storage();
  if (out.numel === 0) return result;
  const plan = planFor(p) as QConvPlan;
  const { dnnl: d, stream } = dnnlState.ready();
  const temps: Tensor[] = [];
  /** A CPU tensor of `count` elements (bytes, by default). */
  const temp = (count: number, dtype: "uint8" | "int32" | "float32" = "uint8") => {
    const t = empty([Math.max(1, count)], { dtype });
    temps.push(t);
    return t;
  };
  try {
    const w = layerWeights(p.packed, ONEDNN_ENGINE, plan);
    const x = p.x.storage();
    const src = plan.srcReorder ? temp(plan.srcBytes) : x;
    const sums = temp(out.numel, "int32");
    const dst = plan.dstReorder ? temp(plan.dstBytes) : sums;
    const scratch = temp(plan.scratchBytes);
    const mult = temp(p.oc, "float32");
    (mult.hostData() as Float32Array).set(conv2dChannelParams(p).mult);
    dnnlState.applyThreads();
    if (plan.srcReorder) {
      d.dnnl_memory_set_data_handle(plan.mem.userSrc, x.hostData());
      d.dnnl_memory_set_data_handle(plan.mem.src, src.hostData());
      execute(plan.srcReorder, [
        [ARG.FROM, plan.mem.userSrc],
        [ARG.TO, plan.mem.src],
      ]);
    }
    const srcMem = plan.srcReorder ? plan.mem.src : plan.mem.userSrc;
    const dstMem = plan.dstReorder ? plan.mem.dst : plan.mem.sums;
    d.dnnl_memory_set_data_handle(srcMem, src.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.weights, w.hostData());
    d.dnnl_memory_set_data_handle(dstMem, dst.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.scratch, scratch.hostData());
    execute(plan.conv, [
      [ARG.SRC, srcMem],
      [ARG.WEIGHTS, plan.mem.weights],
      [ARG.DST, dstMem],
      [ARG.SCRATCHPAD, plan.mem.scratch],
    ]);
    if (plan.dstReorder) {
      d.dnnl_memory_set_data_handle(plan.mem.sums, sums.hostData());
      execute(plan.dstReorder, [
        [ARG.FROM, plan.mem.dst],
        [ARG.TO, plan.mem.sums],
      ]);
    }
    check("dnnl_stream_wait", d.dnnl_stream_wait(stream));
    const bias = p.packed.bias;
    modules.kernels!.requant_planes_u8(
      addressOf(sums),
      p.n * p.oc,
      p.oh * p.ow,
      p.oc,
      addressOf(mult),
      bias ? addressOf(bias) : 0,
      Math.fround(1 / Math.fround(p.outScale)),
      p.outZeroPoint,
      addressOf(out),
    );
    return result;
  } catch (e) {
    result.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
}
