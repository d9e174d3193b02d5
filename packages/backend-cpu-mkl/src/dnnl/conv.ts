/**
 * conv2d through oneDNN: NCHW in and out for the user, oneDNN's own (blocked) layouts
 * inside. Per input shape a plan is made once and cached: the convolution primitive
 * oneDNN chose for "any" layouts, and the reorders between the user's layouts and its
 * own. The weights' reorder is cached per weight tensor and reused while the weights are
 * byte-for-byte what they were (checked with memcmp, far cheaper than the reorder), so a
 * conv run again with the same weights pays it once. Bias is fused into the primitive;
 * the scratchpad and the blocked copies of input and output are tensors of the CPU device.
 */
import { empty, getFlag, type Tensor } from "@backplane/core";
import type { Conv2dParams } from "@backplane/core/backend";
import { addressOf, allFinite, inWasmMemory } from "@backplane/core/cpu";
import { transposeF32 } from "../kernels/transpose.ts";
import { modules } from "../kernels/wasm.ts";
import {
  check,
  dims,
  execute,
  implOf,
  mdText,
  memory,
  primitive,
  primitiveDesc,
  queryMd,
  reorder,
  taggedMd,
} from "./call.ts";
import {
  type Blocks,
  blocksOf,
  isOneBlock,
  stackedShape,
  stackInput,
  stackInputC16,
  stackWeights,
} from "./kernel-blocks.ts";
import { ARG, CONV_DESC_BYTES, ENUMS, MATMUL_DESC_BYTES } from "./library.ts";
import { dnnlState } from "./state.ts";

const E = ENUMS;

/** What one input shape needs: the primitive, its layouts, the reorders, the memories. */
interface Plan {
  conv: bigint;
  impl: string;
  algorithm: Algorithm;
  /**
   * The OpenMP threads the primitives were made for, and run on: oneDNN fixes a
   * primitive's thread count when it is made (one made for 2 ran on 2 threads after
   * omp_set_num_threads(1)).
   */
  threads: number;
  layout: Layout;
  /**
   * A larger kernel's 3x3 blocks (Winograd, kernel-blocks.ts): the primitive convolves
   * the stacked shifted input with the stacked weights. Undefined: the layer as it is.
   */
  blocks: Blocks | undefined;
  /** The NCHW input the primitive's reorder or move starts from: the user's, or the stacked one. */
  srcShape: number[];
  /** Reorders user -> oneDNN (src, weights) and oneDNN -> user (dst); 0n when the layouts agree. */
  srcReorder: bigint;
  weightReorder: bigint;
  dstReorder: bigint;
  /**
   * oneDNN's layout of the activations (src) and output (dst) when the WASM transposes can
   * move them (f32): channels-last (NHWC), or blocks of 16 channels (nChw16c); faster than
   * oneDNN 2.6's reorders here. Undefined: its reorder.
   */
  srcMoved: Moved | undefined;
  dstMoved: Moved | undefined;
  srcBytes: number;
  weightBytes: number;
  /**
   * The reordered weights' identity: oneDNN's weight descriptor and the user-side one it is
   * reordered from (groups, a cut kernel's stacking), so plans share reordered weights
   * only when their layouts are the same.
   */
  weightsLayout: string;
  dstBytes: number;
  scratchBytes: number;
  /** Memory objects (data handles set per call): user and internal src, weights, dst; bias; scratch. */
  mem: Record<
    "userSrc" | "src" | "userWeights" | "weights" | "userDst" | "dst" | "bias" | "scratch",
    bigint
  >;
}

/**
 * oneDNN's convolution algorithms, one kernel each: "direct" (its direct and brgemm
 * kernels), "winograd" (3x3, stride 1: its F(2x2,3x3) or F(4x4,3x3) kernels on AVX-512,
 * about twice as fast on ResNet's 3x3 layers and less exact, like nnpack's Winograd).
 */
export type Algorithm = "direct" | "winograd";

const plans = new Map<string, Plan | string>();
/** The plan of the last params asked for, per algorithm (supports() then run() ask for the same). */
const last = new Map<Algorithm, { params: Conv2dParams; plan: Plan | string }>();

/**
 * A plan's choice among its contenders (the layouts made, each with and without the WASM
 * transposes, and for a small layer on more than one thread each also on one thread) is
 * timed again at the shape's 8th call and at its first call a second after the first
 * timing, every contender keeping its best time: at a shape's first calls V8's compiler
 * threads or a busy hypervisor can hold a core, and a second thread runs oneDNN's kernels
 * slower for the first few hundred milliseconds of a process (a depthwise 3x3 64 @112
 * layer: 155-160 us, then 137-143 from 300 ms on, Zen 5); the choice lasts the process.
 * Without the rechecks a depthwise 3x3 32 @112 layer on two threads kept a one-thread plan
 * (150 us) in two processes of six, and oneDNN's channels-last one (180 us) in another,
 * where its 16-channel-block plan runs in 80-105. The last recheck counts time, not calls:
 * once the dispatcher prefers another backend, this one is called only to be timed.
 * Contenders past SPREAD times the best are dropped at each timing, and those of the
 * newest RECHECK_LIMIT shapes stay made until their last recheck.
 */
