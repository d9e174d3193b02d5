/**
 * What each attention kernel can run, as supports() reasons (canUseFlashAttention and friends
 * read them through the dispatcher). Pure functions of the parameters and the device, so they
 * are tested without a GPU.
 */
import { bytesPerElement } from "@backplane/core";
import type { SdpaParams } from "@backplane/core/backend";

/** The facts about the device the constraints need. */
export interface DeviceFacts {
  name: string;
  major: number;
  minor: number;
  sharedMemoryPerBlockOptin: number;
  /** Bytes of device memory (bounds the math path's score matrices). */
  totalMemory?: number;
}

/** The package's PTX targets compute_75: older GPUs cannot JIT it. */
export const PTX_MIN_CAPABILITY = 75;
/** Head dims the two fused kernels keep in registers. */
export const MAX_HEAD_DIM = 256;
/** Grid y carries the batch (batch x heads) index. */
export const MAX_GRID_Y = 65535;

/** Flash kernel tiling (kernels/attention_flash.cu, plain CUDA C: any head dim % 8). */
export const FLASH = { warps: 4, rowsPerWarp: 4, rows: 16, keys: 64 } as const;
/**
 * Tensor-core flash tiling (kernels/attention_flash_tc.cu): one kernel per head dim; 16 query
 * rows per m-tile, two m-tiles per warp up to head dim 96 (TC_MT), one above.
 */
export const FLASH_TC = { warps: 4, keys: 64, headDims: [16, 32, 64, 96, 128] } as const;
const flashTcRows = (headDim: number) => 16 * FLASH_TC.warps * (headDim <= 96 ? 2 : 1);

/** How a flash problem launches: which kernel, rows per block, threads, dynamic shared memory. */
export interface FlashLaunch {
  kernel: string;
  rows: number;
  threads: number;
  shared: number;
}

/** The tensor-core kernel's head dims (one PTX entry each; E must equal Ev). */
export function hasTensorCoreFlash(p: SdpaParams): boolean {
  return (FLASH_TC.headDims as readonly number[]).includes(p.E) && p.Ev === p.E;
}

export function flashLaunch(p: SdpaParams, suffix: string, tensorCores: boolean): FlashLaunch {
  if (tensorCores) {
    // The block's Q rows, two K and two V tiles, each row E + 8 elements of 2 bytes.
    const rows = flashTcRows(p.E);
    const shared = (rows + 4 * FLASH_TC.keys) * (p.E + 8) * 2;
    return {
      kernel: `flash_tc_fwd_${suffix}_d${p.E}`,
      rows,
      threads: FLASH_TC.warps * 32,
      shared,
    };
  }
  return {
    kernel: `flash_fwd_${suffix}`,
    rows: FLASH.rows,
    threads: FLASH.warps * 32,
    shared: flashSharedBytes(p),
  };
}
/** Memory-efficient kernel: one warp per query row, 4 warps per block. */
export const EFFICIENT = { warps: 4 } as const;

/** The kernels take L, S, E and Ev as C int (BP_ATTENTION_PARAMS, attn_softmax, cuBLAS's m, n, k). */
export const ATTENTION_INT_MAX = 2 ** 31 - 1;

/** Why a size does not fit the kernels' int arguments (`batch`: cuBLAS's batchCount too), or undefined. */
export function intSizeProblem(p: SdpaParams, batch?: number): string | undefined {
  const sizes: Record<string, number> = { L: p.L, S: p.S, E: p.E, Ev: p.Ev };
  if (batch !== undefined) sizes.batch = batch;
  const big = Object.entries(sizes).filter(([, v]) => v > ATTENTION_INT_MAX);
  if (big.length === 0) return undefined;
  const list = big.map(([name, v]) => `${name}=${v}`).join(", ");
  return `the CUDA attention kernels take int sizes (at most ${ATTENTION_INT_MAX}); got ${list}`;
}

const cc = (d: DeviceFacts) => d.major * 10 + d.minor;
const ccText = (d: DeviceFacts) => `${d.major}.${d.minor}`;

export function batchCount(p: SdpaParams): number {
  return p.batchShape.reduce((a, b) => a * b, 1);
}

/** Dynamic shared memory of the flash kernel: Q tile (fp32), padded K tile, V tile. */
export function flashSharedBytes(p: SdpaParams): number {
  const b = bytesPerElement(p.dtype);
  return FLASH.rows * p.E * 4 + FLASH.keys * (p.E + 2) * b + FLASH.keys * p.Ev * b;
}

export function efficientSharedBytes(p: SdpaParams): number {
  return EFFICIENT.warps * p.E * 4;
}

function ptxSupport(d: DeviceFacts): true | string {
  return cc(d) >= PTX_MIN_CAPABILITY
    ? true
    : `${d.name} has compute capability ${ccText(d)}; the package's PTX needs 7.5+ (compute_75)`;
}

