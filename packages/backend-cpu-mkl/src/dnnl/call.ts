/**
 * The oneDNN calls both kernels make, once: status checks, dims arrays, memory
 * descriptors and objects, a primitive descriptor with a user scratchpad, a primitive,
 * and execution with (argument, memory) pairs.
 */
import {
  type Pointer,
  ptrAddress,
  ptrOf,
  readCString,
  readPointer,
  toArrayBuffer,
} from "@backplane/core/cpu";
import { ARG, ENUMS, EXEC_ARG_BYTES, MEMORY_DESC_BYTES, STATUS_NAMES } from "./library.ts";
import { dnnlState } from "./state.ts";

const E = ENUMS;

/** A oneDNN call that failed: the function and oneDNN's status name. */
export class DnnlCallError extends Error {}

export function check(fn: string, status: number): void {
  if (status !== E.dnnl_status_t.dnnl_success)
    throw new DnnlCallError(`${fn} returned ${STATUS_NAMES[status] ?? status}`);
}

/** A dnnl_dims_t (int64_t[12]) holding `xs`. */
export const dims = (xs: number[]): BigInt64Array =>
  new BigInt64Array([...xs.map(BigInt), ...Array(12 - xs.length).fill(0n)]);

/** A handle made by `create(out)` (an out-parameter), or a DnnlCallError. */
export function handle(fn: string, create: (out: BigUint64Array) => number): bigint {
  const o = new BigUint64Array(1);
  check(fn, create(o));
  return o[0];
}

/** A memory descriptor by format tag (`dnnl_format_tag_any`: oneDNN chooses). */
export function taggedMd(shape: number[], tag: number, type: number): Uint8Array {
  const m = new Uint8Array(MEMORY_DESC_BYTES);
  const d = dnnlState.ready().dnnl;
  check(
    "dnnl_memory_desc_init_by_tag",
    d.dnnl_memory_desc_init_by_tag(m, shape.length, dims(shape), type, tag),
  );
  return m;
}

/** A memory descriptor by strides (a view, transposed or not). */
export function stridedMd(shape: number[], strides: number[], type: number): Uint8Array {
  const m = new Uint8Array(MEMORY_DESC_BYTES);
  const d = dnnlState.ready().dnnl;
  check(
    "dnnl_memory_desc_init_by_strides",
    d.dnnl_memory_desc_init_by_strides(m, shape.length, dims(shape), type, dims(strides)),
  );
  return m;
}

/**
 * A memory descriptor's bytes as text: equal for equal descriptors (oneDNN zero-fills the
 * parts a layout leaves unused), so it can key what was made for one layout.
 */
export function mdText(md: Pointer | Uint8Array): string {
  const bytes =
    md instanceof Uint8Array ? md : new Uint8Array(toArrayBuffer(md, MEMORY_DESC_BYTES));
  return Array.from(new Int32Array(bytes.slice(0, MEMORY_DESC_BYTES).buffer)).join(",");
}

/** A memory object without data (its data handle is set per call). */
export function memory(desc: Pointer | Uint8Array): bigint {
  const { dnnl: d, engine } = dnnlState.ready();
  return handle("dnnl_memory_create", (o) => d.dnnl_memory_create(o, desc, engine, null));
}

/** A post-op chain entry: dst = alg(dst; alpha, beta), applied in order. */
export interface EltwisePostOp {
  alg: number;
  alpha: number;
  beta: number;
}

/** A post-op chain entry that adds what dst held before the primitive ran (dst += result). */
export const SUM_POST_OP = "sum";

/** A post-op chain entry: dst = alg(dst, src1), src1 (of descriptor `src1`) given at execution. */
export interface BinaryPostOp {
  binary: number;
  src1: Uint8Array;
}

export type PostOp = EltwisePostOp | BinaryPostOp | typeof SUM_POST_OP;

