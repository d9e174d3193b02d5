/**
 * The nnpack backend: torch.backends.nnpack. Its conv2d kernels run in every runtime with
 * WebAssembly SIMD (browsers included); `backends.nnpack.enabled` (setFlags) gates them.
 */
import { type Conv2dOptions, explain, type Tensor, tensor } from "@backplane/core";
import {
  type BackendDefinition,
  defineBackend,
  type NnpackMembers,
  ops,
} from "@backplane/core/backend";
import { cpuMemory, wasmSimdAvailability } from "@backplane/core/cpu";
import {
  clearTransformCache,
  setTransformCacheEnabled,
  setTransformCacheLimit,
  transformCacheInfo,
} from "./cache.ts";
import { type Algorithm, autoAlgorithm, nnpackKernels } from "./kernels/conv2d.ts";
import { loadQgemm, QNNPACK_ENGINE } from "./qgemm.ts";
import { qnnpackKernels } from "./quantized.ts";
import { loadConv, loadConvSync } from "./wasm.ts";

export const NNPACK_BACKEND = "nnpack";
export const VERSION = "0.1.0";

/** The matmul kernel the GEMM stages would run on now (e.g. "blas-gemm", "wasm-gemm", "reference"). */
function gemmKernel(): string | undefined {
  const a = tensor(new Float32Array(4), { shape: [2, 2] });
  try {
    return explain("matmul", a, a).selected;
  } catch {
    return undefined;
  } finally {
    a.dispose();
  }
}

/** The algorithm the "auto" kernel would run for conv2d(input, weight, opts). */
export function algorithmFor(input: Tensor, weight: Tensor, opts?: Conv2dOptions): Algorithm {
  const p = ops.conv2d.prepare(input, weight, opts);
  try {
    return autoAlgorithm(p);
  } finally {
    // An unbatched [C, H, W] input is prepared as a batch-of-one view, which holds the
    // input's storage: left undisposed, it kept that memory after the input was disposed.
    if (p.input !== input) p.input.dispose();
  }
}

export const nnpackBackend: BackendDefinition = defineBackend({
  name: NNPACK_BACKEND,
  namespaces: ["nnpack"],
  packageName: "@backplane/backend-nnpack",
  devices: ["cpu"],
  version: () => VERSION,
  isAvailable: wasmSimdAvailability,
  async init() {
    if (!loadConvSync()) await loadConv();
    await loadQgemm();
  },
  // backends.quantized.engine = "qnnpack": quantizedLinear in WASM (src/quantized.ts)
  provides: { "quantized.engine": [QNNPACK_ENGINE] },
  reads: ["quantized.engine"],
  capability: () => ({
    isa: "WASM_SIMD128",
    algorithms: ["wt8x8", "wt6x6", "ft8x8", "ft16x16", "direct", "implicit-gemm"],
    sharedMemory: cpuMemory().shared,
    /** Where the GEMM stages go: the matmul kernel the dispatcher picks now. */
    gemm: gemmKernel(),
    transformCache: transformCacheInfo(),
  }),
  kernels: [...nnpackKernels(), ...qnnpackKernels()],
  // The core types these members on backends.nnpack (NnpackMembers): satisfies keeps them so.
  api: {
    nnpack: {
      algorithmFor,
      clearTransformCache,
      transformCacheInfo,
      setTransformCacheLimit,
      setTransformCacheEnabled,
    } satisfies NnpackMembers,
  },
});
