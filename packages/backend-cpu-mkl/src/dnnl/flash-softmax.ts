/**
 * The online-softmax step of flash-cpu-dnnl (kernels/flash-blas.ts's SoftmaxStep) on
 * oneDNN's JIT primitives, which run at the CPU's full vector width where the WASM step
 * has four lanes. Per score block:
 *
 *   b = max over each row of S                  reduction (max), rows x cols -> rows x 1
 *   m' = max(m, b), corr = 2^(m - m')           per row, here (BQ rows)
 *   S = exp(ln 2 (S - m')) = 2^(S - m')         binary subtraction of the row vector with
 *                                               two fused eltwise post-ops (linear, exp)
 *   l = l corr + sum over each row of S         reduction (sum)
 *   O's row *= corr                             here, only where corr is not 0 or 1
 *
 * Causal masking writes -inf past each row's last visible key first, so the three
 * primitives see whole rows. It runs from MIN_KEYS keys per block; below that its three
 * primitive calls cost more than the WASM step (flash_block_softmax) saves.
 * Primitives are made per (rows, cols) for dense blocks (strided rows fall to oneDNN's
 * reference code) and cached; a block oneDNN refuses is left to the WASM step.
 */
import { cpuMemory } from "@backplane/core/cpu";
import type { SoftmaxStep } from "../kernels/flash-blas.ts";
import {
  building,
  check,
  execute,
  type Handles,
  loopPrimitive,
  memory,
  PlanCache,
  stridedMd,
} from "./call.ts";
import { ARG, BINARY_DESC_BYTES, ENUMS, REDUCTION_DESC_BYTES } from "./library.ts";
import { dnnlState } from "./state.ts";

const E = ENUMS;
const ALG = E.dnnl_alg_kind_t;
const F32 = E.dnnl_data_type_t.dnnl_f32;

interface SoftmaxPlan {
  max: bigint;
  exp: bigint;
  sum: bigint;
  /** Memory objects: the block, and the three row vectors (max out, m' in, sum out). */
  block: bigint;
  maxes: bigint;
  shift: bigint;
  sums: bigint;
  /** The primitives and memory objects above, destroyed when the cache forgets the plan. */
  handles: Handles;
}

const plans = new PlanCache<SoftmaxPlan>("oneDNN refused the softmax step", (plan) =>
  plan.handles.destroy(),
);

/** Forgets every plan (they belong to the engine of the library loaded before). */
export function resetSoftmaxPlans(): void {
  plans.clear();
}

/** The three primitives for a dense rows x cols block (oneDNN's JIT takes dense rows). */
function makePlan(rows: number, cols: number): SoftmaxPlan {
  const d = dnnlState.ready().dnnl;
  const block = stridedMd([rows, cols], [cols, 1], F32);
  const column = stridedMd([rows, 1], [1, 1], F32);
  const reduction = (h: Handles, alg: number) => {
    const desc = new Uint8Array(REDUCTION_DESC_BYTES);
    check("dnnl_reduction_desc_init", d.dnnl_reduction_desc_init(desc, alg, block, column, 0, 0));
    return h.primitive(loopPrimitive(desc));
  };
  const sub = new Uint8Array(BINARY_DESC_BYTES);
  check(
    "dnnl_binary_desc_init",
    d.dnnl_binary_desc_init(sub, ALG.dnnl_binary_sub, block, column, block),
  );
  // A refused second or third primitive destroys the first ones (building).
  return building((h) => ({
    max: reduction(h, ALG.dnnl_reduction_max),
    exp: h.primitive(
      loopPrimitive(sub, {
        postOps: [
          { alg: ALG.dnnl_eltwise_linear, alpha: Math.LN2, beta: 0 },
          { alg: ALG.dnnl_eltwise_exp, alpha: 0, beta: 0 },
        ],
      }),
    ),
    sum: reduction(h, ALG.dnnl_reduction_sum),
    block: h.memory(memory(block)),
    maxes: h.memory(memory(column)),
    shift: h.memory(memory(column)),
    sums: h.memory(memory(column)),
    handles: h,
  }));
}

/** On the threads the tile loop applied (one in deterministic mode). */
const planFor = (rows: number, cols: number): SoftmaxPlan | string =>
  plans.get(`${rows},${cols}`, () => makePlan(rows, cols), dnnlState.threads);