interface Recheck {
  contenders: Plan[];
  /** Each contender's best milliseconds so far. */
  ms: number[];
  /** Calls left before the first recheck (0 after it). */
  callsLeft: number;
  /** Whether the first recheck has run (the next is the last). */
  last: boolean;
  /** performance.now() of the first timing. */
  madeAt: number;
}
const FIRST_RECHECK_AT = 8;
const LAST_RECHECK_AFTER_MS = 1000;
/**
 * Shapes whose contenders wait for their last recheck: a model's distinct layers (ResNet-50
 * has 20 convolution shapes) are all planned within its first second. About 1 MiB of
 * native memory a small layer's eight contenders (Zen 5).
 */
const RECHECK_LIMIT = 32;
/**
 * How many times the best time a contender may take and stay for the last recheck: wide, as
 * a plan can run 3-5x slower for its first second in a process (the 16-channel-block plan
 * above: 400-540 us at its first timing and 8th call in some processes, 80-90 after).
 */
const SPREAD = 10;
/** A one-thread plan is kept over a multi-thread one only when this much faster. */
const ONE_THREAD_MARGIN = 1.1;
const rechecks = new Map<string, Recheck>();
let rechecksMade = 0;
/** How many rechecks have run (tests). */
export const convRechecks = (): number => rechecksMade;

/** Every handle a plan or a waiting contender holds, but `except`'s own contenders. */
function heldPlans(except?: string): (Plan | string)[] {
  return [
    ...plans.values(),
    ...[...rechecks].filter(([k]) => k !== except).flatMap(([, r]) => r.contenders),
  ];
}

/** Forgets key's waiting contenders, destroying what no other plan holds. */
function dropRecheck(key: string): void {
  const r = rechecks.get(key);
  if (!r) return;
  rechecks.delete(key);
  releasePlans(r.contenders, heldPlans());
}

/** Contenders' indices, fastest first; a one-thread plan's time counts ONE_THREAD_MARGIN more. */
function ranked(contenders: readonly Plan[], ms: readonly number[]): number[] {
  const threads = Math.max(...contenders.map((c) => c.threads));
  const score = (i: number) => ms[i] * (contenders[i].threads < threads ? ONE_THREAD_MARGIN : 1);
  return [...contenders.keys()].sort((a, b) => score(a) - score(b));
}

/**
 * The fastest contender first, then those within `spread` times its time (1: none else);
 * the others are released but for the handles `held` holds.
 */
function narrowed(
  contenders: readonly Plan[],
  ms: readonly number[],
  spread: number,
  held: readonly (Plan | string)[],
): { contenders: Plan[]; ms: number[] } {
  const order = ranked(contenders, ms);
  const limit = ms[order[0]] * spread;
  const kept = order.filter((i, rank) => rank === 0 || (spread > 1 && ms[i] <= limit));
  const out = { contenders: kept.map((i) => contenders[i]), ms: kept.map((i) => ms[i]) };
  const dropped = contenders.filter((_, i) => !kept.includes(i));
  releasePlans(dropped, [...out.contenders, ...held]);
  return out;
}

/** The plan for key after its call: at each recheck (see Recheck), the fastest of its contenders. */
function recheckedPlan(key: string, plan: Plan, p: Conv2dParams): Plan {
  const r = rechecks.get(key);
  if (!r || --r.callsLeft > 0) return plan;
  if (r.last && performance.now() - r.madeAt < LAST_RECHECK_AFTER_MS) return plan;
  rechecksMade++;
  const now = bestOfRounds(r.contenders, p, 2, 2);
  const ms = r.ms.map((m, i) => Math.min(m, now[i]));
  const held = heldPlans(key).filter((h) => h !== plan);
  const next = narrowed(r.contenders, ms, r.last ? 1 : SPREAD, held);
  plans.set(key, next.contenders[0]);
  if (next.contenders.length === 1) rechecks.delete(key);
  else Object.assign(r, { ...next, last: true });
  return next.contenders[0];
}

/**
 * Destroys the primitives and memory objects of plans no longer used, but none that a plan
 * in `kept` holds too (a candidate copied without its transposes shares its original's).
 * Nothing else frees them: each new input shape made several plans and kept one, and the
 * plan limit forgot plans without freeing them (0.26 MiB of native memory a shape).
 */
