/**
 * The "qnnpack" quantized engine (backends.quantized.engine), as PyTorch names its
 * mobile int8 library: quantizedLinear and quantizedConv2d in WASM SIMD128
 * (assembly/qgemm.ts), so they run in every runtime, browsers included. The weights are
 * packed once per layer (int16, zero points subtracted, in 4-channel blocks; per group
 * for a convolution) and kept in the layer's engine cache; a call widens the activations
 * the same way (a convolution's as im2col rows, padding as zeros), sums exactly with
 * i32x4.dot_i16x8_s and requantizes with the core's float32 formula, rows split over the
 * openmp pool.
 */
import { empty, type PackedConv2d, type PackedLinear, QTensor, type Tensor } from "@backplane/core";
import {
  type AnyKernelDefinition,
  conv2dChannelParams,
  linearChannelParams,
  loadWasmModule,
  loadWasmModuleSync,
  type QConv2dParams,
  type QLinearParams,
  quantizedEngineGate,
  type WasmModuleFiles,
} from "@backplane/core/backend";
import { addressOf, inWasmMemory, parallel, Scratch } from "./util.ts";

export const QNNPACK_ENGINE = "qnnpack";
const MODULE_ID = "backend-nnpack/qgemm";

type Fn = (...args: number[]) => void;
interface QgemmModule {
  qpack_w_bytes(n: number, k: number): number;
  qpack_w: Fn;
  qpack_x: Fn;
  qlinear: Fn;
  qim2col: Fn;
  qdw_buffer_bytes(h: number, ph: number, wpad: number): number;
  qdwconv: Fn;
}

const QGEMM_WASM: WasmModuleFiles = {
  id: MODULE_ID,
  threads: new URL("../wasm/qgemm.wasm", import.meta.url),
  plain: new URL("../wasm/qgemm.nothreads.wasm", import.meta.url),
};

let qgemm: QgemmModule | undefined;
/** The kernels take no per-thread scratch (parallel() allocates none without `work`). */
const NO_SCRATCH = new Scratch();
/** Per-thread buffers of the depthwise kernel, released after each call. */
const THREAD_SCRATCH = new Scratch();

/** Loads the module (synchronously where the runtime allows). */
export async function loadQgemm(): Promise<void> {
  qgemm =
    loadWasmModuleSync<QgemmModule>(QGEMM_WASM) ?? (await loadWasmModule<QgemmModule>(QGEMM_WASM));
}

/** A layer's weights packed for qgemm: a tensor of the CPU memory, freed with the layer. */
interface PackedWeights {
  address: number;
  dispose(): void;
}

/** A scratch tensor of at least `bytes` bytes in the CPU memory (counted in memoryStats). */
const scratch = (bytes: number): Tensor =>
  empty([Math.max(16, Math.ceil(bytes / 4))], { dtype: "int32" });

/**
 * A layer's weights packed for qgemm (cached in its engine cache): `groups` blocks of
 * `n` output channels by `k` inputs, one after another, each `groupBytes` long.
 */
function packedWeights(
  layer: PackedLinear | PackedConv2d,
  m: QgemmModule,
  groups: number,
  n: number,
  k: number,
): PackedWeights {
  const cached = layer.engineCache.get(QNNPACK_ENGINE) as PackedWeights | undefined;
  if (cached) return cached;
  const w = layer.weight;
  const groupBytes = m.qpack_w_bytes(n, k);
  const packed = scratch(groups * groupBytes);
  const zps = scratch(groups * n * 4);
  try {
    const p = w.qparams;
    const z = zps.hostData() as Int32Array;
    if (p.scheme === "per_tensor_affine") z.fill(p.zeroPoint, 0, groups * n);
    else z.set(p.zeroPoints);
    for (let g = 0; g < groups; g++)
      m.qpack_w(
        addressOf(w.storage()) + g * n * k,
        n,
        k,
        addressOf(zps) + g * n * 4,
        addressOf(packed) + g * groupBytes,
      );
  } catch (e) {
    packed.dispose();
    throw e;
  } finally {
    zps.dispose();
  }
  const entry: PackedWeights = { address: addressOf(packed), dispose: () => packed.dispose() };
  layer.engineCache.set(QNNPACK_ENGINE, entry);
  return entry;
}

export function qnnpackLinearSupports(p: QLinearParams): true | string {
  if (!qgemm) return "the qgemm WASM module has not loaded (await backends.ready())";
  const x = p.x.storage();
  if (!inWasmMemory(x) || !inWasmMemory(p.packed.weight.storage()))
    return "the tensors are not in the CPU memory the WASM kernels share";
  return true;
}

