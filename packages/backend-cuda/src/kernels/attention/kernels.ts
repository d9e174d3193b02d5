/**
 * scaledDotProductAttention on CUDA, kernels by torch SDP backend family:
 * FLASH_ATTENTION ("cuda-flash" on tensor cores, kernels/attention_flash_tc.cu, for head dims
 * 16-128; "cuda-flash-simt", kernels/attention_flash.cu, for the others), EFFICIENT_ATTENTION
 * ("cuda-mem-efficient", kernels/attention_efficient.cu) and MATH ("cuda-math": cuBLAS for
 * Q K^T and P V, kernels/softmax.cu between). The switches (cuda.flashSdp...) gate them and
 * supports() says why one refuses, which canUseFlashAttention(params, { debug }) prints.
 */
import { bytesPerElement, empty, type Tensor } from "@backplane/core";
import {
  batchOffsets,
  type KernelDefinition,
  leadingBroadcastStrides,
  type SdpaParams,
} from "@backplane/core/backend";
import type { KernelArg } from "../../driver.ts";
import { CU } from "../../native/driver-api.ts";
import { LIBRARY_ENUMS } from "../../native/library-api.ts";
import type { CudaRuntime, DeviceScratch } from "../../runtime.ts";
import { currentRuntime } from "../../state.ts";
import {
  dataPtr,
  deviceOf,
  enforceCublasDeterminism,
  gemmFlags,
  storagePtr,
} from "../../tensors.ts";
import { type GemmProblem, readyProblem, runCublas } from "../blas/gemm.ts";
import { DATA_TYPE, type GemmDtype, gemmMode } from "../blas/modes.ts";
import {
  type DeviceFacts,
  EFFICIENT,
  efficientSharedBytes,
  efficientSupport,
  flashLaunch,
  flashSupport,
  mathSupport,
} from "./constraints.ts";

const SUFFIX: Record<string, string> = {
  float32: "f32",
  float64: "f64",
  float16: "f16",
  bfloat16: "bf16",
};

/** Element offsets of every batch entry into q, k, v (GQA maps query heads to kv heads) and the mask. */
export interface AttentionOffsets {
  batch: number;
  q: BigInt64Array;
  k: BigInt64Array;
  v: BigInt64Array;
  m: BigInt64Array | undefined;
  ms0: number;
  ms1: number;
}

export function attentionOffsets(p: SdpaParams): AttentionOffsets {
  const bs = p.batchShape;
  const strides = (t: Tensor) =>
    leadingBroadcastStrides(t.shape.slice(0, -2), t.strides.slice(0, -2), bs);
  const qs = strides(p.query);
  const ks = strides(p.key);
  const vs = strides(p.value);
  const hb = bs.length - 1;
  const group = p.enableGqa && p.headsQ !== p.headsKV ? p.headsQ / p.headsKV : 1;
  const [qOff] = batchOffsets(bs, [qs]) as [Float64Array];
  const n = qOff.length;
  const q = new BigInt64Array(n);
  const k = new BigInt64Array(n);
  const v = new BigInt64Array(n);
  const idx = new Array<number>(bs.length).fill(0);
  for (let b = 0; b < n; b++) {
    let ko = 0;
    let vo = 0;
    for (let d = 0; d < bs.length; d++) {
      const i = d === hb && group > 1 ? Math.floor(idx[d]! / group) : idx[d]!;
      ko += i * ks[d]!;
      vo += i * vs[d]!;
    }
    q[b] = BigInt(qOff[b]! + p.query.offset);
    k[b] = BigInt(ko + p.key.offset);
    v[b] = BigInt(vo + p.value.offset);
    for (let d = bs.length - 1; d >= 0; d--) {
      if (++idx[d]! < bs[d]!) break;
      idx[d] = 0;
    }
  }
  let m: BigInt64Array | undefined;
  let ms0 = 0;
  let ms1 = 0;
  if (p.attnMask) {
    const full = [...bs, p.L, p.S];
    const st = leadingBroadcastStrides(p.attnMask.shape, p.attnMask.strides, full);
    const [mOff] = batchOffsets(bs, [st.slice(0, -2)]) as [Float64Array];
    m = BigInt64Array.from(mOff, (o) => BigInt(o + p.attnMask!.offset));
    ms0 = st[st.length - 2]!;
    ms1 = st[st.length - 1]!;
  }
  return { batch: n, q, k, v, m, ms0, ms1 };
}

function facts(rt: CudaRuntime, p: SdpaParams): DeviceFacts {
  return rt.driver.device(deviceOf(p.query));
}

const last2 = (t: Tensor): [number, number] => [t.strides[t.rank - 2]!, t.strides[t.rank - 1]!];