function releasePlans(dropped: readonly Plan[], kept: readonly (Plan | string)[]): void {
  const d = dnnlState.lib?.dnnl;
  if (!d) return;
  const primitives = (plan: Plan) => [
    plan.conv,
    plan.srcReorder,
    plan.weightReorder,
    plan.dstReorder,
  ];
  const memories = (plan: Plan) => Object.values(plan.mem);
  // Handles kept, or already destroyed: each is destroyed at most once, and never a kept one.
  const done = new Set<bigint>([0n]);
  for (const k of kept) {
    if (typeof k === "string") continue;
    for (const h of [...primitives(k), ...memories(k)]) done.add(h);
  }
  const destroy = (h: bigint, fn: (h: bigint) => unknown) => {
    if (done.has(h)) return;
    done.add(h);
    fn(h);
  };
  for (const plan of dropped) {
    for (const h of primitives(plan)) destroy(h, (x) => d.dnnl_primitive_destroy(x));
    for (const h of memories(plan)) destroy(h, (x) => d.dnnl_memory_destroy(x));
  }
}

/**
 * Makes room for one more plan: forgets (and frees) the oldest one that no `last` entry
 * holds, since a call's supports() and run() share that plan.
 */
function evictOldestPlan(): void {
  const inUse = new Set([...last.values()].map((l) => l.plan));
  for (const [key, plan] of plans) {
    if (inUse.has(plan)) continue;
    plans.delete(key);
    // The plan and its waiting contenders in one release: a twin's shared handles go once.
    const r = rechecks.get(key);
    rechecks.delete(key);
    const dropped = [...(typeof plan === "string" ? [] : [plan]), ...(r?.contenders ?? [])];
    releasePlans(dropped, heldPlans());
    return;
  }
}

/** Forgets every plan (they belong to the engine of the library loaded before). */
export function resetConvPlans(): void {
  plans.clear();
  last.clear();
  rechecks.clear();
}

/**
 * The activations' layouts a plan may ask oneDNN for: "blocked", its choice ("any":
 * channels-last for its brgemm kernels on AVX-512, reorders around them); "plain", NCHW in
 * and out (no reorders; oneDNN's kernel for it is often its GEMM, refused in call.ts);
 * "c16", blocks of 16 channels (nChw16c) out, and in where the input channels are a
 * multiple of 16 (else NCHW in, as for an RGB stem): its direct jit kernels, the layout
 * PyTorch's oneDNN runs, and its jit_dw on depthwise layers. The 16-channel blocks move
 * to and from NCHW faster than channels-last (oneDNN's reorders: 0.13 against 0.36-0.44 ms
 * for the 64 x 112 x 112 output of a 7x7/2 stem, Zen 4). "matmul", a 1x1 layer of stride 1
 * and no padding as oneDNN's matmul (weights [oc, c] times each image's [c, h*w], NCHW in
 * and out, no reorders): its brgemm kernel ran a 1x1 64>256 @56 in 0.93 ms against 1.05 for
 * the convolution's, a 96>24 @56 in 0.15 against 0.27 (Zen 4, one thread).
 */
type Layout = "blocked" | "plain" | "c16" | "matmul";
type Moved = "nhwc" | "c16";

/** Which layouts a plan may use ("auto": the fastest of those that apply, timed); tests pin one. */
let layouts: "auto" | Layout = "auto";
export function setDnnlLayouts(mode: "auto" | Layout): void {
  layouts = mode;
  last.clear();
}
const PLAN_LIMIT = 64;

function keyOf(p: Conv2dParams): string {
  return `${p.dtype},${p.n},${p.c},${p.h},${p.w},${p.outChannels},${p.kh},${p.kw},${p.strideH},${p.strideW},${p.padTop},${p.padLeft},${p.dilationH},${p.dilationW},${p.groups},${p.outH},${p.outW},${p.bias ? 1 : 0}`;
}