/** The plan for a rows x cols block of row stride `ld`, or why oneDNN does not take it. */
function stepPlan(rows: number, cols: number, ld: number): SoftmaxPlan | string {
  if (ld !== cols)
    return `rows of stride ${ld} for ${cols} columns: oneDNN's JIT code takes dense blocks`;
  return planFor(rows, cols);
}

/**
 * Why the oneDNN step does not take a rows x cols block of row stride `ld` (the WASM step
 * runs it), or undefined.
 */
export function softmaxStepProblem(rows: number, cols: number, ld: number): string | undefined {
  const plan = stepPlan(rows, cols, ld);
  return typeof plan === "string" ? plan : undefined;
}

/**
 * Keys per block from which the oneDNN step is worth its three primitive calls: per
 * 256-row block on one thread of an Intel Xeon, 0.15 ms against the WASM step's 0.14 at
 * 512 keys, 0.21 against 0.28 at 1024, 0.35 against 0.56 at 2048.
 */
const MIN_KEYS = 1024;

/** The step on oneDNN; false when the block is small or oneDNN does not take it. */
export function dnnlSoftmaxStep(st: SoftmaxStep): boolean {
  if (st.cols < MIN_KEYS) return false;
  const plan = stepPlan(st.rows, st.cols, st.ld);
  if (typeof plan === "string") return false;
  softmaxOn(plan, st);
  return true;
}

// Long: one online-softmax step; the three primitives and the per-row bookkeeping share the row vectors.
function softmaxOn(plan: SoftmaxPlan, st: SoftmaxStep): void {
  const { dnnl: d, stream } = dnnlState.ready();
  const buf = cpuMemory().memory.buffer;
  const f32 = new Float32Array(buf);
  const s0 = st.s / 4;
  if (st.causal) {
    // Key c of this block is visible to row r when c < diag + r + 1.
    for (let r = 0; r < st.rows; r++) {
      const valid = Math.min(st.cols, Math.max(0, st.diag + r + 1));
      if (valid < st.cols)
        f32.fill(Number.NEGATIVE_INFINITY, s0 + r * st.ld + valid, s0 + r * st.ld + st.cols);
    }
  }
  const m = new Float32Array(buf, st.m, st.rows);
  const l = new Float64Array(buf, st.l, st.rows);
  const maxes = new Float32Array(buf, st.scratch, st.rows);
  const shift = new Float32Array(buf, st.scratch + st.rows * 4, st.rows);
  const sums = new Float32Array(buf, st.scratch + st.rows * 8, st.rows);
  const block = f32.subarray(s0);
  d.dnnl_memory_set_data_handle(plan.block, block);
  d.dnnl_memory_set_data_handle(plan.maxes, maxes);
  d.dnnl_memory_set_data_handle(plan.shift, shift);
  d.dnnl_memory_set_data_handle(plan.sums, sums);
  execute(plan.max, [
    [ARG.SRC, plan.block],
    [ARG.DST, plan.maxes],
  ]);
  check("dnnl_stream_wait", d.dnnl_stream_wait(stream));
  const corr = new Float32Array(st.rows);
  for (let r = 0; r < st.rows; r++) {
    const mOld = m[r];
    const mNew = Math.max(mOld, maxes[r]);
    // A row with no finite score yet subtracts 0: its -inf scores give 0 either way.
    shift[r] = mNew === Number.NEGATIVE_INFINITY ? 0 : mNew;
    corr[r] = mOld === Number.NEGATIVE_INFINITY ? 0 : 2 ** (mOld - mNew);
    m[r] = mNew;
  }
  execute(plan.exp, [
    [ARG.SRC, plan.block],
    [ARG.SRC_1, plan.shift],
    [ARG.DST, plan.block],
  ]);
  execute(plan.sum, [
    [ARG.SRC, plan.block],
    [ARG.DST, plan.sums],
  ]);
  check("dnnl_stream_wait", d.dnnl_stream_wait(stream));
  for (let r = 0; r < st.rows; r++) {
    const c = corr[r];
    l[r] = l[r] * c + sums[r];
    // corr 1: nothing to scale. A corr of 0 still scales: it is 2^(mOld - mNew) underflowed
    // (a later block's maximum far above the earlier one's), whose terms O must drop.
    if (c === 1) continue;
    const o = st.o / 4 + r * st.ev;
    for (let i = o; i < o + st.ev; i++) f32[i] *= c;
  }
}
