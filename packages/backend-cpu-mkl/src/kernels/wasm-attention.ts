/**
 * flash-cpu: a fused scaled dot-product attention kernel (FLASH_ATTENTION family, device
 * cpu) in WASM SIMD (assembly/attention.ts). Query blocks of 32 rows against key blocks
 * of 64, online softmax, no L x S score matrix: its memory is one small workspace per
 * thread. Work items are (batch/head, query block) pairs, run through the core's
 * parallelFor, so backend-openmp's threads share them when it is installed.
 */
import { empty, type Tensor } from "@backplane/core";
import {
  type AnyKernelDefinition,
  leadingBroadcastStrides,
  type SdpaParams,
} from "@backplane/core/backend";
import { addressOf, cpuMemory, cpuThreads, inWasmMemory, parallelFor } from "@backplane/core/cpu";

/** The functions of the "attention" WASM module. */
export interface AttentionModule {
  flashWorkspaceBytes(e: number, ev: number): number;
  flashBlockRows(): number;
  flashDescriptorBytes(): number;
  flash_f32(desc: number, first: number, count: number, work: number): void;
  /** The BLAS-tiled kernel's steps (src/native/flash-blas.ts). */
  flash_block_softmax(
    s: number,
    ld: number,
    rows: number,
    cols: number,
    m: number,
    l: number,
    o: number,
    ldo: number,
    ev: number,
    causal: number,
    diag: number,
  ): void;
  flash_block_finish(
    o: number,
    ldo: number,
    rows: number,
    ev: number,
    l: number,
    absMax: number,
  ): void;
  /** flash-cpu-dnnl's bounded-shift steps (src/dnnl/flash-bounded.ts). */
  flash_zero_hidden(p: number, ld: number, rows: number, cols: number, diag: number): void;
  attn_augment_rows(
    src: number,
    ld: number,
    rows: number,
    e: number,
    mul: number,
    last: number,
    dst: number,
    norms: number,
  ): void;
  attn_row_sums(
    p: number,
    ld: number,
    rows: number,
    cols: number,
    sums: number,
    accumulate: number,
  ): void;
}

/** Set by the backend's init() once the module is instantiated. */
export const attentionModule: { current?: AttentionModule } = {};

/** Largest head dim (of queries/keys and of values) the kernel's tiles hold. */
export const FLASH_MAX_HEAD_DIM = 256;

const F_CAUSAL = 1;
const F_BOOL = 2;
const F_ADDITIVE = 4;
const F_DROPOUT = 8;

export interface Layout {
  /** Per flat batch index (heads included): element offsets of q, k, v and the mask's rows. */
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  m: Float64Array;
  /** Mask row and column strides, in elements. */
  ms0: number;
  ms1: number;
}

