/**
 * qnnpack's quantizedLinear, exact sums with i32x4.dot_i16x8_s and the core's float32
 * requantization, the work split over the openmp pool:
 * - few rows (batch 1): qlinear, 2 rows x 4 features per tile, the weights packed once per
 *   layer in 4-feature blocks, the activations widened per call;
 * - more rows: as a 1x1 convolution on qconv_gemm (4 features x 8 rows per tile, vector
 *   requantization), the weights packed once in pairs, the output transposed back into
 *   rows; used where its blocks of 8 rows waste little (byColumnsPays).
 */
import { empty, type QTensor, type Tensor } from "@backplane/core";
import { emptyQuantized, int32SumProblem, type QLinearParams } from "@backplane/core/backend";
import { addressOf, inWasmMemory, linearChannelParams } from "@backplane/core/cpu";
import {
  BLOCKS_KEY,
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

export function qnnpackLinearSupports(p: QLinearParams): true | string {
  // qlinear and qconv_gemm sum in i32 lanes: exact only while every sum fits int32.
  const overflow = int32SumProblem(p);
  if (overflow) return overflow;
  if (!qgemm()) return NOT_LOADED;
  const x = p.x.storage();
  if (!inWasmMemory(x) || !inWasmMemory(p.packed.weight.storage()))
    return "the tensors are not in the CPU memory the WASM kernels share";
  return true;
}

/**
 * Whether qconv_gemm's blocks of 8 rows pay for these rows. Measured per row on a
 * 1024 x 1024 layer (Intel Xeon, one thread): qlinear 81-88 us, qconv_gemm 65-71 us per
 * computed row (8 rows 0.56 ms against 7 on qlinear 0.57 ms; 9 rows 1.03 ms: 16 computed).
 */
const byColumnsPays = (m: number) => m >= 8 && Math.ceil(m / 8) * 8 <= m * 1.15;

export function qnnpackLinear(p: QLinearParams): QTensor {
  const m = qgemm()!;
  const result = emptyQuantized(p.outShape, "quint8", p.outScale, p.outZeroPoint);
  const out = result.storage();
  if (p.m === 0 || p.n === 0) return result;
  const mult = empty([p.n], { dtype: "float32" });
  try {
    (mult.hostData() as Float32Array).set(linearChannelParams(p).mult);
    (byColumnsPays(p.m) ? byColumns : byRows)(p, m, out, mult);
    return result;
  } catch (e) {
    result.dispose();
    throw e;
  } finally {
    mult.dispose();
  }
}

/** What both paths pass: x, its zero point, the requantization's addresses. */
function common(p: QLinearParams, mult: Tensor) {
  return {
    x: addressOf(p.x.storage()),
    xZp: (p.x.qparams as { zeroPoint: number }).zeroPoint,
    mult: addressOf(mult),
    bias: p.packed.bias ? addressOf(p.packed.bias) : 0,
    inv: Math.fround(1 / Math.fround(p.outScale)),
  };
}

/** qpack_x (rows widened), then qlinear (rows on the pool). */
function byRows(p: QLinearParams, m: QgemmModule, out: Tensor, mult: Tensor): void {
  const k8 = Math.ceil(p.k / 8) * 8;
  const weights = packedWeights(p.packed, BLOCKS_KEY, 1, p.n, p.k, m.qpack_w_bytes, m.qpack_w);
  const xp = scratch(p.m * k8 * 2);
  try {
    const c = common(p, mult);
    parallel(
      "qpack_x",
      [c.x, p.m, p.k, c.xZp, addressOf(xp)],
      p.m,
      NO_SCRATCH,
      undefined,
      MODULE_ID,
    );
    parallel(
      "qlinear",
      [addressOf(xp), weights.address, p.m, p.n, k8, c.mult, c.bias, c.inv, p.outZeroPoint].concat([
        addressOf(out),
      ]),
      p.m,
      NO_SCRATCH,
      undefined,
      MODULE_ID,
    );
  } finally {
    xp.dispose();
  }
}

/** Bytes of column pairs per chunk of rows: memory stays bounded whatever the batch. */
const CHUNK_BYTES = 4 << 20;

/**
 * Per chunk of rows: qrow_pairs (pair rows on the pool), qconv_gemm (row blocks),
 * qtranspose_u8 (rows).
 */
function byColumns(p: QLinearParams, m: QgemmModule, out: Tensor, mult: Tensor): void {
  const k2 = Math.ceil(p.k / 2);
  const chunk = Math.max(8, Math.floor(CHUNK_BYTES / (k2 * 4) / 8) * 8);
  const weights = packedWeights(p.packed, PAIRS_KEY, 1, p.n, p.k, m.qwpairs_bytes, m.qpack_wpairs);
  const cols = scratch(m.qcols_bytes(p.k, Math.min(chunk, p.m)));
  const planes = scratch(Math.min(chunk, p.m) * p.n);
  try {
    const c = common(p, mult);
    for (let r0 = 0; r0 < p.m; r0 += chunk) {
      const rows = Math.min(chunk, p.m - r0);
      const x = c.x + r0 * p.k;
      parallel(
        "qrow_pairs",
        [x, rows, p.k, c.xZp, addressOf(cols)],
        k2,
        NO_SCRATCH,
        undefined,
        MODULE_ID,
      );
      parallel(
        "qconv_gemm",
        [
          weights.address,
          addressOf(cols),
          p.n,
          k2,
          rows,
          c.mult,
          c.bias,
          c.inv,
          p.outZeroPoint,
        ].concat([addressOf(planes), rows]),
        Math.ceil(rows / 8),
        NO_SCRATCH,
        undefined,
        MODULE_ID,
      );
      const y = addressOf(out) + r0 * p.n;
      parallel(
        "qtranspose_u8",
        [addressOf(planes), rows, p.n, y],
        rows,
        NO_SCRATCH,
        undefined,
        MODULE_ID,
      );
    }
  } finally {
    cols.dispose();
    planes.dispose();
  }
}