/** The primitive oneDNN picks for these sizes, with "any" layouts (its fastest), made for `threads`. */
// Long: the descriptors of one convolution (user and "any" layouts, strides, dilations, paddings), the primitive and its three reorders.
function makePlan(p: Conv2dParams, layout: Layout, threads: number, algorithm: Algorithm): Plan {
  if (layout === "matmul") return makeMatmulPlan(p, threads);
  const d = dnnlState.ready().dnnl;
  dnnlState.applyThreads(threads);
  const g = p.groups;
  const oc = p.outChannels;
  const cut = algorithm === "winograd" ? blocksOf(p) : undefined;
  if (typeof cut === "string") throw new Error(cut);
  const blocks = cut && !isOneBlock(cut) ? cut : undefined;
  // A cut kernel: one unpadded 3x3 convolution of the stacked input (kernel-blocks.ts).
  const x = blocks ? stackedShape(p, blocks) : [p.n, p.c, p.h, p.w];
  const c = x[1];
  const [kh, kw] = blocks ? [3, 3] : [p.kh, p.kw];
  const y = [p.n, oc, p.outH, p.outW];
  const w = g === 1 ? [oc, c, kh, kw] : [g, oc / g, c / g, kh, kw];
  const wTag = g === 1 ? E.dnnl_format_tag_t.dnnl_abcd : E.dnnl_format_tag_t.dnnl_abcde;
  const any = E.dnnl_format_tag_t.dnnl_format_tag_any;
  const tag = E.dnnl_format_tag_t;
  const srcTag =
    layout === "plain" || (layout === "c16" && c % 16 !== 0)
      ? tag.dnnl_abcd
      : layout === "c16"
        ? tag.dnnl_aBcd16b
        : any;
  const dstTag = layout === "plain" ? tag.dnnl_abcd : layout === "c16" ? tag.dnnl_aBcd16b : any;
  const t = p.dtype === "bfloat16" ? E.dnnl_data_type_t.dnnl_bf16 : E.dnnl_data_type_t.dnnl_f32;
  const userSrc = taggedMd(x, E.dnnl_format_tag_t.dnnl_abcd, t);
  const userDst = taggedMd(y, E.dnnl_format_tag_t.dnnl_abcd, t);
  const userW = taggedMd(w, wTag, t);
  const biasMd = p.bias ? taggedMd([oc], E.dnnl_format_tag_t.dnnl_a, t) : null;
  // oneDNN's padding on the right/bottom: what makes its output size formula give outH/outW.
  const padT = blocks ? 0 : p.padTop;
  const padL = blocks ? 0 : p.padLeft;
  const padB = (p.outH - 1) * p.strideH + (kh - 1) * p.dilationH + 1 - x[2] - padT;
  const padR = (p.outW - 1) * p.strideW + (kw - 1) * p.dilationW + 1 - x[3] - padL;
  const desc = new Uint8Array(CONV_DESC_BYTES);
  check(
    "dnnl_dilated_convolution_forward_desc_init",
    d.dnnl_dilated_convolution_forward_desc_init(
      desc,
      E.dnnl_prop_kind_t.dnnl_forward_inference,
      algorithm === "winograd"
        ? E.dnnl_alg_kind_t.dnnl_convolution_winograd
        : E.dnnl_alg_kind_t.dnnl_convolution_direct,
      taggedMd(x, srcTag, t),
      taggedMd(w, any, t),
      biasMd,
      taggedMd(y, dstTag, t),
      dims([p.strideH, p.strideW]),
      dims([p.dilationH - 1, p.dilationW - 1]), // oneDNN counts dilation from 0
      dims([padT, padL]),
      dims([padB, padR]),
    ),
  );
  const pd = primitiveDesc(desc);
  try {
    // Its reference code: a layout no JIT kernel takes (NCHW in, blocked out on a 1x1 layer
    // ran 1.2 s against 1 ms); timing it at the first call would cost seconds.
    const impl = implOf(pd);
    if (impl.startsWith("ref")) throw new Error(`oneDNN has only ${impl} for this layout`);
    const src = queryMd(pd, E.dnnl_query_t.dnnl_query_src_md);
    const wts = queryMd(pd, E.dnnl_query_t.dnnl_query_weights_md);
    const dst = queryMd(pd, E.dnnl_query_t.dnnl_query_dst_md);
    const scratch = queryMd(pd, E.dnnl_query_t.dnnl_query_scratchpad_md);
    const is = (shape: number[], md: typeof src, tg: number) =>
      d.dnnl_memory_desc_equal(taggedMd(shape, tg, t), md) === 1;
    // Channels in whole groups of four: the transpose's 4 x 4 blocks (an RGB input's
    // three channels would go element by element; oneDNN's reorder is faster there).
    const moved = (shape: number[], md: typeof src): Moved | undefined =>
      t !== E.dnnl_data_type_t.dnnl_f32 || shape[1] % 4 !== 0
        ? undefined
        : is(shape, md, tag.dnnl_acdb)
          ? "nhwc"
          : shape[1] % 16 === 0 && is(shape, md, tag.dnnl_aBcd16b)
            ? "c16"
            : undefined;
    return {
      conv: primitive(pd),
      threads,
      layout,
      algorithm,
      blocks,
      srcShape: x,
      impl,
      srcReorder: reorder(userSrc, src),
      weightReorder: reorder(userW, wts),
      dstReorder: reorder(dst, userDst),
      srcMoved: moved(x, src),
      dstMoved: moved(y, dst),
      srcBytes: Number(d.dnnl_memory_desc_get_size(src)),
      weightBytes: Number(d.dnnl_memory_desc_get_size(wts)),
      weightsLayout: `${mdText(wts)}|${mdText(userW)}|${blocks ? `${blocks.rows}x${blocks.cols}` : ""}`,
      dstBytes: Number(d.dnnl_memory_desc_get_size(dst)),
      scratchBytes: Number(d.dnnl_memory_desc_get_size(scratch)),
      mem: {
        userSrc: memory(userSrc),
        src: memory(src),
        userWeights: memory(userW),
        weights: memory(wts),
        userDst: memory(userDst),
        dst: memory(dst),
        bias: biasMd ? memory(biasMd) : 0n,
        scratch: memory(scratch),
      },
    };
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

/** A 1x1 convolution of stride 1 and no padding: a product of the weights and each image. */
function isPointwise(p: Conv2dParams): boolean {
  return (
    p.kh === 1 &&
    p.kw === 1 &&
    p.strideH === 1 &&
    p.strideW === 1 &&
    p.padTop === 0 &&
    p.padLeft === 0 &&
    p.outH === p.h &&
    p.outW === p.w &&
    p.groups === 1
  );
}

/**
 * A pointwise layer as oneDNN's matmul: weights [1, oc, c] (broadcast over the batch) times
 * the input [n, c, h*w] gives the output [n, oc, h*w], each in the user's NCHW memory; the
 * bias, one per output row, is a binary post-op (oneDNN's own per-row matmul bias has only
 * its reference code). The plan's "src" memories hold the input and "weights" the weights,
 * as for a convolution; runPlan passes them to the matmul's operands the other way round.
 */
function makeMatmulPlan(p: Conv2dParams, threads: number): Plan {
  if (!isPointwise(p)) throw new Error("a matmul plan takes 1x1 layers of stride 1, unpadded");
  // oneDNN 2.6 divides by zero (SIGFPE, the process ends) making a matmul with an empty side.
  if (p.n * p.c * p.outChannels * p.h * p.w === 0)
    throw new Error("an empty product: oneDNN makes no matmul with an empty side");
  const d = dnnlState.ready().dnnl;
  dnnlState.applyThreads(threads);
  const t = p.dtype === "bfloat16" ? E.dnnl_data_type_t.dnnl_bf16 : E.dnnl_data_type_t.dnnl_f32;
  const abc = E.dnnl_format_tag_t.dnnl_abc;
  const hw = p.h * p.w;
  const x = taggedMd([p.n, p.c, hw], abc, t);
  const w = taggedMd([1, p.outChannels, p.c], abc, t);
  const y = taggedMd([p.n, p.outChannels, hw], abc, t);
  const bias = p.bias ? taggedMd([1, p.outChannels, 1], abc, t) : null;
  const desc = new Uint8Array(MATMUL_DESC_BYTES);
  check("dnnl_matmul_desc_init", d.dnnl_matmul_desc_init(desc, w, x, null, y));
  const pd = primitiveDesc(desc, {
    postOps: bias ? [{ binary: E.dnnl_alg_kind_t.dnnl_binary_add, src1: bias }] : [],
  });
  try {
    const impl = implOf(pd);
    // Its reference code is far slower than the convolution's kernels.
    if (impl.startsWith("ref")) throw new Error(`oneDNN has only ${impl} for this product`);
    const scratch = queryMd(pd, E.dnnl_query_t.dnnl_query_scratchpad_md);
    const none = 0n;
    return {
      conv: primitive(pd),
      threads,
      layout: "matmul",
      algorithm: "direct",
      blocks: undefined,
      srcShape: [p.n, p.c, p.h, p.w],
      impl,
      srcReorder: none,
      weightReorder: none,
      dstReorder: none,
      srcMoved: undefined,
      dstMoved: undefined,
      srcBytes: 0,
      weightBytes: 0,
      weightsLayout: "", // the user's weights as they are: nothing reordered or cached
      dstBytes: 0,
      scratchBytes: Number(d.dnnl_memory_desc_get_size(scratch)),
      mem: {
        userSrc: memory(x),
        src: none,
        userWeights: none,
        weights: memory(w),
        userDst: memory(y),
        dst: none,
        bias: bias ? memory(bias) : none,
        scratch: memory(scratch),
      },
    };
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

/** Below this many flops a layer may run on one thread (depthwise 3x3 576 @14: 2 M). */
const SMALL_LAYER_FLOPS = 8e6;

const convWork = (p: Conv2dParams): number =>
  (2 * p.n * p.outChannels * p.outH * p.outW * p.c * p.kh * p.kw) / p.groups;

/**
 * Each plan's best milliseconds over interleaved rounds (the plans in turn, the order
 * reversed every other round, so a stretch of slow vCPU falls on every plan rather than
 * on the one timed then: timed one after another, a 7x7/2 stem once kept its 2.59 ms
 * plan over the 2.20 ms one, Zen 4). Each turn is one untimed call (it pays for
 * switching the OpenMP thread count or plan, or for the first run) and `timed` timed
 * ones. The best, not the median: a VM's other threads (V8's compilers at start-up) can
 * stall a two-thread barrier for milliseconds, and a median of a few calls once picked
 * oneDNN's NCHW GEMM (0.7 ms) over its depthwise kernel (0.2 ms) that way.
 */
function bestOfRounds(plans: Plan[], p: Conv2dParams, rounds: number, timed: number): number[] {
  const best = plans.map(() => Number.POSITIVE_INFINITY);
  const order = [...plans.keys()];
  for (let r = 0; r < rounds; r++)
    for (const i of r % 2 ? [...order].reverse() : order) {
      runPlan(plans[i], p).dispose();
      for (let k = 0; k < timed; k++) {
        const t0 = performance.now();
        runPlan(plans[i], p).dispose();
        best[i] = Math.min(best[i], performance.now() - t0);
      }
    }
  return best;
}

/**
 * The plan for these params, or why oneDNN refuses them (cached either way). oneDNN's
 * blocked-layout kernels win on most layers, its NCHW (GEMM) kernels on some 1x1 ones
 * (3x on a 1x1 96>24 at 56x56 here): both are made at the first call of a shape and the
 * faster one is kept, and on more than one thread, one thread if that is faster still.
 * The thread setting is part of the key: a new setting measures again.
 */
export function planFor(p: Conv2dParams, algorithm: Algorithm = "direct"): Plan | string {
  const seen = last.get(algorithm);
  if (seen?.params === p) return seen.plan;
  const plan = nonFiniteBf16Input(p) ?? lookUpPlan(p, algorithm);
  last.set(algorithm, { params: p, plan });
  return plan;
}

/**
 * Why a bfloat16 input holding NaN or infinity is left to the other kernels: oneDNN 2.6's
 * bf16 kernels multiply pairs of inputs (vdpbf16ps), one of them past the kernel's taps or
 * channels with a weight of 0, so 0 x inf put NaN at outputs that never see the value
 * (x [1, 1, 16, 16] with one inf, a 3x3 kernel, padding 1: 27 outputs NaN where the
 * reference has +-inf, and 9 more NaN around a NaN pixel). Checked every call (data, not
 * shape), never cached with the plan.
 */
function nonFiniteBf16Input(p: Conv2dParams): string | undefined {
  if (p.dtype !== "bfloat16" || allFinite(p.input)) return undefined;
  return "the bfloat16 input holds NaN or infinity, which oneDNN's bf16 kernels spread to outputs that do not see it (0 x inf); the reference kernel keeps it local";
}

function lookUpPlan(p: Conv2dParams, algorithm: Algorithm): Plan | string {
  // Deterministic mode: one plan whatever the thread setting (the first layout oneDNN
  // makes, no timing), run on one thread: oneDNN's kernels split a layer's sums by thread
  // count (a 7x7/2 layer differed between 1 and 2 threads), so the bits would too.
  const deterministic = getFlag("core.deterministic") === true;
  const threads = deterministic ? 1 : dnnlState.threadsWanted();
  const key = `${algorithm}:${layouts}:${deterministic ? "det" : threads}:${keyOf(p)}`;
  let plan = plans.get(key);
  if (typeof plan === "object") return recheckedPlan(key, plan, p);
  if (plan === undefined) {
    const made: Plan[] = [];
    const reasons: string[] = [];
    const tried: Layout[] =
      layouts !== "auto"
        ? [layouts]
        : [
            "blocked",
            ...(p.outChannels % 16 === 0 ? (["c16"] as const) : []),
            "plain",
            ...(isPointwise(p) && algorithm === "direct" ? (["matmul"] as const) : []),
          ];
    for (const layout of tried) {
      try {
        made.push(makePlan(p, layout, threads, algorithm));
      } catch (e) {
        reasons.push(`${layout}: ${(e as Error).message}`);
      }
    }
    if (made.length === 0) plan = `oneDNN refused this convolution (${reasons.join("; ")})`;
    else if (deterministic || p.n === 0) {
      plan = made[0];
      releasePlans(made.slice(1), [plan]);
    } else plan = fastestOf(made, p, key, algorithm, threads);
    if (algorithm === "winograd" && typeof plan !== "string" && !deterministic && p.n > 0) {
      const winograd = plan;
      plan = fasterThanDirect(winograd, p);
      if (plan !== winograd) releasePlans([winograd], []);
    }
    if (plans.size >= PLAN_LIMIT) evictOldestPlan();
    plans.set(key, plan);
  }
  return plan;
}

/**
 * The fastest of the contenders (the layouts made, each also without its WASM transposes,
 * and for a small layer on more than one thread each also on one thread), timed now; those
 * within SPREAD of it wait for the rechecks (recheckedPlan).
 */
function fastestOf(
  made: Plan[],
  p: Conv2dParams,
  key: string,
  algorithm: Algorithm,
  threads: number,
): Plan {
  // A small layer can lose more to waking the OpenMP threads (three parallel regions a
  // call) than it gains from them: its one-thread plans contend too.
  if (threads > 1 && convWork(p) < SMALL_LAYER_FLOPS)
    for (const plan of [...made]) {
      try {
        made.push(makePlan(p, plan.layout, 1, algorithm));
      } catch {
        // The layout made for all threads stays a contender.
      }
    }
  // Each plan whose activations the WASM transposes can move also as it is with
  // oneDNN's reorders: the transposes win on depthwise layers, the reorders on some
  // dense ones (a 7x7/2 3>64 @224 layer's 64-channel output: 3.0 against 2.6 ms, Zen 4).
  const candidates = made.flatMap((m) =>
    m.srcMoved || m.dstMoved ? [m, { ...m, srcMoved: undefined, dstMoved: undefined }] : [m],
  );
  // Two rounds of one timed call each: the rechecks time again.
  const times = bestOfRounds(candidates, p, 2, 1);
  const recheck = algorithm === "direct" && candidates.length > 1;
  const next = narrowed(candidates, times, recheck ? SPREAD : 1, heldPlans());
  if (next.contenders.length > 1) {
    if (rechecks.size >= RECHECK_LIMIT) dropRecheck(rechecks.keys().next().value as string);
    rechecks.set(key, {
      ...next,
      callsLeft: FIRST_RECHECK_AT - 1,
      last: false,
      madeAt: performance.now(),
    });
  }
  return next.contenders[0];
}

/**
 * A Winograd plan where it beats oneDNN's direct plan for the shape, else why not: the
 * per-shape ranking times one kernel a backend (onednn-winograd, the first where it
 * applies), so the backend's own choice between its two algorithms is made here.
 */
function fasterThanDirect(winograd: Plan, p: Conv2dParams): Plan | string {
  const direct = planFor(p, "direct");
  if (typeof direct === "string") return winograd;
  const [msWinograd, msDirect] = bestOfRounds([winograd, direct], p, 2, 3);
  return msWinograd < msDirect
    ? winograd
    : `oneDNN's direct kernel measured faster on this shape (${msDirect.toFixed(3)} against ${msWinograd.toFixed(3)} ms for Winograd): onednn-conv runs it`;
}

const data = (t: Tensor): ArrayBufferView => t.hostData();

/** The weights in oneDNN's layout: from the cache when unchanged, else reordered now. */
function weightsFor(p: Conv2dParams, plan: Plan): Tensor {
  const { dnnl: d } = dnnlState.ready();
  if (plan.weightReorder === 0n) return p.weight;
  return dnnlState.weightCache.get(
    p.weight,
    plan.weightBytes,
    plan.weightsLayout,
    (into) => {
      // A cut kernel's blocks stacked first (kernel-blocks.ts), then reordered from there.
      const stacked = plan.blocks
        ? empty([p.outChannels, plan.srcShape[1], 3, 3], { dtype: "float32" })
        : undefined;
      try {
        if (stacked) stackWeights(p, plan.blocks as Blocks, stacked.hostData() as Float32Array);
        d.dnnl_memory_set_data_handle(plan.mem.userWeights, data(stacked ?? p.weight));
        d.dnnl_memory_set_data_handle(plan.mem.weights, data(into));
        execute(plan.weightReorder, [
          [ARG.FROM, plan.mem.userWeights],
          [ARG.TO, plan.mem.weights],
        ]);
      } finally {
        stacked?.dispose();
      }
    },
    p,
  );
}

/**
 * Activations between NCHW (`nchw` side) and oneDNN's layout, per image: channels-last is
 * one C x HW transpose, nChw16c one 16 x HW transpose per block of 16 channels.
 */
function move(
  layout: Moved,
  way: "in" | "out",
  from: Tensor,
  to: Tensor,
  n: number,
  c: number,
  hw: number,
): void {
  const a = addressOf(from);
  const b = addressOf(to);
  const image = 4 * c * hw;
  const blocks = layout === "nhwc" ? 1 : c / 16;
  const rows = layout === "nhwc" ? c : 16; // channels a transpose moves
  const block = 4 * rows * hw;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < blocks; j++) {
      const at = i * image + j * block;
      if (way === "in") transposeF32(a + at, rows, hw, b + at);
      else transposeF32(a + at, hw, rows, b + at);
    }
}

/**
 * The input in the primitive's layout: the user's tensor, or a temporary it was moved or
 * reordered into; for a cut kernel the stacked shifted input (kernel-blocks.ts), written
 * straight in 16-channel blocks where the plan moves to those and the channels fill them.
 */
function sourceFor(
  plan: Plan,
  p: Conv2dParams,
  wasm: boolean,
  temp: (bytes: number) => Tensor,
): Tensor {
  const [n, c, h, w] = plan.srcShape;
  if (plan.blocks && plan.srcMoved === "c16" && wasm && p.c % 16 === 0) {
    const src = temp(plan.srcBytes);
    stackInputC16(p, plan.blocks, src, temp(4 * p.c * p.h * p.w));
    return src;
  }
  const input = plan.blocks ? temp(4 * n * c * h * w) : p.input;
  if (plan.blocks) stackInput(p, plan.blocks, input);
  if (!plan.srcReorder) return input;
  const src = temp(plan.srcBytes);
  if (plan.srcMoved && wasm) move(plan.srcMoved, "in", input, src, n, c, h * w);
  else {
    const { dnnl: d } = dnnlState.ready();
    d.dnnl_memory_set_data_handle(plan.mem.userSrc, data(input));
    d.dnnl_memory_set_data_handle(plan.mem.src, data(src));
    execute(plan.srcReorder, [
      [ARG.FROM, plan.mem.userSrc],
      [ARG.TO, plan.mem.src],
    ]);
  }
  return src;
}

/** conv2d on oneDNN; params already accepted by its supports() (plan made). */
export function dnnlConv(p: Conv2dParams, algorithm: Algorithm = "direct"): Tensor {
  return runPlan(planFor(p, algorithm) as Plan, p);
}

/**
 * conv2d on oneDNN's Winograd plan, run again on its direct plan when the output is not
 * finite. Input and weight are finite here (supports()), but the transforms scale a tile
 * up before the products: at |x| and |w| near 1e18 a 3x3 16>16 layer gave +-inf at 27
 * outputs whose true values (and the direct plan's) were below 1e38. The scan is one pass
 * over the output; the second run happens only where float32 nearly overflowed (or the
 * bias is not finite, where the direct plan gives the same answer).
 */
export function dnnlWinogradConv(p: Conv2dParams): Tensor {
  const y = dnnlConv(p, "winograd");
  if (allFinite(y)) return y;
  const direct = planFor(p, "direct");
  if (typeof direct === "string") return y;
  y.dispose();
  return runPlan(direct, p);
}

// Long: one call: threads, the input's reorder, the convolution, the output's reorder, each on CPU-device tensors freed in finally.
function runPlan(plan: Plan, p: Conv2dParams): Tensor {
  const { dnnl: d } = dnnlState.ready();
  dnnlState.applyThreads(plan.threads);
  const y = empty([p.n, p.outChannels, p.outH, p.outW], { dtype: p.dtype });
  if (y.numel === 0) return y;
  const temps: Tensor[] = [];
  const temp = (bytes: number) => {
    const t = empty([Math.max(1, Math.ceil(bytes / 4))], { dtype: "float32" });
    temps.push(t);
    return t;
  };
  try {
    const w = weightsFor(p, plan);
    // The WASM transposes, where the kernels are loaded and the tensors in their memory.
    const wasm = modules.kernels !== undefined && inWasmMemory(p.input) && inWasmMemory(y);
    const src = sourceFor(plan, p, wasm, temp);
    const dst = plan.dstReorder ? temp(plan.dstBytes) : y;
    const scratch = temp(plan.scratchBytes);
    d.dnnl_memory_set_data_handle(plan.srcReorder ? plan.mem.src : plan.mem.userSrc, data(src));
    d.dnnl_memory_set_data_handle(plan.mem.weights, data(w));
    d.dnnl_memory_set_data_handle(plan.dstReorder ? plan.mem.dst : plan.mem.userDst, data(dst));
    d.dnnl_memory_set_data_handle(plan.mem.scratch, data(scratch));
    const srcMem = plan.srcReorder ? plan.mem.src : plan.mem.userSrc;
    const matmul = plan.layout === "matmul";
    const args: [number, bigint][] = [
      [matmul ? ARG.WEIGHTS : ARG.SRC, srcMem],
      [matmul ? ARG.SRC : ARG.WEIGHTS, plan.mem.weights],
      [ARG.DST, plan.dstReorder ? plan.mem.dst : plan.mem.userDst],
      [ARG.SCRATCHPAD, plan.mem.scratch],
    ];
    if (p.bias) {
      d.dnnl_memory_set_data_handle(plan.mem.bias, data(p.bias));
      args.push([matmul ? ARG.POST_OP_0_SRC_1 : ARG.BIAS, plan.mem.bias]);
    }
    execute(plan.conv, args);
    if (plan.dstReorder && plan.dstMoved && wasm) {
      check("dnnl_stream_wait", d.dnnl_stream_wait(dnnlState.ready().stream));
      move(plan.dstMoved, "out", dst, y, p.n, p.outChannels, p.outH * p.outW);
    } else if (plan.dstReorder) {
      d.dnnl_memory_set_data_handle(plan.mem.userDst, data(y));
      execute(plan.dstReorder, [
        [ARG.FROM, plan.mem.dst],
        [ARG.TO, plan.mem.userDst],
      ]);
    }
    check("dnnl_stream_wait", d.dnnl_stream_wait(dnnlState.ready().stream));
    return y;
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
}
