/**
 * matmul through oneDNN's matmul primitive: a candidate beside the native BLAS and the
 * WASM GEMM, which the core's calibration ranks by what it measures. float32, 2-D or
 * batched: the batch dims broadcast as matmul's do (an operand's missing or size-1 batch
 * dims are size 1 for oneDNN), and oneDNN splits a batch over its threads, where a BLAS
 * can only split each product (nnpack's Winograd layers make 36 products of 49 x 128 x
 * 128: on two threads OpenBLAS ran them no faster than on one). Each operand is described
 * by its own strides, so transposed views run without a copy. One primitive per (sizes,
 * strides, thread setting), cached.
 */
import { empty, type Tensor } from "@backplane/core";
import type { MatmulParams } from "@backplane/core/backend";
import {
  building,
  check,
  execute,
  type Handles,
  memory,
  PlanCache,
  primitive,
  primitiveDesc,
  queryMd,
  stridedMd,
} from "./call.ts";
import { ARG, ENUMS, MATMUL_DESC_BYTES } from "./library.ts";
import { dnnlState } from "./state.ts";

const E = ENUMS;
const F32 = E.dnnl_data_type_t.dnnl_f32;

interface MatmulPlan {
  prim: bigint;
  mem: { a: bigint; b: bigint; c: bigint; scratch: bigint };
  scratchBytes: number;
  /** The primitive and memory objects above, destroyed when the cache forgets the plan. */
  handles: Handles;
}

const plans = new PlanCache<MatmulPlan>("oneDNN refused this product", (plan) =>
  plan.handles.destroy(),
);

/** Forgets every plan (they belong to the engine of the library loaded before). */
export function resetMatmulPlans(): void {
  plans.clear();
}

/**
 * An operand's shape and strides at the output's rank: missing leading batch dims become
 * size 1 (oneDNN broadcasts those), their stride the whole operand's span.
 */
function atOutputRank(shape: number[], strides: number[], rank: number): [number[], number[]] {
  const pad = rank - shape.length;
  const span = shape.reduce((acc, n, i) => acc + (n - 1) * Math.abs(strides[i]), 1);
  return [
    [...Array(pad).fill(1), ...shape],
    [...Array(pad).fill(span), ...strides],
  ];
}

function makePlan(p: MatmulParams): MatmulPlan {
  const d = dnnlState.ready().dnnl;
  const rank = p.batchShape.length + 2;
  const a = stridedMd(...atOutputRank(p.aShape, p.aStrides, rank), F32);
  const b = stridedMd(...atOutputRank(p.bShape, p.bStrides, rank), F32);
  const outShape = [...p.batchShape, p.m, p.n];
  const outStrides = outShape.map((_, i) => outShape.slice(i + 1).reduce((x, y) => x * y, 1));
  const c = stridedMd(outShape, outStrides, F32);
  const desc = new Uint8Array(MATMUL_DESC_BYTES);
  check("dnnl_matmul_desc_init", d.dnnl_matmul_desc_init(desc, a, b, null, c));
  const pd = primitiveDesc(desc);
  try {
    const scratch = queryMd(pd, E.dnnl_query_t.dnnl_query_scratchpad_md);
    return building((h) => ({
      prim: h.primitive(primitive(pd)),
      mem: {
        a: h.memory(memory(a)),
        b: h.memory(memory(b)),
        c: h.memory(memory(c)),
        scratch: h.memory(memory(scratch)),
      },
      scratchBytes: Number(d.dnnl_memory_desc_get_size(scratch)),
      handles: h,
    }));
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

function planFor(p: MatmulParams): MatmulPlan | string {
  return plans.forParams(
    p,
    () => `${p.aShape}:${p.aStrides}|${p.bShape}:${p.bStrides}`,
    () => makePlan(p),
  );
}

/**
 * The `enabled` check of oneDNN's GEMM-based kernels (onednn-matmul, flash-cpu-dnnl): a
 * BLAS library asked for by name (or the WASM GEMM) is what should run, not oneDNN.
 */
export function autoBlasOnly(flag: (key: string) => unknown): true | string {
  const b = flag("cpu.preferredBlasLibrary");
  return b === "auto" ? true : `cpu.preferredBlasLibrary is ${JSON.stringify(b)}`;
}

/** The last two strides oneDNN can take: one of them 1 (a row-major or transposed matrix). */
function matrixStrides(s: number[]): boolean {
  const [r, c] = s.slice(-2);
  return (c === 1 && r >= 1) || (r === 1 && c >= 1);
}

/** Whether a batch dim of size > 1 has stride 0 (an expanded view oneDNN cannot describe). */
const expandedBatch = (shape: number[], strides: number[]) =>
  shape.slice(0, -2).some((n, i) => n > 1 && strides[i] === 0);

export function dnnlMatmulSupports(p: MatmulParams): true | string {
  if (!dnnlState.lib) return "oneDNN is not loaded";
  if (p.batchShape.length > 10) return "more than 10 batch dims: oneDNN takes 12 dims at most";
  if (p.m === 0 || p.n === 0 || p.k === 0 || p.batchShape.includes(0))
    return "an empty product: nothing for oneDNN to do";
  if (!matrixStrides(p.aStrides) || !matrixStrides(p.bStrides))
    return "an operand is neither row-major nor transposed (a stride-0 or overlapping view)";
  if (expandedBatch(p.aShape, p.aStrides) || expandedBatch(p.bShape, p.bStrides))
    return "a batch dim is an expanded view (stride 0): blas-gemm and wasm-gemm take it";
  const plan = planFor(p);
  return typeof plan === "string" ? plan : true;
}

export function dnnlMatmul(p: MatmulParams): Tensor {
  const plan = planFor(p) as MatmulPlan;
  const { dnnl: d, stream } = dnnlState.ready();
  dnnlState.applyThreads();
  const c = empty(p.outShape, { dtype: "float32" });
  const scratch = empty([Math.max(1, Math.ceil(plan.scratchBytes / 4))], { dtype: "float32" });
  try {
    d.dnnl_memory_set_data_handle(plan.mem.a, p.a.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.b, p.b.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.c, c.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.scratch, scratch.hostData());
    execute(plan.prim, [
      [ARG.SRC, plan.mem.a],
      [ARG.WEIGHTS, plan.mem.b],
      [ARG.DST, plan.mem.c],
      [ARG.SCRATCHPAD, plan.mem.scratch],
    ]);
    check("dnnl_stream_wait", d.dnnl_stream_wait(stream));
    return c;
  } catch (e) {
    c.dispose();
    throw e;
  } finally {
    scratch.dispose();
  }
}
