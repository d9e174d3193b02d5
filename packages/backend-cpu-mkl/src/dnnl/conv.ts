/**
 * conv2d through oneDNN: NCHW in and out for the user, oneDNN's own (blocked) layouts
 * inside. Per input shape a plan is made once and cached: the convolution primitive
 * oneDNN chose for "any" layouts, and the reorders between the user's layouts and its
 * own. The weights' reorder is cached per weight tensor and reused while the weights are
 * byte-for-byte what they were (checked with memcmp, far cheaper than the reorder), so a
 * conv run again with the same weights pays it once. Bias is fused into the primitive;
 * the scratchpad and the blocked copies of input and output are tensors of the CPU device.
 */
import { empty, type Tensor } from "@backplane/core";
import {
  type Conv2dParams,
  type Pointer,
  ptrAddress,
  ptrOf,
  readPointer,
} from "@backplane/core/backend";
import {
  ARG,
  CONV_DESC_BYTES,
  type DnnlSymbols,
  ENUMS,
  EXEC_ARG_BYTES,
  MEMORY_DESC_BYTES,
  STATUS_NAMES,
} from "./library.ts";
import { dnnlState } from "./state.ts";

const E = ENUMS;

/** A oneDNN call that failed: the function and oneDNN's status name. */
export class DnnlCallError extends Error {}

function check(fn: string, status: number): void {
  if (status !== E.dnnl_status_t.dnnl_success)
    throw new DnnlCallError(`${fn} returned ${STATUS_NAMES[status] ?? status}`);
}

const out = () => new BigUint64Array(1);
const handleOf = (o: BigUint64Array): bigint => o[0];
const dims = (xs: number[]) =>
  new BigInt64Array([...xs.map(BigInt), ...Array(12 - xs.length).fill(0n)]);

function md(d: DnnlSymbols, shape: number[], tag: number, type: number): Uint8Array {
  const m = new Uint8Array(MEMORY_DESC_BYTES);
  check(
    "dnnl_memory_desc_init_by_tag",
    d.dnnl_memory_desc_init_by_tag(m, shape.length, dims(shape), type, tag),
  );
  return m;
}

/** What one input shape needs: the primitive, its layouts, the reorders, the memories. */
interface Plan {
  conv: bigint;
  impl: string;
  /** 1 when one thread measured faster than the setting (small layers), else the setting. */
  oneThread: boolean;
  /** Reorders user -> oneDNN (src, weights) and oneDNN -> user (dst); 0n when the layouts agree. */
  srcReorder: bigint;
  weightReorder: bigint;
  dstReorder: bigint;
  srcBytes: number;
  weightBytes: number;
  dstBytes: number;
  scratchBytes: number;
  /** Memory objects (data handles set per call): user and internal src, weights, dst; bias; scratch. */
  mem: Record<
    "userSrc" | "src" | "userWeights" | "weights" | "userDst" | "dst" | "bias" | "scratch",
    bigint
  >;
}

const plans = new Map<string, Plan | string>();

/** Forgets every plan (they belong to the engine of the library loaded before). */
export function resetConvPlans(): void {
  plans.clear();
}

/** Which of oneDNN's layouts a plan may use ("auto": the faster, timed); tests pin one. */
let layouts: "auto" | "blocked" | "plain" = "auto";
export function setDnnlLayouts(mode: "auto" | "blocked" | "plain"): void {
  layouts = mode;
}
const PLAN_LIMIT = 64;

function keyOf(p: Conv2dParams): string {
  return `${p.dtype},${p.n},${p.c},${p.h},${p.w},${p.outChannels},${p.kh},${p.kw},${p.strideH},${p.strideW},${p.padTop},${p.padLeft},${p.dilationH},${p.dilationW},${p.groups},${p.outH},${p.outW},${p.bias ? 1 : 0}`;
}

function queryMd(d: DnnlSymbols, pd: bigint, what: number): Pointer {
  const p = d.dnnl_primitive_desc_query_md(pd, what, 0);
  if (!p) throw new DnnlCallError(`dnnl_primitive_desc_query_md(${what}) returned NULL`);
  return p;
}

