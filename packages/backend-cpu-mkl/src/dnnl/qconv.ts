/**
 * The onednn engine's quantized conv2d: oneDNN's int8 convolution primitive (uint8
 * activations with their zero point set as a primitive attribute, so the padding counts as
 * real zeros; int8 weights; exact int32 sums) with the core's requantization fused into
 * it (int8-layers.ts, fusedRequantization: the reference's float32 steps, so the output
 * has its bits). oneDNN's int8 kernels take channels-last activations and give channels-last
 * outputs: the activations are transposed in per image and the uint8 output out, in WASM
 * (transpose_u8), which is cheaper than oneDNN 2.6's uint8 reorder; a layout other than
 * plain channels-last goes through oneDNN's reorders. The weights are reordered once per
 * layer and plan (kept in the layer's engine cache). Fusing the requantization keeps the
 * int32 sums inside oneDNN: no int32 reorder or separate WASM pass, which cost more than
 * the convolution on small layers (BENCHMARKS.md, quantized).
 *
 * Refused, with the reason: inputs whose sums could pass int32 (the core's
 * int32SumProblem; the exact reference serves), CPUs without VNNI (oneDNN's int8 kernels
 * there may saturate or scale the weights), weights with a zero point other than 0
 * (oneDNN's convolution takes symmetric weights only), a bias that is not finite (the
 * reference's clamp and oneDNN's saturation disagree on NaN), and grouped layers with an
 * activation zero point where oneDNN picks its GEMM convolution (groupedGemmProblem).
 */
import { empty, type QTensor, type Tensor } from "@backplane/core";
import { emptyQuantized, int32SumProblem, type QConv2dParams } from "@backplane/core/backend";
import { addressOf, conv2dChannelParams } from "@backplane/core/cpu";
import { modules } from "../kernels/wasm.ts";
import {
  building,
  check,
  dims,
  execute,
  type Handles,
  implOf,
  mdText,
  memory,
  PlanCache,
  primitive,
  primitiveDesc,
  queryMd,
  reorder,
  taggedMd,
} from "./call.ts";
import { biasProblem, fusedRequantization, layerId, layerWeights } from "./int8-layers.ts";
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
  /** Whether oneDNN's activations and output are plain NHWC (WASM transposes them). */
  srcNhwc: boolean;
  dstNhwc: boolean;
  /** NCHW uint8 -> oneDNN's activations, and its output -> NCHW (0n: not needed). */
  srcReorder: bigint;
  dstReorder: bigint;
  weightReorder: bigint;
  srcBytes: number;
  weightBytes: number;
  dstBytes: number;
  scratchBytes: number;
  mem: Record<
    "userSrc" | "src" | "userWeights" | "weights" | "dst" | "userDst" | "bias" | "scratch",
    bigint
  >;
  /** The primitives and memory objects above, destroyed when the cache forgets the plan. */
  handles: Handles;
}

const plans = new PlanCache<QConvPlan>("oneDNN refused this int8 convolution", (plan) =>
  plan.handles.destroy(),
);

/** Forgets every plan (they belong to the engine of the library loaded before). */
export function resetQConvPlans(): void {
  plans.clear();
}

function keyOf(p: QConv2dParams): string {
  const { stride, padding, dilation, groups } = p.packed;
  const x = p.x.qparams as { zeroPoint: number; scale: number };
  return `${layerId(p.packed)}:${p.n},${p.c},${p.h},${p.w},${p.oc},${p.kh},${p.kw},${stride},${padding},${dilation},${groups},${x.zeroPoint},${x.scale},${p.outScale},${p.outZeroPoint}`;
}

