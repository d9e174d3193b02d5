/**
 * The qnnpack engine's WASM module (assembly/qgemm.ts) and what its kernels share: the
 * module, scratch tensors of the CPU memory, and a layer's weights
 * packed once and kept in the layer's engine cache.
 */
import { empty, type PackedConv2d, type PackedLinear, type Tensor } from "@backplane/core";
import {
  addressOf,
  loadWasmModule,
  loadWasmModuleSync,
  Scratch,
  type WasmModuleFiles,
} from "@backplane/core/cpu";

export const QNNPACK_ENGINE = "qnnpack";
export const MODULE_ID = "backend-nnpack/qgemm";
/** Engine-cache keys of the two weight packings: 4-channel blocks (qlinear), pairs (qconv_gemm). */
export const BLOCKS_KEY = QNNPACK_ENGINE;
export const PAIRS_KEY = `${QNNPACK_ENGINE}:pairs`;

type Fn = (...args: number[]) => void;
export interface QgemmModule {
  qpack_w_bytes(n: number, k: number): number;
  qpack_w: Fn;
  qpack_x: Fn;
  qlinear: Fn;
  qwpairs_bytes(n: number, k: number): number;
  qpack_wpairs: Fn;
  qcols_bytes(k: number, p: number): number;
  qcol_pairs: Fn;
  qconv_gemm: Fn;
  qdw_buffer_bytes(h: number, ph: number, wpad: number): number;
  qdwconv: Fn;
  qrow_pairs: Fn;
  qtranspose_u8: Fn;
}

const QGEMM_WASM: WasmModuleFiles = {
  id: MODULE_ID,
  threads: new URL("../wasm/qgemm.wasm", import.meta.url),
  plain: new URL("../wasm/qgemm.nothreads.wasm", import.meta.url),
};

let loaded: QgemmModule | undefined;

/** Loads the module (synchronously where the runtime allows). */
export async function loadQgemm(): Promise<void> {
  loaded =
    loadWasmModuleSync<QgemmModule>(QGEMM_WASM) ?? (await loadWasmModule<QgemmModule>(QGEMM_WASM));
}

/** The module, or undefined before it has loaded. */
export const qgemm = (): QgemmModule | undefined => loaded;

/** Why the kernels cannot run before the module has loaded. */
export const NOT_LOADED = "the qgemm WASM module has not loaded (await backends.ready())";

/** For kernels that take no per-thread scratch (parallel() allocates none without `work`). */
export const NO_SCRATCH: Scratch = new Scratch();

/** A scratch tensor of at least `bytes` bytes in the CPU memory (counted in memoryStats). */
export const scratch = (bytes: number): Tensor =>
  empty([Math.max(16, Math.ceil(bytes / 4))], { dtype: "int32" });

/** A layer's weights packed for qgemm: a tensor of the CPU memory, freed with the layer. */
export interface PackedWeights {
  address: number;
  /** Bytes of one group's block. */
  groupBytes: number;
  dispose(): void;
}

/**
 * A layer's weights packed by `pack` (cached in its engine cache under `key`, one per
 * packing): `groups` blocks of `n` output channels by `k` inputs, one after another, each
 * `bytes(n, k)` long.
 */
export function packedWeights(
  layer: PackedLinear | PackedConv2d,
  key: string,
  groups: number,
  n: number,
  k: number,
  bytes: (n: number, k: number) => number,
  pack: (w: number, n: number, k: number, zps: number, dst: number) => void,
): PackedWeights {
  const cached = layer.engineCache.get(key) as PackedWeights | undefined;
  if (cached) return cached;
  const w = layer.weight;
  const groupBytes = bytes(n, k);
  const packed = scratch(groups * groupBytes);
  const zps = scratch(groups * n * 4);
  try {
    const p = w.qparams;
    const z = zps.hostData() as Int32Array;
    if (p.scheme === "per_tensor_affine") z.fill(p.zeroPoint, 0, groups * n);
    else z.set(p.zeroPoints);
    for (let g = 0; g < groups; g++)
      pack(
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
  const entry: PackedWeights = {
    address: addressOf(packed),
    groupBytes,
    dispose: () => packed.dispose(),
  };
  layer.engineCache.set(key, entry);
  return entry;
}