/** Sets the post-op chain of `attr` (dnnl_post_ops_append_eltwise, _binary or _sum for each). */
function setPostOps(attr: bigint, ops: readonly PostOp[]): void {
  const d = dnnlState.ready().dnnl;
  const po = handle("dnnl_post_ops_create", (o) => d.dnnl_post_ops_create(o));
  try {
    for (const op of ops) {
      if (op === SUM_POST_OP) check("dnnl_post_ops_append_sum", d.dnnl_post_ops_append_sum(po, 1));
      else if ("binary" in op)
        check("dnnl_post_ops_append_binary", d.dnnl_post_ops_append_binary(po, op.binary, op.src1));
      else
        check(
          "dnnl_post_ops_append_eltwise",
          d.dnnl_post_ops_append_eltwise(po, 1, op.alg, op.alpha, op.beta),
        );
    }
    check("dnnl_primitive_attr_set_post_ops", d.dnnl_primitive_attr_set_post_ops(attr, po));
  } finally {
    d.dnnl_post_ops_destroy(po);
  }
}

/**
 * What a primitive's attributes may add: fused post-ops, the source's and weights' zero
 * points, output scales, and whether oneDNN keeps the scratchpad itself (outside the CPU memory: for a
 * primitive made in the middle of a loop that holds views of that memory).
 */
export interface PrimitiveAttrs {
  postOps?: readonly PostOp[];
  /** Output scales applied before the post-ops: one, or one per output channel (dim 1). */
  outputScales?: Float32Array;
  srcZeroPoint?: number;
  weightsZeroPoint?: number;
  dstZeroPoint?: number;
  libraryScratchpad?: boolean;
}

/** Sets one zero point (mask 0: the whole tensor) for argument `arg`. */
function setZeroPoint(attr: bigint, arg: number, zp: number): void {
  const d = dnnlState.ready().dnnl;
  check(
    "dnnl_primitive_attr_set_zero_points",
    d.dnnl_primitive_attr_set_zero_points(attr, arg, 1, 0, Int32Array.of(zp)),
  );
}

/**
 * The primitive descriptor of an op descriptor, its scratchpad left to the caller (unless
 * `libraryScratchpad`), with
 * the eltwise post-ops given (fused into the primitive's own loop) and zero points (an
 * int8 convolution subtracts the source's, padding included; an int8 matmul both).
 */
export function primitiveDesc(opDesc: Uint8Array, attrs: PrimitiveAttrs = {}): bigint {
  const { dnnl: d, engine } = dnnlState.ready();
  const attr = handle("dnnl_primitive_attr_create", (o) => d.dnnl_primitive_attr_create(o));
  try {
    if (attrs.outputScales) {
      const n = attrs.outputScales.length;
      check(
        "dnnl_primitive_attr_set_output_scales",
        d.dnnl_primitive_attr_set_output_scales(attr, n, n === 1 ? 0 : 2, attrs.outputScales),
      );
    }
    if (attrs.postOps?.length) setPostOps(attr, attrs.postOps);
    if (attrs.srcZeroPoint !== undefined) setZeroPoint(attr, ARG.SRC, attrs.srcZeroPoint);
    if (attrs.weightsZeroPoint) setZeroPoint(attr, ARG.WEIGHTS, attrs.weightsZeroPoint);
    if (attrs.dstZeroPoint) setZeroPoint(attr, ARG.DST, attrs.dstZeroPoint);
    if (!attrs.libraryScratchpad)
      check(
        "dnnl_primitive_attr_set_scratchpad_mode",
        d.dnnl_primitive_attr_set_scratchpad_mode(
          attr,
          E.dnnl_scratchpad_mode_t.dnnl_scratchpad_mode_user,
        ),
      );
    return handle("dnnl_primitive_desc_create", (o) =>
      d.dnnl_primitive_desc_create(o, ptrAddress(ptrOf(opDesc)), attr, engine, 0n),
    );
  } finally {
    d.dnnl_primitive_attr_destroy(attr);
  }
}

/**
 * oneDNN's float32 JIT GEMM ("gemm:jit": the GEMM-based convolution on NCHW, some strided
 * matmuls, dnnl_sgemm) points the stack register into the heap while it runs, so a signal
 * that lands then (V8's CPU profiler, a child's SIGCHLD, any handler) is written over heap
 * memory: glibc aborts later, or the process dies in the kernel (oneDNN issue 4845, fixed
 * in 3.11.2; every 2.x has it). Reproduced here with `node --cpu-prof`, and in C with a
 * SIGPROF timer. Its int8 GEMM (gemm_s8u8s32) and the brgemm and direct kernels are not
 * affected (each checked in C under a 20 kHz signal timer; test/signals.test.ts runs the
 * package's oneDNN paths under a profiler signal every 50 µs).
 */
