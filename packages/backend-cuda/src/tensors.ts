/** Helpers between core tensors and device memory. */
import { bytesPerElement, DeviceError, getFlag, type Tensor } from "@backplane/core";
import { readEnv } from "@backplane/core/cpu";
import { checkCublasDeterminism, type GemmFlags } from "./kernels/blas/modes.ts";
import { type CudaHandle, deviceIndex } from "./memory.ts";
import { currentRuntime } from "./state.ts";

/**
 * The device address of a tensor's storage (element [0...] is at + offset * itemsize). Kernels
 * hand it to the current runtime's libraries, so memory of a freed storage or of another
 * runtime (one replaced by backends.cuda.reprobe(), whose contexts and memory are gone) is
 * refused here, before any FFI call sees a dangling address.
 */
export function storagePtr(t: Tensor): bigint {
  const h = t.storage.handle as CudaHandle | undefined;
  if (!h || typeof h.block?.ptr !== "bigint")
    throw new DeviceError(`tensor on ${t.device} is not in CUDA memory`);
  if (h.freed)
    throw new DeviceError(
      `tensor on ${t.device}: its storage was freed; it cannot be used any more`,
    );
  if (h.runtime !== currentRuntime())
    throw new DeviceError(
      `tensor on ${t.device} was allocated by a CUDA runtime that has been replaced (backends.cuda.reprobe()); its device memory went with it: move tensors to the CPU before reprobing`,
    );
  return h.block.ptr;
}

/** The device address of a tensor's first element. */
export function dataPtr(t: Tensor): bigint {
  return storagePtr(t) + BigInt(t.offset * bytesPerElement(t.dtype));
}

export function deviceOf(t: Tensor): number {
  return deviceIndex(t.device);
}

/** The GEMM flags as they stand now. */
export function gemmFlags(): GemmFlags {
  return {
    allowTf32: getFlag("cuda.matmul.allowTf32") as boolean,
    float32MatmulPrecision: getFlag(
      "core.float32MatmulPrecision",
    ) as GemmFlags["float32MatmulPrecision"],
    allowFp16ReducedPrecisionReduction: getFlag(
      "cuda.matmul.allowFp16ReducedPrecisionReduction",
    ) as boolean,
    allowBf16ReducedPrecisionReduction: getFlag(
      "cuda.matmul.allowBf16ReducedPrecisionReduction",
    ) as boolean,
  };
}

const warned = new Set<string>();

/** torch's CUBLAS_WORKSPACE_CONFIG rule, applied before any cuBLAS call of an op. */
export function enforceCublasDeterminism(op: string): void {
  const warning = checkCublasDeterminism(
    getFlag("core.deterministic") as boolean,
    getFlag("core.deterministicWarnOnly") as boolean,
    readEnv("CUBLAS_WORKSPACE_CONFIG"),
  );
  if (warning && !warned.has(op)) {
    warned.add(op);
    console.warn(`[backplane] ${op}: ${warning}`);
  }
}