export function qnnpackLinear(p: QLinearParams): QTensor {
  const m = qgemm!;
  const out = empty(p.outShape, { dtype: "uint8" });
  const result = new QTensor(out, "quint8", {
    scheme: "per_tensor_affine",
    scale: p.outScale,
    zeroPoint: p.outZeroPoint,
  });
  if (p.m === 0 || p.n === 0) return result;
  const k8 = Math.ceil(p.k / 8) * 8;
  const weights = packedWeights(p.packed, m, 1, p.n, p.k);
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
        p.n,
        1,
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

export function qnnpackConv2dSupports(p: QConv2dParams): true | string {
  if (!qgemm) return "the qgemm WASM module has not loaded (await backends.ready())";
  if (!inWasmMemory(p.x.storage()) || !inWasmMemory(p.packed.weight.storage()))
    return "the tensors are not in the CPU memory the WASM kernels share";
  return true;
}

/** A depthwise convolution: one output channel per input channel. */
const isDepthwise = (p: QConv2dParams) => p.packed.groups === p.c && p.oc === p.c;

/** Per image, channels on the pool's threads: qdwconv (8 outputs of a row at a time). */
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
    const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
    const bias = p.packed.bias ? addressOf(p.packed.bias) : 0;
    const inv = Math.fround(1 / Math.fround(p.outScale));
    const plane = p.h * p.w;
    const geometry = [p.kh, p.kw, stride[0], stride[1], padding[0], padding[1]];
    for (let b = 0; b < p.n; b++)
      parallel(
        "qdwconv",
        [
          addressOf(p.x.storage()) + b * p.c * plane,
          p.h,
          p.w,
          ...geometry,
          dilation[0],
          dilation[1],
          p.oh,
          p.ow,
          wpad,
          xZp,
          addressOf(wq),
          addressOf(mult),
          bias,
          inv,
          p.outZeroPoint,
          addressOf(out) + b * p.c * p.oh * p.ow,
        ],
        p.c,
        THREAD_SCRATCH,
        m.qdw_buffer_bytes(p.h, padding[0], wpad),
        MODULE_ID,
      );
  } finally {
    THREAD_SCRATCH.release();
    wq.dispose();
  }
}

/**
 * Depthwise layers: qdwconv. Others, per image and group: im2col rows widened
 * (qim2col), then qlinear into the NCHW planes.
 */
export function qnnpackConv2d(p: QConv2dParams): QTensor {
  const m = qgemm!;
  const out = empty(p.outShape, { dtype: "uint8" });
  const result = new QTensor(out, "quint8", {
    scheme: "per_tensor_affine",
    scale: p.outScale,
    zeroPoint: p.outZeroPoint,
  });
  if (p.n === 0) return result;
  if (isDepthwise(p)) {
    const mult = empty([p.oc], { dtype: "float32" });
    try {
      (mult.hostData() as Float32Array).set(conv2dChannelParams(p).mult);
      depthwise(p, m, out, mult);
      return result;
    } catch (e) {
      result.dispose();
      throw e;
    } finally {
      mult.dispose();
    }
  }
  const { stride, padding, dilation, groups } = p.packed;
  const cg = p.c / groups;
  const ocg = p.oc / groups;
  const k = cg * p.kh * p.kw;
  const k8 = Math.ceil(k / 8) * 8;
  const rows = p.oh * p.ow;
  const weights = packedWeights(p.packed, m, groups, ocg, k);
  const groupBytes = m.qpack_w_bytes(ocg, k);
  const cols = scratch(rows * k8 * 2);
  const mult = empty([p.oc], { dtype: "float32" });
  try {
    (mult.hostData() as Float32Array).set(conv2dChannelParams(p).mult);
    const xZp = (p.x.qparams as { zeroPoint: number }).zeroPoint;
    const x = addressOf(p.x.storage());
    const bias = p.packed.bias ? addressOf(p.packed.bias) : 0;
    const inv = Math.fround(1 / Math.fround(p.outScale));
    for (let b = 0; b < p.n; b++)
      for (let g = 0; g < groups; g++) {
        const geometry = [p.kh, p.kw, stride[0], stride[1], padding[0], padding[1]];
        const src = x + (b * p.c + g * cg) * p.h * p.w;
        const args = [src, cg, p.h, p.w, ...geometry, dilation[0], dilation[1], p.ow, xZp];
        parallel("qim2col", [...args, addressOf(cols)], rows, NO_SCRATCH, undefined, MODULE_ID);
        parallel(
          "qlinear",
          [
            addressOf(cols),
            weights.address + g * groupBytes,
            rows,
            ocg,
            k8,
            addressOf(mult) + g * ocg * 4,
            bias ? bias + g * ocg * 4 : 0,
            inv,
            p.outZeroPoint,
            addressOf(out) + (b * p.oc + g * ocg) * rows,
            1,
            rows,
          ],
          rows,
          NO_SCRATCH,
          undefined,
          MODULE_ID,
        );
      }
    return result;
  } catch (e) {
    result.dispose();
    throw e;
  } finally {
    cols.dispose();
    mult.dispose();
  }
}

export function qnnpackKernels(): AnyKernelDefinition[] {
  const common = {
    device: "cpu",
    dtypes: ["uint8"],
    // Exact integer sums, each output from one tile: the same bits on any thread count.
    deterministic: true,
    priority: 40,
    enabled: quantizedEngineGate(QNNPACK_ENGINE),
  } as const;
  return [
    {
      ...common,
      op: "quantizedLinear",
      name: "qnnpack-linear",
      supports: qnnpackLinearSupports as (p: never) => true | string,
      run: qnnpackLinear as (p: never) => unknown,
    },
    {
      ...common,
      op: "quantizedConv2d",
      name: "qnnpack-conv2d",
      supports: qnnpackConv2dSupports as (p: never) => true | string,
      run: qnnpackConv2d as (p: never) => unknown,
    },
  ];
}