/** The argument list of BP_ATTENTION_PARAMS (kernels/common.cuh). */
function fusedArgs(
  p: SdpaParams,
  out: Tensor,
  tables: { q: bigint; k: bigint; v: bigint; m: bigint },
  off: AttentionOffsets,
): KernelArg[] {
  const [qs0, qs1] = last2(p.query);
  const [ks0, ks1] = last2(p.key);
  const [vs0, vs1] = last2(p.value);
  const kind = p.maskKind === "bool" ? 1 : p.maskKind === "additive" ? 2 : 0;
  return [
    { type: "ptr", value: storagePtr(p.query) },
    { type: "ptr", value: storagePtr(p.key) },
    { type: "ptr", value: storagePtr(p.value) },
    { type: "ptr", value: dataPtr(out) },
    { type: "ptr", value: tables.q },
    { type: "ptr", value: tables.k },
    { type: "ptr", value: tables.v },
    { type: "ptr", value: p.attnMask ? storagePtr(p.attnMask) : 0n },
    { type: "ptr", value: tables.m },
    { type: "i32", value: kind },
    { type: "i64", value: qs0 },
    { type: "i64", value: qs1 },
    { type: "i64", value: ks0 },
    { type: "i64", value: ks1 },
    { type: "i64", value: vs0 },
    { type: "i64", value: vs1 },
    { type: "i64", value: off.ms0 },
    { type: "i64", value: off.ms1 },
    { type: "i32", value: p.L },
    { type: "i32", value: p.S },
    { type: "i32", value: p.E },
    { type: "i32", value: p.Ev },
    { type: "f32", value: p.scale },
    { type: "i32", value: p.isCausal ? 1 : 0 },
    { type: "f32", value: p.dropoutP },
    { type: "u32", value: p.seed >>> 0 },
  ];
}

function uploadTables(s: DeviceScratch, off: AttentionOffsets) {
  return {
    q: s.upload(off.q),
    k: s.upload(off.k),
    v: s.upload(off.v),
    m: off.m ? s.upload(off.m) : 0n,
  };
}

/** Output [..., L, Ev]; empty problems and S = 0 are answered without a launch (zeros). */
function prepareOutput(rt: CudaRuntime, p: SdpaParams): { out: Tensor; done: boolean } {
  const out = empty([...p.batchShape, p.L, p.Ev], { dtype: p.dtype, device: p.query.device });
  if (out.numel === 0) return { out, done: true };
  if (p.S === 0) {
    rt.driver.memset(deviceOf(p.query), dataPtr(out), 0, out.numel * bytesPerElement(p.dtype));
    return { out, done: true };
  }
  return { out, done: false };
}

/** The flash kernels (`tensorCores`: attention_flash_tc.cu, else attention_flash.cu) or, with `flash` false, the memory-efficient one. */
function runFused(p: SdpaParams, flash: boolean, tensorCores = false): Tensor {
  const rt = currentRuntime();
  const device = deviceOf(p.query);
  const { out, done } = prepareOutput(rt, p);
  if (done) return out;
  const off = attentionOffsets(p);
  const suffix = SUFFIX[p.dtype]!;
  const { kernel, rows, threads, shared } = flash
    ? flashLaunch(p, suffix, tensorCores)
    : {
        kernel: `mem_efficient_fwd_${suffix}`,
        rows: EFFICIENT.warps,
        threads: EFFICIENT.warps * 32,
        shared: efficientSharedBytes(p),
      };
  rt.scratch(device, (s) => {
    const args = fusedArgs(p, out, uploadTables(s, off), off);
    if (shared > 48 * 1024) {
      const fn = rt.kernel(device, kernel);
      rt.driver.setFunctionAttribute(
        fn,
        CU.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        shared,
        "MAX_DYNAMIC_SHARED_SIZE_BYTES",
      );
    }
    rt.launch(device, kernel, [Math.ceil(p.L / rows), off.batch, 1], [threads, 1, 1], shared, args);
  });
  return out;
}

