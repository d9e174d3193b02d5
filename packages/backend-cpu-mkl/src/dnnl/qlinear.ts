/**
 * The "onednn" quantized engine (backends.quantized.engine): quantizedLinear's integer
 * product on oneDNN's dnnl_gemm_u8s8s32 (uint8 activations, int8 weights, exact int32
 * sums with both zero points applied), then the core's requantization, so the output has
 * the bits of the reference and of PyTorch's engines.
 *
 * oneDNN warns that its u8s8s32 GEMM may saturate intermediate sums where the CPU has no
 * VNNI instructions (pairs of u8 x s8 products summed in int16): such CPUs are refused
 * with the reason, and the other engines serve.
 */
import { backends } from "@backplane/core";
import {
  type AnyKernelDefinition,
  linearChannelParams,
  type QLinearParams,
  requantizeLinear,
} from "@backplane/core/backend";
import { STATUS_NAMES } from "./library.ts";
import { dnnlState } from "./state.ts";

export const ONEDNN_ENGINE = "onednn";
const N = 78; // 'N'
const T = 84; // 'T'
const F = 70; // 'F': one offset for all of C
const NO_OFFSET = new Int32Array(1);

function hasVnni(): boolean {
  const f = backends.cpu.getCpuCapabilityInfo().features;
  return f.includes("avx512_vnni") || f.includes("avx_vnni") || f.includes("amx_int8");
}

/** Why the onednn engine refuses these inputs, or true. */
export function dnnlQLinearSupports(p: QLinearParams): true | string {
  if (!dnnlState.lib) return "oneDNN is not loaded";
  if (!hasVnni())
    return "this CPU has no VNNI: oneDNN's u8s8s32 GEMM may saturate its int16 intermediate sums (qnnpack serves)";
  const w = p.packed.weight.qparams;
  if (w.scheme === "per_channel_affine" && new Set(w.zeroPoints).size > 1)
    return "the weights' per-channel zero points differ; oneDNN's GEMM takes one weight offset (symmetric weights, zero point 0, run here)";
  return true;
}

export function dnnlQLinear(p: QLinearParams): ReturnType<typeof requantizeLinear> {
  const acc = new Int32Array(p.m * p.n);
  if (acc.length > 0 && p.k > 0) {
    const d = dnnlState.ready().dnnl;
    const x = p.x.storage().hostData() as Uint8Array;
    const w = p.packed.weight.storage().hostData() as Int8Array;
    const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
    const wZp = linearChannelParams(p).wZp[0];
    dnnlState.applyThreads(); // integer sums: the same bits on any thread count
    const status = d.dnnl_gemm_u8s8s32(
      N,
      T,
      F,
      p.m,
      p.n,
      p.k,
      1,
      x,
      p.k,
      xZp,
      w,
      p.k,
      wZp,
      0,
      acc,
      p.n,
      NO_OFFSET,
    );
    if (status !== 0)
      throw new Error(
        `dnnl_gemm_u8s8s32(${p.m}x${p.n}x${p.k}) failed: ${STATUS_NAMES[status] ?? `status ${status}`}`,
      );
  }
  return requantizeLinear(p, acc);
}

export function dnnlQuantizedKernels(): AnyKernelDefinition[] {
  return [
    {
      op: "quantizedLinear",
      name: "onednn-qlinear",
      device: "cpu",
      dtypes: ["uint8"],
      deterministic: true,
      flags: ["mkldnn.enabled"],
      verboseFlags: ["mkldnn.verbose"],
      priority: 50,
      enabled: (flag: (key: string) => unknown) => {
        const e = flag("quantized.engine");
        return e === "none" || e === ONEDNN_ENGINE
          ? true
          : `quantized.engine is ${JSON.stringify(e)}`;
      },
      supports: dnnlQLinearSupports as (p: never) => true | string,
      run: dnnlQLinear as (p: never) => unknown,
    },
  ];
}
