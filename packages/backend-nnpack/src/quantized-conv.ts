/**
 * qnnpack's quantizedConv2d, two kernels of assembly/qgemm.ts:
 * - depthwise layers (one output channel per input channel): qdwconv, channels on the
 *   pool's threads, 8 outputs of a row per step;
 * - the others, per image and group: out = W · cols, where cols is the im2col of the
 *   widened activations laid out one row per kernel tap (qcol_pairs builds it from shifted
 *   runs of input rows, taps interleaved in pairs for i32x4.dot_i16x8_s; rows on the
 *   pool), then qconv_gemm in 4-channel x 8-position tiles written straight into the
 *   NCHW planes with a vector requantization (positions on the pool).
 * The weights are packed once per layer and kept in its engine cache.
 */
import type { QTensor, Tensor } from "@backplane/core";
import { emptyQuantized, int32SumProblem, type QConv2dParams } from "@backplane/core/backend";
import { addressOf, conv2dChannelParams, inWasmMemory, Scratch } from "@backplane/core/cpu";
import {
  MODULE_ID,
  NO_SCRATCH,
  NOT_LOADED,
  PAIRS_KEY,
  packedWeights,
  type QgemmModule,
  qgemm,
  scratch,
} from "./qgemm.ts";
import { parallel } from "./util.ts";

/** Per-thread buffers (qdwconv's plane, qcol_pairs's two rows), released after each call. */
const THREAD_SCRATCH = new Scratch();

export function qnnpackConv2dSupports(p: QConv2dParams): true | string {
  // qdwconv and qconv_gemm sum in i32 lanes: exact only while every sum fits int32.
  const overflow = int32SumProblem(p);
  if (overflow) return overflow;
  if (!qgemm()) return NOT_LOADED;
  if (!inWasmMemory(p.x.storage()) || !inWasmMemory(p.packed.weight.storage()))
    return "the tensors are not in the CPU memory the WASM kernels share";
  return true;
}

/** A depthwise convolution: one output channel per input channel. */
const isDepthwise = (p: QConv2dParams) => p.packed.groups === p.c && p.oc === p.c;

/** What both kernels pass: the geometry, the zero point, the requantization's addresses. */
function common(p: QConv2dParams, mult: Tensor) {
  const { stride, padding, dilation } = p.packed;
  return {
    geometry: [p.kh, p.kw, stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1]],
    xZp: (p.x.qparams as { zeroPoint: number }).zeroPoint,
    mult: addressOf(mult),
    bias: p.packed.bias ? addressOf(p.packed.bias) : 0,
    inv: Math.fround(1 / Math.fround(p.outScale)),
  };
}

/** Per image, channels on the pool's threads: qdwconv. */
function depthwise(p: QConv2dParams, m: QgemmModule, out: Tensor, mult: Tensor): void {
  const { stride, padding, dilation } = p.packed;
  const taps = p.kh * p.kw;
  // Room for 8 outputs past the last (stride-2 taps read 16 values) in every row.
  const wpad =
    Math.max(p.w + 2 * padding[1], (p.ow + 8) * stride[1] + (p.kw - 1) * dilation[1]) + 16;
  const wq = scratch(p.c * taps * 2);
  try {
    const w = p.packed.weight.storage().hostData() as Int8Array;
    const { wZp } = conv2dChannelParams(p);
    const q = new Int16Array((wq.hostData() as Int32Array).buffer, addressOf(wq), p.c * taps);
    for (let i = 0; i < q.length; i++) q[i] = w[i] - wZp[Math.floor(i / taps)];
    const c = common(p, mult);
    for (let b = 0; b < p.n; b++) {
      const x = addressOf(p.x.storage()) + b * p.c * p.h * p.w;
      const y = addressOf(out) + b * p.c * p.oh * p.ow;
      parallel(
        "qdwconv",
        [x, p.h, p.w, ...c.geometry, p.oh, p.ow, wpad, c.xZp, addressOf(wq)].concat([
          c.mult,
          c.bias,
          c.inv,
          p.outZeroPoint,
          y,
        ]),
        p.c,
        THREAD_SCRATCH,
        m.qdw_buffer_bytes(p.h, padding[0], wpad),
        MODULE_ID,
      );
    }
  } finally {
    THREAD_SCRATCH.release();
    wq.dispose();
  }
}

/**
 * Bytes of column pairs per chunk of output rows: memory stays bounded whatever the image
 * (the suite's layers, up to 3.7 MB of pairs, run in one chunk).
 */
const CHUNK_BYTES = 4 << 20;

/**
 * Per image, group and chunk of output rows: qcol_pairs (tap pairs on the pool), then
 * qconv_gemm (positions on the pool).
 */
function byColumns(p: QConv2dParams, m: QgemmModule, out: Tensor, mult: Tensor): void {
  const groups = p.packed.groups;
  const cg = p.c / groups;
  const ocg = p.oc / groups;
  const k = cg * p.kh * p.kw;
  const k2 = Math.ceil(k / 2);
  const plane = p.oh * p.ow;
  const chunk = Math.max(1, Math.min(p.oh, Math.floor(CHUNK_BYTES / (k2 * 4 * p.ow))));
  const weights = packedWeights(
    p.packed,
    PAIRS_KEY,
    groups,
    ocg,
    k,
    m.qwpairs_bytes,
    m.qpack_wpairs,
  );
  const cols = scratch(m.qcols_bytes(k, chunk * p.ow));
  try {
    const c = common(p, mult);
    for (let b = 0; b < p.n; b++)
      for (let g = 0; g < groups; g++)
        for (let oy0 = 0; oy0 < p.oh; oy0 += chunk) {
          const rows = Math.min(chunk, p.oh - oy0);
          const positions = rows * p.ow;
          const x = addressOf(p.x.storage()) + (b * p.c + g * cg) * p.h * p.w;
          const y = addressOf(out) + (b * p.oc + g * ocg) * plane + oy0 * p.ow;
          parallel(
            "qcol_pairs",
            [x, p.h, p.w, ...c.geometry, oy0, rows, p.ow, c.xZp, k, addressOf(cols)],
            k2,
            THREAD_SCRATCH,
            Math.ceil(positions / 8) * 8 * 4,
            MODULE_ID,
          );
          parallel(
            "qconv_gemm",
            [weights.address + g * weights.groupBytes, addressOf(cols), ocg, k2, positions]
              .concat([c.mult + g * ocg * 4, c.bias ? c.bias + g * ocg * 4 : 0, c.inv])
              .concat([p.outZeroPoint, y, plane]),
            Math.ceil(positions / 8),
            NO_SCRATCH,
            undefined,
            MODULE_ID,
          );
        }
  } finally {
    THREAD_SCRATCH.release();
    cols.dispose();
  }
}

export function qnnpackConv2d(p: QConv2dParams): QTensor {
  const m = qgemm()!;
  const result = emptyQuantized(p.outShape, "quint8", p.outScale, p.outZeroPoint);
  const out = result.storage();
  if (p.n === 0) return result;
  const mult = scratch(p.oc * 4);
  try {
    new Float32Array((mult.hostData() as Int32Array).buffer, addressOf(mult), p.oc).set(
      conv2dChannelParams(p).mult,
    );
    (isDepthwise(p) ? depthwise : byColumns)(p, m, out, mult);
    return result;
  } catch (e) {
    result.dispose();
    throw e;
  } finally {
    mult.dispose();
  }
}
