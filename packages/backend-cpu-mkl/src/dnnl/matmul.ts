/**
 * matmul through oneDNN's matmul primitive: a candidate beside the native BLAS and the
 * WASM GEMM, which the core's calibration ranks by what it measures. 2-D float32 products
 * only (batched ones are left to blas-gemm and wasm-gemm, which take broadcasting); each
 * operand is described by its own strides, so transposed views run without a copy. One
 * primitive per (sizes, strides), cached.
 */
import { empty, type Tensor } from "@backplane/core";
import { type MatmulParams, ptrAddress, ptrOf } from "@backplane/core/backend";
import { ARG, ENUMS, MATMUL_DESC_BYTES, MEMORY_DESC_BYTES, STATUS_NAMES } from "./library.ts";
import { dnnlState } from "./state.ts";

const E = ENUMS;

function check(fn: string, status: number): void {
  if (status !== E.dnnl_status_t.dnnl_success)
    throw new Error(`${fn} returned ${STATUS_NAMES[status] ?? status}`);
}

interface MatmulPlan {
  prim: bigint;
  mem: { a: bigint; b: bigint; c: bigint; scratch: bigint };
  scratchBytes: number;
}

const plans = new Map<string, MatmulPlan | string>();

/** Forgets every plan (they belong to the engine of the library loaded before). */
export function resetMatmulPlans(): void {
  plans.clear();
}

const dims = (xs: number[]) =>
  new BigInt64Array([...xs.map(BigInt), ...Array(12 - xs.length).fill(0n)]);

function strided(shape: number[], strides: number[]): Uint8Array {
  const m = new Uint8Array(MEMORY_DESC_BYTES);
  const { dnnl: d } = dnnlState.ready();
  check(
    "dnnl_memory_desc_init_by_strides",
    d.dnnl_memory_desc_init_by_strides(
      m,
      2,
      dims(shape),
      E.dnnl_data_type_t.dnnl_f32,
      dims(strides),
    ),
  );
  return m;
}

// Long: the descriptors of one product, the primitive descriptor with a user scratchpad, the primitive and its four memory objects.
function makePlan(p: MatmulParams): MatmulPlan {
  const { dnnl: d, engine } = dnnlState.ready();
  const out = () => new BigUint64Array(1);
  const a = strided([p.m, p.k], p.aStrides.slice(-2));
  const b = strided([p.k, p.n], p.bStrides.slice(-2));
  const c = strided([p.m, p.n], [p.n, 1]);
  const desc = new Uint8Array(MATMUL_DESC_BYTES);
  check("dnnl_matmul_desc_init", d.dnnl_matmul_desc_init(desc, a, b, null, c));
  const attr = out();
  check("dnnl_primitive_attr_create", d.dnnl_primitive_attr_create(attr));
  const pdOut = out();
  try {
    check(
      "dnnl_primitive_attr_set_scratchpad_mode",
      d.dnnl_primitive_attr_set_scratchpad_mode(
        attr[0],
        E.dnnl_scratchpad_mode_t.dnnl_scratchpad_mode_user,
      ),
    );
    check(
      "dnnl_primitive_desc_create",
      d.dnnl_primitive_desc_create(pdOut, ptrAddress(ptrOf(desc)), attr[0], engine, 0n),
    );
  } finally {
    d.dnnl_primitive_attr_destroy(attr[0]);
  }
  try {
    const scratch = d.dnnl_primitive_desc_query_md(
      pdOut[0],
      E.dnnl_query_t.dnnl_query_scratchpad_md,
      0,
    );
    if (!scratch) throw new Error("no scratchpad descriptor");
    const prim = out();
    check("dnnl_primitive_create", d.dnnl_primitive_create(prim, pdOut[0]));
    const memory = (md: unknown) => {
      const o = out();
      check("dnnl_memory_create", d.dnnl_memory_create(o, md as Uint8Array, engine, null));
      return o[0];
    };
    return {
      prim: prim[0],
      mem: { a: memory(a), b: memory(b), c: memory(c), scratch: memory(scratch) },
      scratchBytes: Number(d.dnnl_memory_desc_get_size(scratch)),
    };
  } finally {
    d.dnnl_primitive_desc_destroy(pdOut[0]);
  }
}

/** The last two strides oneDNN can take: one of them 1 (a row-major or transposed matrix). */
function matrixStrides(s: number[]): boolean {
  const [r, c] = s.slice(-2);
  return (c === 1 && r >= 1) || (r === 1 && c >= 1);
}

export function dnnlMatmulSupports(p: MatmulParams): true | string {
  if (!dnnlState.lib) return "oneDNN is not loaded";
  if (p.batchShape.length > 0)
    return "batched matmul: onednn-matmul takes 2-D products (blas-gemm and wasm-gemm take batches)";
  if (p.m === 0 || p.n === 0 || p.k === 0) return "an empty product: nothing for oneDNN to do";
  if (!matrixStrides(p.aStrides) || !matrixStrides(p.bStrides))
    return "an operand is neither row-major nor transposed (a stride-0 or overlapping view)";
  const key = `${p.m},${p.k},${p.n},${p.aStrides.slice(-2)},${p.bStrides.slice(-2)}`;
  let plan = plans.get(key);
  if (plan === undefined) {
    try {
      plan = makePlan(p);
    } catch (e) {
      plan = `oneDNN refused this product: ${(e as Error).message}`;
    }
    if (plans.size >= 64) plans.delete(plans.keys().next().value as string);
    plans.set(key, plan);
  }
  return typeof plan === "string" ? plan : true;
}

export function dnnlMatmul(p: MatmulParams): Tensor {
  const key = `${p.m},${p.k},${p.n},${p.aStrides.slice(-2)},${p.bStrides.slice(-2)}`;
  const plan = plans.get(key) as MatmulPlan;
  const { dnnl: d, stream } = dnnlState.ready();
  dnnlState.applyThreads();
  const c = empty(p.outShape, { dtype: "float32" });
  const scratch = empty([Math.max(1, Math.ceil(plan.scratchBytes / 4))], { dtype: "float32" });
  try {
    d.dnnl_memory_set_data_handle(plan.mem.a, p.a.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.b, p.b.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.c, c.hostData());
    d.dnnl_memory_set_data_handle(plan.mem.scratch, scratch.hostData());
    const args = new DataView(new ArrayBuffer(4 * 16));
    [
      [ARG.SRC, plan.mem.a],
      [ARG.WEIGHTS, plan.mem.b],
      [ARG.DST, plan.mem.c],
      [ARG.SCRATCHPAD, plan.mem.scratch],
    ].forEach(([arg, m], i) => {
      args.setInt32(i * 16, Number(arg), true);
      args.setBigUint64(i * 16 + 8, BigInt(m), true);
    });
    check(
      "dnnl_primitive_execute",
      d.dnnl_primitive_execute(plan.prim, stream, 4, new Uint8Array(args.buffer)),
    );
    check("dnnl_stream_wait", d.dnnl_stream_wait(stream));
    return c;
  } catch (e) {
    c.dispose();
    throw e;
  } finally {
    scratch.dispose();
  }
}
