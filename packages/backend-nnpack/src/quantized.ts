/**
 * The "qnnpack" quantized engine (backends.quantized.engine), as PyTorch names its
 * mobile int8 library: quantizedLinear in WASM SIMD128 (assembly/qgemm.ts), so it runs in
 * every runtime, browsers included. The weights are packed once per layer (int16, zero
 * points subtracted, in 4-channel blocks) and kept in the layer's engine cache; a call
 * widens the activations the same way, sums exactly with i32x4.dot_i16x8_s and
 * requantizes with the core's float32 formula, rows split over the openmp pool.
 */
import { empty, type PackedLinear, QTensor, type Tensor } from "@backplane/core";
import {
  type AnyKernelDefinition,
  linearChannelParams,
  loadWasmModule,
  loadWasmModuleSync,
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
}

const QGEMM_WASM: WasmModuleFiles = {
  id: MODULE_ID,
  threads: new URL("../wasm/qgemm.wasm", import.meta.url),
  plain: new URL("../wasm/qgemm.nothreads.wasm", import.meta.url),
};

let qgemm: QgemmModule | undefined;
/** The kernels take no per-thread scratch (parallel() allocates none without `work`). */
const NO_SCRATCH = new Scratch();

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

function packedWeights(layer: PackedLinear, m: QgemmModule): PackedWeights {
  const cached = layer.engineCache.get(QNNPACK_ENGINE) as PackedWeights | undefined;
  if (cached) return cached;
  const w = layer.weight;
  const n = layer.outFeatures;
  const k = layer.inFeatures;
  const packed = scratch(m.qpack_w_bytes(n, k));
  const zps = scratch(n * 4);
  try {
    const p = w.qparams;
    const z = zps.hostData() as Int32Array;
    if (p.scheme === "per_tensor_affine") z.fill(p.zeroPoint, 0, n);
    else z.set(p.zeroPoints);
    m.qpack_w(addressOf(w.storage()), n, k, addressOf(zps), addressOf(packed));
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
  const weights = packedWeights(p.packed, m);
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

export function qnnpackKernels(): AnyKernelDefinition[] {
  return [
    {
      op: "quantizedLinear",
      name: "qnnpack-linear",
      device: "cpu",
      dtypes: ["uint8"],
      // Exact integer sums, each output from one tile: the same bits on any thread count.
      deterministic: true,
      priority: 40,
      enabled: quantizedEngineGate(QNNPACK_ENGINE),
      supports: qnnpackLinearSupports as (p: never) => true | string,
      run: qnnpackLinear as (p: never) => unknown,
    },
  ];
}