const SIGNAL_UNSAFE = /(^|:)gemm:jit$/;

/** The primitive of `pd`; a DnnlCallError for an implementation a signal can break. */
export function primitive(pd: bigint): bigint {
  const d = dnnlState.ready().dnnl;
  const impl = implOf(pd);
  if (SIGNAL_UNSAFE.test(impl))
    throw new DnnlCallError(
      `oneDNN chose ${impl}, its float32 JIT GEMM, which corrupts memory when a signal arrives (oneDNN issue 4845, fixed only in 3.11.2)`,
    );
  return handle("dnnl_primitive_create", (o) => d.dnnl_primitive_create(o, pd));
}

/**
 * A primitive for a step inside a loop over the CPU memory (the attention kernels): oneDNN
 * keeps its scratchpad (an allocation there could move the memory under the loop's views),
 * and it is refused (an Error) when oneDNN has only its reference code for it, far slower
 * than the step it would replace.
 */
export function loopPrimitive(
  desc: Uint8Array,
  attrs: Pick<PrimitiveAttrs, "postOps" | "outputScales"> = {},
): bigint {
  const d = dnnlState.ready().dnnl;
  const pd = primitiveDesc(desc, { ...attrs, libraryScratchpad: true });
  try {
    const impl = implOf(pd);
    if (impl.startsWith("ref")) throw new Error(`only oneDNN's reference code (${impl})`);
    return primitive(pd);
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

/** A descriptor the primitive descriptor chose (a dnnl_query_t), or a DnnlCallError. */
export function queryMd(pd: bigint, what: number): Pointer {
  const p = dnnlState.ready().dnnl.dnnl_primitive_desc_query_md(pd, what, 0);
  if (!p) throw new DnnlCallError(`dnnl_primitive_desc_query_md(${what}) returned NULL`);
  return p;
}

/** A reorder primitive between two layouts, or 0n when they are the same. */
export function reorder(from: Pointer | Uint8Array, to: Pointer | Uint8Array): bigint {
  const { dnnl: d, engine } = dnnlState.ready();
  if (d.dnnl_memory_desc_equal(from, to) === 1) return 0n;
  const pd = handle("dnnl_reorder_primitive_desc_create", (o) =>
    d.dnnl_reorder_primitive_desc_create(o, from, engine, to, engine, 0n),
  );
  try {
    return primitive(pd);
  } finally {
    d.dnnl_primitive_desc_destroy(pd);
  }
}

/**
 * The oneDNN objects a plan owns: primitives and memory objects, destroyed together. A
 * plan being made records each as it is made, so that a refusal part way (oneDNN's
 * reference code, its JIT GEMM, an error) destroys those already made.
 */
export class Handles {
  readonly primitives: bigint[] = [];
  readonly memories: bigint[] = [];

  /** Records primitive `h` (0n: none) and returns it. */
  primitive(h: bigint): bigint {
    if (h) this.primitives.push(h);
    return h;
  }

  /** Records memory object `h` (0n: none) and returns it. */
  memory(h: bigint): bigint {
    if (h) this.memories.push(h);
    return h;
  }

  /** Destroys every handle recorded (once: the lists are emptied). */
  destroy(): void {
    const d = dnnlState.lib?.dnnl;
    const prims = this.primitives.splice(0);
    const mems = this.memories.splice(0);
    if (!d) return;
    for (const h of prims) d.dnnl_primitive_destroy(h);
    for (const h of mems) d.dnnl_memory_destroy(h);
  }
}

/** `make(handles)`, whose handles are destroyed when it throws (nothing leaks on a refusal). */
export function building<T>(make: (handles: Handles) => T): T {
  const handles = new Handles();
  try {
    return make(handles);
  } catch (e) {
    handles.destroy();
    throw e;
  }
}

/**
 * Plans by key (primitives made for one set of sizes), or why oneDNN refused them, both
 * kept; the least recently used forgotten past `limit`, and its oneDNN objects destroyed
 * (`release`): without that every new shape past the limit leaked its primitives. A
 * loop may hold a few plans while it makes others (the attention's steps), which the limit
 * leaves alive as recently used. oneDNN fixes a primitive's thread count when it
 * is made (one made for two threads ran on two after omp_set_num_threads(1)), so a plan is
 * made, and found, per thread count.
 */
export class PlanCache<P> {
  readonly #plans = new Map<string, P | string>();
  /** The plan of the last params object asked for (supports() then run() ask for the same). */
  #last: { params: object | undefined; plan: P | string | undefined } = {
    params: undefined,
    plan: undefined,
  };
  constructor(
    /** What a refusal says before oneDNN's message ("oneDNN refused this product"). */
    private readonly refused: string,
    /** Destroys a forgotten plan's oneDNN objects. */
    private readonly release: (plan: P) => void = () => {},
    private readonly limit = 64,
  ) {}

  /** The plan for `key` on `threads` OpenMP threads (0 or absent: the setting), made on them. */
  get(key: string, make: () => P, threads = 0): P | string {
    threads ||= dnnlState.threadsWanted();
    const full = `${key}@${threads}`;
    let plan = this.#plans.get(full);
    if (plan !== undefined) {
      // Most recently used last: the limit forgets from the front.
      this.#plans.delete(full);
    } else {
      try {
        dnnlState.applyThreads(threads);
        plan = make();
      } catch (e) {
        plan = `${this.refused}: ${(e as Error).message}`;
      }
      if (this.#plans.size >= this.limit) this.#evictOldest();
    }
    this.#plans.set(full, plan);
    return plan;
  }

  /** Forgets the least recently used plan but the last params' (run() follows supports()). */
  #evictOldest(): void {
    for (const [key, plan] of this.#plans) {
      if (plan === this.#last.plan) continue;
      this.#plans.delete(key);
      if (typeof plan !== "string") this.release(plan);
      return;
    }
  }

  /** get() for an op's params (on `threads`, as get()), the key built only for new params. */
  forParams(params: object, key: () => string, make: () => P, threads = 0): P | string {
    const last = this.#last;
    if (last.params === params && last.plan !== undefined) return last.plan;
    const plan = this.get(key(), make, threads);
    this.#last = { params, plan };
    return plan;
  }

  /** The number of plans kept (refusals included). */
  get size(): number {
    return this.#plans.size;
  }

  /**
   * Forgets every plan without destroying them: they belong to the engine of the library
   * loaded before, which may be gone.
   */
  clear(): void {
    this.#plans.clear();
    this.#last = { params: undefined, plan: undefined };
  }
}

/** The implementation oneDNN chose ("jit:avx512_core", "ref:any"...), or "?". */
export function implOf(pd: bigint): string {
  const out = new BigUint64Array(1);
  dnnlState
    .ready()
    .dnnl.dnnl_primitive_desc_query(pd, E.dnnl_query_t.dnnl_query_impl_info_str, 0, out);
  const p = readPointer(out);
  return p ? readCString(p) : "?";
}

/** (argument, memory) pairs as dnnl_exec_arg_t structs, as dnnl_primitive_execute takes them. */
export function packArgs(args: readonly [number, bigint][]): Uint8Array {
  const buf = new DataView(new ArrayBuffer(args.length * EXEC_ARG_BYTES));
  args.forEach(([arg, m], i) => {
    buf.setInt32(i * EXEC_ARG_BYTES, arg, true);
    buf.setBigUint64(i * EXEC_ARG_BYTES + 8, m, true);
  });
  return new Uint8Array(buf.buffer);
}

/** Runs `prim` with (argument, memory) pairs on the stream. */
export function execute(prim: bigint, args: [number, bigint][]): void {
  executePacked(prim, packArgs(args));
}

/** Runs `prim` with arguments packed once by packArgs (a loop's step runs it many times). */
export function executePacked(prim: bigint, packed: Uint8Array): void {
  const { dnnl: d, stream } = dnnlState.ready();
  check(
    "dnnl_primitive_execute",
    d.dnnl_primitive_execute(prim, stream, packed.byteLength / EXEC_ARG_BYTES, packed),
  );
}