/**
 * FLASH_ATTENTION: float16/bfloat16 on sm80+, no attention mask, head dim % 8 == 0, <= 256,
 * Ev == E; the tensor-core kernel (`tensorCores`) also needs one of its head dims.
 */
export function flashSupport(p: SdpaParams, d: DeviceFacts, tensorCores = false): true | string {
  if (cc(d) < 80)
    return `flash attention needs compute capability 8.0+ (sm80); ${d.name} is ${ccText(d)}`;
  if (p.dtype !== "float16" && p.dtype !== "bfloat16")
    return `flash attention needs float16 or bfloat16 inputs, got ${p.dtype}`;
  if (p.attnMask)
    return "flash attention does not support attnMask (as in torch); pass isCausal, or use EFFICIENT_ATTENTION or MATH for a mask";
  if (p.E !== p.Ev)
    return `flash attention needs query, key and value to share their last dim; got E=${p.E}, Ev=${p.Ev}`;
  if (p.E > MAX_HEAD_DIM)
    return `flash attention supports head dims up to ${MAX_HEAD_DIM}; got ${p.E}`;
  if (p.E % 8 !== 0) return `flash attention needs the head dim to be a multiple of 8; got ${p.E}`;
  if (tensorCores && !hasTensorCoreFlash(p))
    return `the tensor-core flash kernel runs head dims ${FLASH_TC.headDims.join(", ")}; got ${p.E} (cuda-flash-simt runs it)`;
  // Its probabilities go to the tensor cores in the input dtype, dropout's 1 / (1 - p) included.
  if (tensorCores && p.dtype === "float16" && p.dropoutP > 0 && 1 / (1 - p.dropoutP) > 65504)
    return `the tensor-core flash kernel scales kept float16 probabilities by 1 / (1 - dropoutP), which overflows float16 above dropoutP = ${1 - 1 / 65504}; got ${p.dropoutP} (cuda-flash-simt runs it)`;
  const tooBig = intSizeProblem(p);
  if (tooBig) return tooBig;
  const n = batchCount(p);
  if (n > MAX_GRID_Y)
    return `flash attention runs one grid row per batch x head; ${n} exceeds ${MAX_GRID_Y}`;
  const { shared } = flashLaunch(p, "", tensorCores);
  if (shared > d.sharedMemoryPerBlockOptin)
    return `flash attention needs ${shared} bytes of shared memory per block; ${d.name} allows ${d.sharedMemoryPerBlockOptin}`;
  return true;
}

/** EFFICIENT_ATTENTION: float32/float16 (bfloat16 on sm80+), head dims <= 256, any mask, dropout. */
export function efficientSupport(p: SdpaParams, d: DeviceFacts): true | string {
  const ptx = ptxSupport(d);
  if (ptx !== true) return ptx;
  if (p.dtype === "bfloat16" && cc(d) < 80)
    return `memory-efficient attention supports bfloat16 on compute capability 8.0+ only; ${d.name} is ${ccText(d)}`;
  if (p.E > MAX_HEAD_DIM || p.Ev > MAX_HEAD_DIM)
    return `memory-efficient attention supports head dims up to ${MAX_HEAD_DIM}; got E=${p.E}, Ev=${p.Ev}`;
  const tooBig = intSizeProblem(p);
  if (tooBig) return tooBig;
  const n = batchCount(p);
  if (n > MAX_GRID_Y)
    return `memory-efficient attention runs one grid row per batch x head; ${n} exceeds ${MAX_GRID_Y}`;
  return true;
}

/** MATH: cuBLAS for the two products and the softmax kernel in between; every dtype and mask. */
export function mathSupport(
  p: SdpaParams,
  d: DeviceFacts,
  cublasReason: string | undefined,
): true | string {
  const ptx = ptxSupport(d);
  if (ptx !== true) return ptx;
  if (cublasReason) return `the math path needs cuBLAS: ${cublasReason}`;
  if (p.dtype === "bfloat16" && cc(d) < 80)
    return `bfloat16 GEMM needs compute capability 8.0+; ${d.name} is ${ccText(d)}`;
  const tooBig = intSizeProblem(p, batchCount(p));
  if (tooBig) return tooBig;
  const bytes = mathScratchBytes(p);
  if (d.totalMemory !== undefined && bytes > d.totalMemory * MATH_MEMORY_SHARE)
    return `the math path's score matrices need ${(bytes / 2 ** 30).toFixed(1)} GiB, more than half of ${d.name}'s ${(d.totalMemory / 2 ** 30).toFixed(0)} GiB (the fused kernels need none)`;
  return true;
}

/** The share of device memory the math path may take for its scores and probabilities. */
export const MATH_MEMORY_SHARE = 0.5;

/** DeviceScratch of the math path: float32 (float64) scores and probabilities in the input dtype. */
export function mathScratchBytes(p: SdpaParams): number {
  const acc = p.dtype === "float64" ? 8 : 4;
  const t = p.dtype === "float64" ? 8 : p.dtype === "float32" ? 4 : 2;
  return batchCount(p) * p.L * p.S * (acc + t);
}