function runMath(p: SdpaParams): Tensor {
  const rt = currentRuntime();
  const device = deviceOf(p.query);
  enforceCublasDeterminism("scaledDotProductAttention");
  const { out, done } = prepareOutput(rt, p);
  if (done) return out;
  const off = attentionOffsets(p);
  const dtype = p.dtype as GemmDtype;
  const mode = gemmMode(dtype, gemmFlags());
  const wide = dtype === "float64";
  const accBytes = wide ? 8 : 4;
  const accType = wide ? LIBRARY_ENUMS.CUDA_R_64F : LIBRARY_ENUMS.CUDA_R_32F;
  const tBytes = bytesPerElement(dtype);
  const B = off.batch;
  const { L, S, E, Ev } = p;
  const [qs0, qs1] = last2(p.query);
  const [ks0, ks1] = last2(p.key);
  const [vs0, vs1] = last2(p.value);
  rt.scratch(device, (s) => {
    const scores = s.alloc(B * L * S * accBytes);
    const probs = s.alloc(B * L * S * tBytes);
    // S = Q K^T: K^T is K read with its strides swapped.
    const qk: GemmProblem = {
      m: L,
      n: S,
      k: E,
      batch: B,
      a: { ptr: storagePtr(p.query), offsets: Array.from(off.q, Number), rs: qs0, cs: qs1 },
      b: { ptr: storagePtr(p.key), offsets: Array.from(off.k, Number), rs: ks1, cs: ks0 },
      c: { ptr: scores, offsets: Array.from({ length: B }, (_, i) => i * L * S), ldc: S },
      abBytes: tBytes,
      cBytes: accBytes,
    };
    if (E === 0) rt.driver.memset(device, scores, 0, B * L * S * accBytes);
    else runCublas(rt, s, readyProblem(rt, s, qk), qk, mode, accType);
    const kind = p.maskKind === "bool" ? 1 : p.maskKind === "additive" ? 2 : 0;
    const rows = B * L;
    const args: KernelArg[] = [
      { type: "ptr", value: scores },
      { type: "ptr", value: probs },
      { type: "ptr", value: p.attnMask ? storagePtr(p.attnMask) : 0n },
      { type: "ptr", value: off.m ? s.upload(off.m) : 0n },
      { type: "i32", value: kind },
      { type: "i64", value: off.ms0 },
      { type: "i64", value: off.ms1 },
      { type: "i64", value: rows },
      { type: "i32", value: L },
      { type: "i32", value: S },
      wide ? { type: "f64", value: p.scale } : { type: "f32", value: p.scale },
      { type: "i32", value: p.isCausal ? 1 : 0 },
      { type: "f32", value: p.dropoutP },
      { type: "u32", value: p.seed >>> 0 },
    ];
    rt.launch(
      device,
      `attn_softmax_${SUFFIX[dtype]}`,
      [Math.min(rows, 65535), 1, 1],
      [256, 1, 1],
      0,
      args,
    );
    // O = P V
    const pv: GemmProblem = {
      m: L,
      n: Ev,
      k: S,
      batch: B,
      a: { ptr: probs, offsets: Array.from({ length: B }, (_, i) => i * L * S), rs: S, cs: 1 },
      b: { ptr: storagePtr(p.value), offsets: Array.from(off.v, Number), rs: vs0, cs: vs1 },
      c: { ptr: dataPtr(out), offsets: Array.from({ length: B }, (_, i) => i * L * Ev), ldc: Ev },
      abBytes: tBytes,
      cBytes: tBytes,
    };
    runCublas(rt, s, readyProblem(rt, s, pv), pv, mode, DATA_TYPE[dtype]);
  });
  return out;
}

function withDevice(p: SdpaParams, f: (d: DeviceFacts, rt: CudaRuntime) => true | string) {
  const rt = currentRuntime();
  return f(facts(rt, p), rt);
}

export function attentionKernels(): KernelDefinition<SdpaParams>[] {
  const common = { op: "scaledDotProductAttention", device: "cuda", deterministic: true } as const;
  return [
    {
      ...common,
      name: "cuda-flash",
      family: "FLASH_ATTENTION",
      dtypes: ["float16", "bfloat16"],
      flags: ["cuda.flashSdp"],
      // Tensor cores (mma.sync): measured on an H100 at 2.2x-6.0x the math path's speed
      // (B=4 H=16 N=1024..8192, d=64/128), so it ranks above it.
      priority: 360,
      supports: (p) => withDevice(p, (d) => flashSupport(p, d, true)),
      run: (p) => runFused(p, true, true),
    },
    {
      ...common,
      name: "cuda-flash-simt",
      family: "FLASH_ATTENTION",
      dtypes: ["float16", "bfloat16"],
      flags: ["cuda.flashSdp"],
      // Plain CUDA C for the head dims the tensor-core kernel lacks: below the math path,
      // which ran 10x-90x faster on an H200.
      priority: 300,
      supports: (p) => withDevice(p, (d) => flashSupport(p, d)),
      run: (p) => runFused(p, true),
    },
    {
      ...common,
      name: "cuda-mem-efficient",
      family: "EFFICIENT_ATTENTION",
      dtypes: ["float32", "float16", "bfloat16"],
      flags: ["cuda.memEfficientSdp"],
      priority: 200,
      supports: (p) => withDevice(p, (d) => efficientSupport(p, d)),
      run: (p) => runFused(p, false),
    },
    {
      ...common,
      name: "cuda-math",
      family: "MATH",
      dtypes: ["float32", "float64", "float16", "bfloat16"],
      flags: ["cuda.mathSdp"],
      // After the tensor-core flash kernel, before the plain CUDA C ones while its score
      // matrices fit in half the device (supports() says so beyond): on an H200 it ran 10x to
      // 90x faster than cuda-flash-simt and cuda-mem-efficient (B=4 H=16 N=1024..8192).
      priority: 350,
      supports: (p) =>
        withDevice(p, (d, rt) =>
          mathSupport(
            p,
            d,
            rt.layer.libs.cublas ? undefined : (rt.layer.info.cublas?.reason ?? "not loaded"),
          ),
        ),
      run: (p) => runMath(p),
    },
  ];
}
