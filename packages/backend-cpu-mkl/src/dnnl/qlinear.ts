/**
 * The "onednn" quantized engine (backends.quantized.engine): quantizedLinear's integer
 * product on oneDNN's dnnl_gemm_u8s8s32 (uint8 activations, int8 weights, exact int32
 * sums with both zero points applied), then the requantization in WASM (the core's formula),
 * so the output has the bits of the reference and of PyTorch's engines.
 *
 * oneDNN warns that its u8s8s32 GEMM may saturate intermediate sums where the CPU has no
 * VNNI instructions (pairs of u8 x s8 products summed in int16): such CPUs are refused
 * with the reason, and the other engines serve.
 */
import { backends, empty, QTensor, type Tensor } from "@backplane/core";
import { linearChannelParams, type QLinearParams } from "@backplane/core/backend";
import { modules } from "../kernels/wasm.ts";
import { addressOf } from "../wasm/scratch.ts";
import { check } from "./call.ts";
import { dnnlState } from "./state.ts";

export const ONEDNN_ENGINE = "onednn";
const N = 78; // 'N'
const T = 84; // 'T'
const F = 70; // 'F': one offset for all of C
const NO_OFFSET = new Int32Array(1);

/** Whether the CPU has VNNI (oneDNN's int8 kernels sum u8 x s8 pairs exactly there). */
export function hasVnni(): boolean {
  const f = backends.cpu.getCpuCapabilityInfo().features;
  return f.includes("avx512_vnni") || f.includes("avx_vnni") || f.includes("amx_int8");
}

/** Why the onednn engine refuses these inputs, or true. */
export function dnnlQLinearSupports(p: QLinearParams): true | string {
  if (!dnnlState.lib) return "oneDNN is not loaded";
  if (!modules.kernels)
    return "backend-cpu-mkl's WASM kernels (its requantization) have not loaded";
  if (!hasVnni())
    return "this CPU has no VNNI: oneDNN's u8s8s32 GEMM may saturate its int16 intermediate sums (qnnpack serves)";
  const w = p.packed.weight.qparams;
  if (w.scheme === "per_channel_affine" && new Set(w.zeroPoints).size > 1)
    return "the weights' per-channel zero points differ; oneDNN's GEMM takes one weight offset (symmetric weights, zero point 0, run here)";
  return true;
}

/** A layer's column sums Σ_k (w - w_zp), cached with the layer (a CPU tensor). */
function columnSums(p: QLinearParams, wZp: number): Tensor {
  const cached = p.packed.engineCache.get(ONEDNN_ENGINE) as { sums: Tensor } | undefined;
  if (cached) return cached.sums;
  const w = p.packed.weight.storage().hostData() as Int8Array;
  const sums = empty([Math.max(1, p.n)], { dtype: "int32" });
  const s = sums.hostData() as Int32Array;
  for (let c = 0; c < p.n; c++) {
    let t = 0;
    for (let k = 0; k < p.k; k++) t += w[c * p.k + k] - wZp;
    s[c] = t;
  }
  const entry: { sums: Tensor; dispose(): void } = { sums, dispose: () => sums.dispose() };
  p.packed.engineCache.set(ONEDNN_ENGINE, entry);
  return sums;
}

/**
 * The sums Σ x (w - w_zp) on oneDNN (activation offset 0, so it does not sum the weights'
 * columns again on every call: x_zp · Σ (w - w_zp) comes from the layer's cached column
 * sums), then the requantization in WASM (backend-cpu-mkl's kernels module), which
 * subtracts that term first.
 */
export function dnnlQLinear(p: QLinearParams): QTensor {
  const out = empty(p.outShape, { dtype: "uint8" });
  const result = new QTensor(out, "quint8", {
    scheme: "per_tensor_affine",
    scale: p.outScale,
    zeroPoint: p.outZeroPoint,
  });
  if (p.m === 0 || p.n === 0) return result;
  const { wZp, mult } = linearChannelParams(p);
  const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
  const acc = empty([p.m * p.n], { dtype: "int32" });
  const multT = empty([p.n], { dtype: "float32" });
  try {
    const sums = columnSums(p, wZp[0]);
    const a = acc.hostData() as Int32Array;
    if (p.k === 0) a.fill(0);
    else gemm(p, a, wZp[0]);
    (multT.hostData() as Float32Array).set(mult);
    const inv = Math.fround(1 / Math.fround(p.outScale));
    const bias = p.packed.bias;
    modules.kernels!.requant_linear_u8(
      addressOf(acc),
      p.m,
      p.n,
      addressOf(sums),
      xZp,
      addressOf(multT),
      bias ? addressOf(bias) : 0,
      inv,
      p.outZeroPoint,
      addressOf(out),
    );
    return result;
  } catch (e) {
    result.dispose();
    throw e;
  } finally {
    acc.dispose();
    multT.dispose();
  }
}

/** acc = x (w - w_zp)ᵀ, int32, on oneDNN's threads (integer sums: the same bits on any). */
function gemm(p: QLinearParams, acc: Int32Array, wZp: number): void {
  const d = dnnlState.ready().dnnl;
  dnnlState.applyThreads();
  const status = d.dnnl_gemm_u8s8s32(
    N,
    T,
    F,
    p.m,
    p.n,
    p.k,
    1,
    p.x.storage().hostData() as Uint8Array,
    p.k,
    0,
    p.packed.weight.storage().hostData() as Int8Array,
    p.k,
    wZp,
    0,
    acc,
    p.n,
    NO_OFFSET,
  );
  check(`dnnl_gemm_u8s8s32(${p.m}x${p.n}x${p.k})`, status);
}