function reorder(
  d: DnnlSymbols,
  engine: bigint,
  from: Pointer | Uint8Array,
  to: Pointer | Uint8Array,
): bigint {
  if (d.dnnl_memory_desc_equal(from, to) === 1) return 0n;
  const o = out();
  check(
    "dnnl_reorder_primitive_desc_create",
    d.dnnl_reorder_primitive_desc_create(o, from, engine, to, engine, 0n),
  );
  const pd = handleOf(o);
  try {
    const p = out();
    check("dnnl_primitive_create", d.dnnl_primitive_create(p, pd));
    return handleOf(p);
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

function memory(d: DnnlSymbols, engine: bigint, desc: Pointer | Uint8Array): bigint {
  const o = out();
  check("dnnl_memory_create", d.dnnl_memory_create(o, desc, engine, null));
  return handleOf(o);
}

/** The primitive oneDNN picks for these sizes, with "any" layouts (its fastest). */
// Long: the descriptors of one convolution (user and "any" layouts, strides, dilations, paddings), the primitive and its three reorders.
function makePlan(p: Conv2dParams, layout: "blocked" | "plain"): Plan {
  const { dnnl: d, engine } = dnnlState.ready();
  const g = p.groups;
  const oc = p.outChannels;
  const x = [p.n, p.c, p.h, p.w];
  const y = [p.n, oc, p.outH, p.outW];
  const w = g === 1 ? [oc, p.c, p.kh, p.kw] : [g, oc / g, p.c / g, p.kh, p.kw];
  const wTag = g === 1 ? E.dnnl_format_tag_t.dnnl_abcd : E.dnnl_format_tag_t.dnnl_abcde;
  const any = E.dnnl_format_tag_t.dnnl_format_tag_any;
  // "blocked": oneDNN picks the activations' layout (its direct kernels, reorders around
  // them); "plain": NCHW in and out (its GEMM-based kernels, no reorders).
  const act = layout === "plain" ? E.dnnl_format_tag_t.dnnl_abcd : any;
  const t = p.dtype === "bfloat16" ? E.dnnl_data_type_t.dnnl_bf16 : E.dnnl_data_type_t.dnnl_f32;
  const userSrc = md(d, x, E.dnnl_format_tag_t.dnnl_abcd, t);
  const userDst = md(d, y, E.dnnl_format_tag_t.dnnl_abcd, t);
  const userW = md(d, w, wTag, t);
  const biasMd = p.bias ? md(d, [oc], E.dnnl_format_tag_t.dnnl_a, t) : null;
  // oneDNN's padding on the right/bottom: what makes its output size formula give outH/outW.
  const padB = (p.outH - 1) * p.strideH + (p.kh - 1) * p.dilationH + 1 - p.h - p.padTop;
  const padR = (p.outW - 1) * p.strideW + (p.kw - 1) * p.dilationW + 1 - p.w - p.padLeft;
  const desc = new Uint8Array(CONV_DESC_BYTES);
  check(
    "dnnl_dilated_convolution_forward_desc_init",
    d.dnnl_dilated_convolution_forward_desc_init(
      desc,
      E.dnnl_prop_kind_t.dnnl_forward_inference,
      E.dnnl_alg_kind_t.dnnl_convolution_direct,
      md(d, x, act, t),
      md(d, w, any, t),
      biasMd,
      md(d, y, act, t),
      dims([p.strideH, p.strideW]),
      dims([p.dilationH - 1, p.dilationW - 1]), // oneDNN counts dilation from 0
      dims([p.padTop, p.padLeft]),
      dims([padB, padR]),
    ),
  );
  const attr = out();
  check("dnnl_primitive_attr_create", d.dnnl_primitive_attr_create(attr));
  const pdOut = out();
  try {
    check(
      "dnnl_primitive_attr_set_scratchpad_mode",
      d.dnnl_primitive_attr_set_scratchpad_mode(
        handleOf(attr),
        E.dnnl_scratchpad_mode_t.dnnl_scratchpad_mode_user,
      ),
    );
    check(
      "dnnl_primitive_desc_create",
      d.dnnl_primitive_desc_create(pdOut, ptrAddress(ptrOf(desc)), handleOf(attr), engine, 0n),
    );
  } finally {
    d.dnnl_primitive_attr_destroy(handleOf(attr));
  }
  const pd = handleOf(pdOut);
  try {
    const src = queryMd(d, pd, E.dnnl_query_t.dnnl_query_src_md);
    const wts = queryMd(d, pd, E.dnnl_query_t.dnnl_query_weights_md);
    const dst = queryMd(d, pd, E.dnnl_query_t.dnnl_query_dst_md);
    const scratch = queryMd(d, pd, E.dnnl_query_t.dnnl_query_scratchpad_md);
    const implOut = new BigUint64Array(1);
    d.dnnl_primitive_desc_query(pd, E.dnnl_query_t.dnnl_query_impl_info_str, 0, implOut);
    const implPtr = readPointer(implOut);
    const prim = out();
    check("dnnl_primitive_create", d.dnnl_primitive_create(prim, pd));
    return {
      conv: handleOf(prim),
      oneThread: false,
      impl: implPtr ? dnnlState.cString(implPtr) : "?",
      srcReorder: reorder(d, engine, userSrc, src),
      weightReorder: reorder(d, engine, userW, wts),
      dstReorder: reorder(d, engine, dst, userDst),
      srcBytes: Number(d.dnnl_memory_desc_get_size(src)),
      weightBytes: Number(d.dnnl_memory_desc_get_size(wts)),
      dstBytes: Number(d.dnnl_memory_desc_get_size(dst)),
      scratchBytes: Number(d.dnnl_memory_desc_get_size(scratch)),
      mem: {
        userSrc: memory(d, engine, userSrc),
        src: memory(d, engine, src),
        userWeights: memory(d, engine, userW),
        weights: memory(d, engine, wts),
        userDst: memory(d, engine, userDst),
        dst: memory(d, engine, dst),
        bias: biasMd ? memory(d, engine, biasMd) : 0n,
        scratch: memory(d, engine, scratch),
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

/** The best time of a few runs of `plan` on these params (a warm-up first). */
function timePlan(plan: Plan, p: Conv2dParams): number {
  runPlan(plan, p).dispose();
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 2; i++) {
    const t0 = performance.now();
    runPlan(plan, p).dispose();
    best = Math.min(best, performance.now() - t0);
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
export function planFor(p: Conv2dParams): Plan | string {
  const key = `${layouts}:${dnnlState.threadsWanted()}:${keyOf(p)}`;
  let plan = plans.get(key);
  if (plan === undefined) {
    const made: Plan[] = [];
    const reasons: string[] = [];
    const tried = layouts === "auto" ? (["blocked", "plain"] as const) : [layouts];
    for (const layout of tried) {
      try {
        made.push(makePlan(p, layout));
      } catch (e) {
        reasons.push(`${layout}: ${(e as Error).message}`);
      }
    }
    if (made.length === 0) plan = `oneDNN refused this convolution (${reasons.join("; ")})`;
    else if (p.n === 0) plan = made[0];
    else {
      const times = made.map((m) => timePlan(m, p));
      const best = times[1] !== undefined && times[1] < times[0] ? 1 : 0;
      plan = made[best];
      // A small layer can lose more to waking the OpenMP threads (three parallel regions a
      // call) than it gains from them: keep one thread when that measured faster.
      // Only for layers this small (a first-call timing is noisy; a wrong choice sticks),
      // and only when clearly faster.
      if (dnnlState.threadsWanted() > 1 && convWork(p) < SMALL_LAYER_FLOPS) {
        plan.oneThread = true;
        if (!(timePlan(plan, p) * 1.1 < times[best])) plan.oneThread = false;
      }
    }
    if (plans.size >= PLAN_LIMIT) plans.delete(plans.keys().next().value as string);
    plans.set(key, plan);
  }
  return plan;
}

/** Runs `prim` with (arg, memory) pairs. */
function execute(d: DnnlSymbols, prim: bigint, args: [number, bigint][]): void {
  const buf = new DataView(new ArrayBuffer(args.length * EXEC_ARG_BYTES));
  args.forEach(([arg, m], i) => {
    buf.setInt32(i * EXEC_ARG_BYTES, arg, true);
    buf.setBigUint64(i * EXEC_ARG_BYTES + 8, m, true);
  });
  check(
    "dnnl_primitive_execute",
    d.dnnl_primitive_execute(
      prim,
      dnnlState.ready().stream,
      args.length,
      new Uint8Array(buf.buffer),
    ),
  );
}

const data = (t: Tensor): ArrayBufferView => t.hostData();

/** The weights in oneDNN's layout: from the cache when unchanged, else reordered now. */
function weightsFor(p: Conv2dParams, plan: Plan): Tensor {
  const { dnnl: d } = dnnlState.ready();
  if (plan.weightReorder === 0n) return p.weight;
  return dnnlState.weightCache.get(p.weight, plan.weightBytes, plan.impl, (into) => {
    d.dnnl_memory_set_data_handle(plan.mem.userWeights, data(p.weight));
    d.dnnl_memory_set_data_handle(plan.mem.weights, data(into));
    execute(d, plan.weightReorder, [
      [ARG.FROM, plan.mem.userWeights],
      [ARG.TO, plan.mem.weights],
    ]);
  });
}

/** conv2d on oneDNN; params already accepted by dnnlConvSupports (plan made). */
export function dnnlConv(p: Conv2dParams): Tensor {
  return runPlan(planFor(p) as Plan, p);
}

// Long: one call: threads, the input's reorder, the convolution, the output's reorder, each on CPU-device tensors freed in finally.
function runPlan(plan: Plan, p: Conv2dParams): Tensor {
  const { dnnl: d } = dnnlState.ready();
  dnnlState.applyThreads(plan.oneThread ? 1 : undefined);
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
    const src = plan.srcReorder ? temp(plan.srcBytes) : p.input;
    const dst = plan.dstReorder ? temp(plan.dstBytes) : y;
    const scratch = temp(plan.scratchBytes);
    if (plan.srcReorder) {
      d.dnnl_memory_set_data_handle(plan.mem.userSrc, data(p.input));
      d.dnnl_memory_set_data_handle(plan.mem.src, data(src));
      execute(d, plan.srcReorder, [
        [ARG.FROM, plan.mem.userSrc],
        [ARG.TO, plan.mem.src],
      ]);
    }
    d.dnnl_memory_set_data_handle(plan.srcReorder ? plan.mem.src : plan.mem.userSrc, data(src));
    d.dnnl_memory_set_data_handle(plan.mem.weights, data(w));
    d.dnnl_memory_set_data_handle(plan.dstReorder ? plan.mem.dst : plan.mem.userDst, data(dst));
    d.dnnl_memory_set_data_handle(plan.mem.scratch, data(scratch));
    const args: [number, bigint][] = [
      [ARG.SRC, plan.srcReorder ? plan.mem.src : plan.mem.userSrc],
      [ARG.WEIGHTS, plan.mem.weights],
      [ARG.DST, plan.dstReorder ? plan.mem.dst : plan.mem.userDst],
      [ARG.SCRATCHPAD, plan.mem.scratch],
    ];
    if (p.bias) {
      d.dnnl_memory_set_data_handle(plan.mem.bias, data(p.bias));
      args.push([ARG.BIAS, plan.mem.bias]);
    }
    execute(d, plan.conv, args);
    if (plan.dstReorder) {
      d.dnnl_memory_set_data_handle(plan.mem.userDst, data(y));
      execute(d, plan.dstReorder, [
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
