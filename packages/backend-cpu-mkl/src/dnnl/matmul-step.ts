/**
 * One strided float32 product that an attention loop runs many times on oneDNN's matmul
 * primitive: dst [m, n] (row stride ldc) = scale * src [m, k] (row stride lda) x weights
 * [k, n] (any strides), then post-ops; data handles set per run. The attention kernels'
 * products all go through here, none through dnnl_sgemm (oneDNN's JIT GEMM, which a
 * signal can break: see SIGNAL_UNSAFE in call.ts).
 */
import { cpuMemory } from "@backplane/core/cpu";
import type { TileGemm } from "../kernels/flash-blas.ts";
import {
  building,
  check,
  DnnlCallError,
  type EltwisePostOp,
  executePacked,
  loopPrimitive,
  memory,
  PlanCache,
  packArgs,
  SUM_POST_OP,
  stridedMd,
} from "./call.ts";
import { ARG, ENUMS, MATMUL_DESC_BYTES } from "./library.ts";
import { dnnlState } from "./state.ts";

const F32 = ENUMS.dnnl_data_type_t.dnnl_f32;

/** One primitive and a memory object per argument. */
export interface Step {
  prim: bigint;
  src: bigint;
  weights: bigint;
  dst: bigint;
  /** The three (argument, memory) pairs, packed once. */
  args: Uint8Array;
  /** Destroys the primitive and memory objects (when the cache forgets the step). */
  destroy: () => void;
}

export interface StepShape {
  m: number;
  k: number;
  n: number;
  lda: number;
  /** The weights' strides (row, column): [ldb, 1] as stored, [1, ldb] for a transposed B. */
  ws: [number, number];
  ldc: number;
  postOps?: readonly (EltwisePostOp | typeof SUM_POST_OP)[];
  /** Multiplies the product before the post-ops (1: none). */
  scale?: number;
}

const steps = new PlanCache<Step>("oneDNN refused an attention product", (s) => s.destroy());

/** Forgets every step (they belong to the engine of the library loaded before). */
export function resetMatmulSteps(): void {
  steps.clear();
}

function makeStep(s: StepShape): Step {
  const d = dnnlState.ready().dnnl;
  const a = stridedMd([s.m, s.k], [s.lda, 1], F32);
  const b = stridedMd([s.k, s.n], s.ws, F32);
  const c = stridedMd([s.m, s.n], [s.ldc, 1], F32);
  const desc = new Uint8Array(MATMUL_DESC_BYTES);
  check("dnnl_matmul_desc_init", d.dnnl_matmul_desc_init(desc, a, b, null, c));
  const scale = s.scale ?? 1;
  // The memory objects were made before a refused primitive, and stayed: made in building.
  return building((h) => {
    const src = h.memory(memory(a));
    const weights = h.memory(memory(b));
    const dst = h.memory(memory(c));
    const prim = h.primitive(
      loopPrimitive(desc, {
        postOps: s.postOps ?? [],
        outputScales: scale === 1 ? undefined : Float32Array.of(scale),
      }),
    );
    const args = packArgs([
      [ARG.SRC, src],
      [ARG.WEIGHTS, weights],
      [ARG.DST, dst],
    ]);
    return { prim, src, weights, dst, args, destroy: () => h.destroy() };
  });
}

/**
 * The step for `s` on `threads` OpenMP threads (default: the ones last applied, which the
 * tile loop sets: one in deterministic mode), or why oneDNN refuses it.
 */
export function matmulStep(s: StepShape, threads = dnnlState.threads): Step | string {
  // oneDNN 2.6 divides by zero (SIGFPE, the process ends) making a matmul with an empty side.
  if (s.m === 0 || s.k === 0 || s.n === 0)
    return `an empty product (${s.m} x ${s.k} times ${s.k} x ${s.n}): oneDNN makes none`;
  const post = (s.postOps ?? [])
    .map((op) => (typeof op === "string" ? op : `${op.alg}(${op.alpha},${op.beta})`))
    .join("+");
  const key = `${s.m},${s.k},${s.n} ${s.lda} ${s.ws} ${s.ldc} ${post} ${s.scale ?? 1}`;
  return steps.get(key, () => makeStep(s), threads);
}

/** Runs `step` on CPU-memory byte addresses and waits for it. */
export function runStep(step: Step, src: number, weights: number, dst: number): void {
  const { dnnl: d, stream } = dnnlState.ready();
  const buf = cpuMemory().memory.buffer;
  d.dnnl_memory_set_data_handle(step.src, new Uint8Array(buf, src));
  d.dnnl_memory_set_data_handle(step.weights, new Uint8Array(buf, weights));
  d.dnnl_memory_set_data_handle(step.dst, new Uint8Array(buf, dst));
  executePacked(step.prim, step.args);
  check("dnnl_stream_wait", d.dnnl_stream_wait(stream));
}

/**
 * C = alpha A op(B) + beta C, row-major, beta 0 or 1, as a BLAS sgemm takes it, on a
 * matmul step; views of the CPU memory. Throws a DnnlCallError when oneDNN refuses it.
 */
export const stepSgemm: TileGemm["sgemm"] = (
  transB,
  m,
  n,
  k,
  alpha,
  a,
  lda,
  b,
  ldb,
  beta,
  c,
  ldc,
) => {
  const step = sgemmStep(transB, m, n, k, alpha, lda, ldb, beta, ldc);
  if (typeof step === "string") throw new DnnlCallError(step);
  runStep(step, a.byteOffset, b.byteOffset, c.byteOffset);
};

/** The step of an sgemm call's sizes and strides (beta 0 or 1). */
export function sgemmStep(
  transB: boolean,
  m: number,
  n: number,
  k: number,
  alpha: number,
  lda: number,
  ldb: number,
  beta: number,
  ldc: number,
  threads?: number,
): Step | string {
  if (beta !== 0 && beta !== 1) return `beta ${beta}: the attention products take 0 or 1`;
  return matmulStep(
    {
      m,
      k,
      n,
      lda,
      ws: transB ? [1, ldb] : [ldb, 1],
      ldc,
      postOps: beta === 1 ? [SUM_POST_OP] : [],
      scale: alpha,
    },
    threads,
  );
}
