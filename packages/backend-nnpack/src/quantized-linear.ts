/**
 * qnnpack's quantizedLinear: the weights packed once per layer (int16, zero points
 * subtracted, in 4-channel blocks), the activations widened the same way per call, exact
 * sums with i32x4.dot_i16x8_s in 2 x 4 tiles, the core's float32 requantization; rows
 * split over the openmp pool.
 */
import { empty, type QTensor } from "@backplane/core";
import { linearChannelParams, type QLinearParams } from "@backplane/core/backend";
import {
  MODULE_ID,
  NO_SCRATCH,
  NOT_LOADED,
  packedWeights,
  qgemm,
  quint8Result,
  scratch,
} from "./qgemm.ts";
import { addressOf, inWasmMemory, parallel } from "./util.ts";

export function qnnpackLinearSupports(p: QLinearParams): true | string {
  if (!qgemm()) return NOT_LOADED;
  const x = p.x.storage();
  if (!inWasmMemory(x) || !inWasmMemory(p.packed.weight.storage()))
    return "the tensors are not in the CPU memory the WASM kernels share";
  return true;
}

export function qnnpackLinear(p: QLinearParams): QTensor {
  const m = qgemm()!;
  const { out, result } = quint8Result(p.outShape, p.outScale, p.outZeroPoint);
  if (p.m === 0 || p.n === 0) return result;
  const k8 = Math.ceil(p.k / 8) * 8;
  const weights = packedWeights(p.packed, 1, p.n, p.k, m.qpack_w_bytes, m.qpack_w);
  const xp = scratch(p.m * k8 * 2);
  const mult = empty([p.n], { dtype: "float32" });
  try {
    (mult.hostData() as Float32Array).set(linearChannelParams(p).mult);
    const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
    const x = addressOf(p.x.storage());
    parallel("qpack_x", [x, p.m, p.k, xZp, addressOf(xp)], p.m, NO_SCRATCH, undefined, MODULE_ID);
    const bias = p.packed.bias ? addressOf(p.packed.bias) : 0;
    const inv = Math.fround(1 / Math.fround(p.outScale));
    parallel(
      "qlinear",
      [
        addressOf(xp),
        weights.address,
        p.m,
        p.n,
        k8,
        addressOf(mult),
        bias,
        inv,
        p.outZeroPoint,
        addressOf(out),
      ],
      p.m,
      NO_SCRATCH,
      undefined,
      MODULE_ID,
    );
    return result;
  } catch (e) {
    result.dispose();
    throw e;
  } finally {
    xp.dispose();
    mult.dispose();
  }
}