// Long: the descriptors of one int8 convolution (user and "any" layouts, geometry), the primitive and its three reorders.
function makePlan(p: QConv2dParams): QConvPlan {
  const d = dnnlState.ready().dnnl;
  const { stride, padding, dilation, groups: g } = p.packed;
  const x = [p.n, p.c, p.h, p.w];
  const y = [p.n, p.oc, p.oh, p.ow];
  const w = g === 1 ? [p.oc, p.c, p.kh, p.kw] : [g, p.oc / g, p.c / g, p.kh, p.kw];
  const wTag = g === 1 ? TAG.dnnl_abcd : TAG.dnnl_abcde;
  const any = TAG.dnnl_format_tag_any;
  const userSrc = taggedMd(x, TAG.dnnl_abcd, T.dnnl_u8);
  const userW = taggedMd(w, wTag, T.dnnl_s8);
  const userDst = taggedMd(y, TAG.dnnl_abcd, T.dnnl_u8);
  const bias = p.packed.bias ? taggedMd([1, p.oc, 1, 1], TAG.dnnl_abcd, T.dnnl_f32) : undefined;
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
      taggedMd(y, any, T.dnnl_u8),
      dims([stride[0], stride[1]]),
      dims([dilation[0] - 1, dilation[1] - 1]), // oneDNN counts dilation from 0
      dims([padding[0], padding[1]]),
      dims([padB, padR]),
    ),
  );
  const pd = primitiveDesc(desc, {
    srcZeroPoint: (p.x.qparams as { zeroPoint: number }).zeroPoint,
    ...fusedRequantization(conv2dChannelParams(p).mult, bias, p.outScale, p.outZeroPoint),
  });
  try {
    const scratch = queryMd(pd, E.dnnl_query_t.dnnl_query_scratchpad_md);
    const src = queryMd(pd, E.dnnl_query_t.dnnl_query_src_md);
    const wts = queryMd(pd, E.dnnl_query_t.dnnl_query_weights_md);
    const dst = queryMd(pd, E.dnnl_query_t.dnnl_query_dst_md);
    const nhwc = (shape: number[], md: typeof src) =>
      d.dnnl_memory_desc_equal(taggedMd(shape, TAG.dnnl_acdb, T.dnnl_u8), md) === 1;
    const srcNhwc = nhwc(x, src);
    const dstNhwc = nhwc(y, dst);
    // A refused reorder destroys the convolution made before it (building).
    return building((h) => ({
      // The layer's reordered weights are kept per layout (not per plan: one a batch size).
      key: `weights ${mdText(wts)}`,
      conv: h.primitive(primitive(pd)),
      impl: implOf(pd),
      srcNhwc,
      dstNhwc,
      srcReorder: srcNhwc ? 0n : h.primitive(reorder(userSrc, src)),
      dstReorder: dstNhwc ? 0n : h.primitive(reorder(dst, userDst)),
      weightReorder: h.primitive(reorder(userW, wts)),
      srcBytes: Number(d.dnnl_memory_desc_get_size(src)),
      weightBytes: Number(d.dnnl_memory_desc_get_size(wts)),
      dstBytes: Number(d.dnnl_memory_desc_get_size(dst)),
      scratchBytes: Number(d.dnnl_memory_desc_get_size(scratch)),
      mem: {
        userSrc: h.memory(memory(userSrc)),
        src: h.memory(memory(src)),
        userWeights: h.memory(memory(userW)),
        weights: h.memory(memory(wts)),
        dst: h.memory(memory(dst)),
        userDst: h.memory(memory(userDst)),
        bias: bias ? h.memory(memory(bias)) : 0n,
        scratch: h.memory(memory(scratch)),
      },
      handles: h,
    }));
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

function planFor(p: QConv2dParams): QConvPlan | string {
  return plans.forParams(
    p,
    () => keyOf(p),
    () => makePlan(p),
  );
}

/** Why the onednn engine's conv2d refuses these inputs, or true. */
export function dnnlQConvSupports(p: QConv2dParams): true | string {
  // oneDNN's int8 convolution sums in s32: exact only while every sum fits int32.
  const overflow = int32SumProblem(p);
  if (overflow) return overflow;
  if (!dnnlState.lib) return "oneDNN is not loaded";
  if (!modules.kernels)
    return "backend-cpu-mkl's WASM kernels (its layout transposes) have not loaded";
  if (!hasVnni())
    return "this CPU has no VNNI: oneDNN's int8 convolutions there may saturate or rescale the weights (qnnpack serves)";
  const w = p.packed.weight.qparams;
  const zps = w.scheme === "per_tensor_affine" ? [w.zeroPoint] : Array.from(w.zeroPoints);
  if (zps.some((z) => z !== 0))
    return "the weights' zero point is not 0; oneDNN's int8 convolution takes symmetric weights";
  const bias = biasProblem(p.packed);
  if (bias) return bias;
  if (p.n === 0) return true;
  const plan = planFor(p);
  if (typeof plan === "string") return plan;
  return groupedGemmProblem(p, plan) ?? true;
}

/**
 * Why oneDNN 2.6's GEMM-based int8 convolution cannot take these grouped inputs, or
 * undefined. With groups > 1 and an activation zero point other than 0, its zero-point
 * compensation gave wrong sums (nearly every output off, by up to tens) on some layers,
 * such as [1, 2, 6, 6] * [8, 1, 4, 2] in 2 groups or [1, 3, 10, 19] * [18, 1, 8, 8] in 3:
 * 33 of 9,216 small grouped layers, none without the zero point, on its jit_int8
 * convolution or with one group. They follow no simple rule, so every such layer steps
 * aside (qnnpack or the reference serves).
 */
function groupedGemmProblem(p: QConv2dParams, plan: QConvPlan): string | undefined {
  const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
  if (p.packed.groups === 1 || xZp === 0 || !plan.impl.includes("gemm")) return undefined;
  return `oneDNN chose ${plan.impl}, whose zero-point compensation gives wrong sums on grouped layers with an activation zero point other than 0`;
}

/**
 * One call: the activations to oneDNN's layout, the convolution with its fused
 * requantization, the uint8 output back to NCHW.
 */
// Long: one call: the activations' transpose, the convolution, the output's transpose, on CPU-device tensors freed in finally.
export function dnnlQConv(p: QConv2dParams): QTensor {
  const result = emptyQuantized(p.outShape, "quint8", p.outScale, p.outZeroPoint);
  const out = result.storage();
  if (out.numel === 0) return result;
  const plan = planFor(p) as QConvPlan;
  const { dnnl: d, stream } = dnnlState.ready();
  const k = modules.kernels!;
  const temps: Tensor[] = [];
  /** A CPU tensor of `count` bytes. */
  const temp = (count: number) => {
    const t = empty([Math.max(1, count)], { dtype: "uint8" });
    temps.push(t);
    return t;
  };
  try {
    const w = layerWeights(p.packed, ONEDNN_ENGINE, plan);
    const x = p.x.storage();
    const src = temp(plan.srcBytes);
    const dst = temp(plan.dstBytes);
    const scratch = temp(plan.scratchBytes);
    const image = p.c * p.h * p.w;
    const outImage = p.oc * p.oh * p.ow;
    dnnlState.applyThreads();
    if (plan.srcNhwc) {
      for (let b = 0; b < p.n; b++)
        k.transpose_u8(addressOf(x) + b * image, p.c, p.h * p.w, addressOf(src) + b * image);
    } else {
      d.dnnl_memory_set_data_handle(plan.mem.userSrc, x.hostData());
      d.dnnl_memory_set_data_handle(plan.mem.src, src.hostData());
      execute(plan.srcReorder, [
        [ARG.FROM, plan.mem.userSrc],
        [ARG.TO, plan.mem.src],
      ]);
    }
    d.dnnl_memory_set_data_handle(plan.mem.src, src.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.weights, w.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.dst, dst.hostData());
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
    execute(plan.conv, args);
    if (!plan.dstNhwc) {
      d.dnnl_memory_set_data_handle(plan.mem.userDst, out.hostData());
      execute(plan.dstReorder, [
        [ARG.FROM, plan.mem.dst],
        [ARG.TO, plan.mem.userDst],
      ]);
    }
    check("dnnl_stream_wait", d.dnnl_stream_wait(stream));
    if (plan.dstNhwc)
      for (let b = 0; b < p.n; b++)
        k.transpose_u8(
          addressOf(dst) + b * outImage,
          p.oh * p.ow,
          p.oc,
          addressOf(out) + b * outImage,
        );
    return result;
  } catch (e) {
    result.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
}