/** Element offsets of each (batch, head) pair's matrices, broadcasting and GQA as the reference does. */
export function layoutOf(p: SdpaParams): Layout {
  const { batchShape, attnMask } = p;
  const n = batchShape.reduce((a, b) => a * b, 1);
  const hb = batchShape.length - 1;
  const group = p.enableGqa && p.headsQ !== p.headsKV ? p.headsQ / p.headsKV : 1;
  const lead = (t: Tensor) =>
    leadingBroadcastStrides(t.shape.slice(0, -2), t.strides.slice(0, -2), batchShape);
  const qs = lead(p.query);
  const ks = lead(p.key);
  const vs = lead(p.value);
  let msb: number[] = batchShape.map(() => 0);
  let ms0 = 0;
  let ms1 = 0;
  if (attnMask) {
    const st = leadingBroadcastStrides(attnMask.shape, attnMask.strides, [...batchShape, p.L, p.S]);
    msb = st.slice(0, -2);
    ms0 = st[st.length - 2];
    ms1 = st[st.length - 1];
  }
  const out: Layout = {
    q: new Float64Array(n),
    k: new Float64Array(n),
    v: new Float64Array(n),
    m: new Float64Array(n),
    ms0,
    ms1,
  };
  const idx = new Array<number>(batchShape.length).fill(0);
  for (let b = 0; b < n; b++) {
    let qo = 0;
    let ko = 0;
    let vo = 0;
    let mo = 0;
    for (let d = 0; d < batchShape.length; d++) {
      const kv = d === hb && group > 1 ? Math.floor(idx[d] / group) : idx[d];
      qo += idx[d] * qs[d];
      ko += kv * ks[d];
      vo += kv * vs[d];
      mo += idx[d] * msb[d];
    }
    out.q[b] = qo;
    out.k[b] = ko;
    out.v[b] = vo;
    out.m[b] = mo;
    for (let d = batchShape.length - 1; d >= 0; d--) {
      if (++idx[d] < batchShape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

const lastStride = (t: Tensor) => (t.shape[t.rank - 1] > 1 ? t.strides[t.rank - 1] : 1);

/**
 * What keeps a flash kernel (`who`, for the messages) from reading these operands: they
 * must live in the shared CPU memory, with unit-stride rows and head dims the tiles hold.
 */
export function flashOperandProblem(p: SdpaParams, who: string): string | undefined {
  const ts = [p.query, p.key, p.value, ...(p.attnMask ? [p.attnMask] : [])];
  if (!ts.every(inWasmMemory))
    return "a tensor is not in the CPU memory WASM kernels share (created before the WASM memory existed?)";
  if (!attentionModule.current) return "the attention WASM module is not loaded";
  for (const [name, t] of [
    ["query", p.query],
    ["key", p.key],
    ["value", p.value],
  ] as const) {
    if (lastStride(t) !== 1)
      return `${name}'s last dimension is strided (stride ${lastStride(t)}, a transposed view); ${who} reads rows with unit stride`;
  }
  if (p.E > FLASH_MAX_HEAD_DIM || p.Ev > FLASH_MAX_HEAD_DIM)
    return `head dim ${Math.max(p.E, p.Ev)} > ${FLASH_MAX_HEAD_DIM}: ${who}'s tiles hold at most ${FLASH_MAX_HEAD_DIM}`;
  if (p.E === 0) return "head dim 0 (empty query/key rows)";
  // The tiles scale the scores by a float32 factor, times log2 e for the exp2 softmax: past
  // float32's range it is inf and every row NaN, where torch (scaling q and k by
  // sqrt(scale)) and the math kernel give finite rows for small enough q and k.
  if (!Number.isFinite(Math.fround(Math.abs(p.scale) * Math.LOG2E)))
    return `scale ${p.scale} times log2 e is past float32's range; ${who} scales the scores in float32 (the math kernel takes it)`;
  return undefined;
}

/** Why flash-cpu cannot run these inputs, or true. */
export function flashSupports(p: SdpaParams): true | string {
  return flashOperandProblem(p, "flash-cpu") ?? true;
}

/** Runs the fused kernel: out [...batchShape, L, Ev], float32. */
/**
 * The output [...batchShape, L, Ev] of a flash kernel, and whether it is already final:
 * empty, or all zeros when there is no key (the reference's sum over nothing).
 */
export function flashOutput(p: SdpaParams): { out: Tensor; done: boolean } {
  const out = empty([...p.batchShape, p.L, p.Ev], { dtype: "float32" });
  if (!needsProducts(p)) {
    // No keys: zeros (nothing to average); no output: nothing to do.
    (out.hostData() as Float32Array).fill(0, 0, out.numel);
    return { out, done: true };
  }
  return { out, done: false };
}

/** Whether the attention has work (else flashOutput's result is complete, with no product). */
export const needsProducts = (p: SdpaParams): boolean =>
  p.S > 0 && p.L * p.Ev * p.batchShape.reduce((a, b) => a * b, 1) > 0;

// Long: one tile loop whose steps share the running max, sum and output rows.
export function flashRun(p: SdpaParams): Tensor {
  const mod = attentionModule.current!;
  const { L, S, E, Ev } = p;
  const { out, done } = flashOutput(p);
  if (done) return out;
  const bh = out.numel / (L * Ev);
  const lay = layoutOf(p);
  const threads = cpuThreads();
  const ws = mod.flashWorkspaceBytes(E, Ev);
  const wsStride = Math.ceil(ws / 64) * 64;
  const descBytes = mod.flashDescriptorBytes();
  // Both allocations go through tensors, so memoryStats() counts the kernel's memory.
  const desc = empty([descBytes / 4 + bh * 5], { dtype: "int32" });
  const work = empty([(wsStride * threads) / 4], { dtype: "float32" });
  try {
    const d = addressOf(desc);
    const buf = cpuMemory().memory.buffer;
    const i32 = new Int32Array(buf, d, descBytes / 4);
    const u32 = new Uint32Array(buf, d, descBytes / 4 + bh * 5);
    const f32 = new Float32Array(buf, d, descBytes / 4);
    const f64 = new Float64Array(buf, d, descBytes / 8);
    const mask = p.attnMask;
    const mbpe = mask?.dtype === "bool" ? 1 : 4;
    const row = (t: Tensor) => t.strides[t.rank - 2] * 4;
    const nQB = Math.ceil(L / mod.flashBlockRows());
    i32[0] = L;
    i32[1] = S;
    i32[2] = E;
    i32[3] = Ev;
    i32[4] = nQB;
    i32[5] =
      (p.isCausal ? F_CAUSAL : 0) |
      (p.maskKind === "bool" ? F_BOOL : p.maskKind === "additive" ? F_ADDITIVE : 0) |
      (p.dropoutP > 0 ? F_DROPOUT : 0);
    f32[6] = p.scale;
    u32[7] = row(p.query);
    u32[8] = row(p.key);
    u32[9] = row(p.value);
    u32[10] = lay.ms0 * mbpe;
    u32[11] = lay.ms1 * mbpe;
    u32[12] = d + descBytes;
    u32[13] = p.seed >>> 0;
    f32[14] = p.dropoutP < 1 ? 1 / (1 - p.dropoutP) : 0;
    f64[8] = p.dropoutP;
    const q0 = addressOf(p.query);
    const k0 = addressOf(p.key);
    const v0 = addressOf(p.value);
    const m0 = mask ? addressOf(mask) : 0;
    const o0 = addressOf(out);
    const t = descBytes / 4;
    for (let b = 0; b < bh; b++) {
      u32[t + b * 5] = q0 + lay.q[b] * 4;
      u32[t + b * 5 + 1] = k0 + lay.k[b] * 4;
      u32[t + b * 5 + 2] = v0 + lay.v[b] * 4;
      u32[t + b * 5 + 3] = m0 + lay.m[b] * mbpe;
      u32[t + b * 5 + 4] = o0 + b * L * Ev * 4;
    }
    parallelFor(
      {
        module: "backend-cpu-mkl/attention",
        fn: "flash_f32",
        args: [d, 0, 0, addressOf(work)],
        step: [0, 1, 0, 0],
        countArg: 2,
        threadArgs: [{ index: 3, stride: wsStride }],
        items: bh * nQB,
        schedule: "dynamic",
        chunk: 1,
        label: "flash attention (batch x head x query block)",
      },
      threads,
    );
    return out;
  } catch (e) {
    out.dispose();
    throw e;
  } finally {
    desc.dispose();
    work.dispose();
  }
}

/** The kernels this module provides, for the cpu-wasm backend's list. */
export function attentionKernels(): AnyKernelDefinition[] {
  return [
    {
      op: "scaledDotProductAttention",
      name: "flash-cpu",
      family: "FLASH_ATTENTION",
      device: "cpu",
      dtypes: ["float32"],
      deterministic: true,
      flags: ["cuda.flashSdp"],
      priority: 50,
      supports: flashSupports,
      run: flashRun,
    },
  ];
}
