/**
 * From torch's flags to cuBLAS settings, as pure functions:
 * - cuda.matmul.allowTf32 / core.float32MatmulPrecision choose the float32 compute type,
 *   CUBLAS_COMPUTE_32F or CUBLAS_COMPUTE_32F_FAST_TF32 (and the matching cublasMath_t);
 * - cuda.matmul.allowFp16/Bf16ReducedPrecisionReduction = false add
 *   CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION (cuBLAS) and restrict cuBLASLt's split-K
 *   reductions to the compute type (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK);
 * - deterministic mode follows torch's CUBLAS_WORKSPACE_CONFIG rule;
 * - the cuBLAS workspace size follows CUBLAS_WORKSPACE_CONFIG as torch reads it.
 */

import { CublasWorkspaceConfigError } from "../../errors.ts";
import { LIBRARY_ENUMS as X } from "../../native/library-api.ts";

export type GemmDtype = "float32" | "float64" | "float16" | "bfloat16";

export interface GemmFlags {
  allowTf32: boolean;
  float32MatmulPrecision: "highest" | "high" | "medium";
  allowFp16ReducedPrecisionReduction: boolean;
  allowBf16ReducedPrecisionReduction: boolean;
}

export interface GemmMode {
  /** cublasComputeType_t */
  computeType: number;
  computeTypeName: string;
  /** cudaDataType_t of A, B and C. */
  dataType: number;
  /** cudaDataType_t of alpha/beta (cuBLASLt's scale type). */
  scaleType: number;
  /** cublasMath_t for cublasSetMathMode (flags OR-ed). */
  mathMode: number;
  mathModeName: string;
  tf32: boolean;
  /** cuBLASLt preference: allowed reduction schemes. */
  reductionSchemeMask: number;
}

export const DATA_TYPE: Record<GemmDtype, number> = {
  float32: X.CUDA_R_32F,
  float64: X.CUDA_R_64F,
  float16: X.CUDA_R_16F,
  bfloat16: X.CUDA_R_16BF,
};

/** Whether float32 GEMMs may use TF32: allowTf32, or a float32 matmul precision below "highest". */
export function tf32Allowed(flags: GemmFlags): boolean {
  return flags.allowTf32 || flags.float32MatmulPrecision !== "highest";
}

/**
 * The cuBLAS settings of a GEMM on `dtype` under `flags`. `forceTf32` is the TF32 kernel's
 * own choice (it is only considered when the precision allows it).
 */
export function gemmMode(dtype: GemmDtype, flags: GemmFlags, forceTf32 = false): GemmMode {
  const all = X.CUBLASLT_REDUCTION_SCHEME_MASK;
  switch (dtype) {
    case "float64":
      return {
        computeType: X.CUBLAS_COMPUTE_64F,
        computeTypeName: "CUBLAS_COMPUTE_64F",
        dataType: X.CUDA_R_64F,
        scaleType: X.CUDA_R_64F,
        mathMode: X.CUBLAS_DEFAULT_MATH,
        mathModeName: "CUBLAS_DEFAULT_MATH",
        tf32: false,
        reductionSchemeMask: all,
      };
    case "float32": {
      const tf32 = forceTf32 || tf32Allowed(flags);
      return {
        computeType: tf32 ? X.CUBLAS_COMPUTE_32F_FAST_TF32 : X.CUBLAS_COMPUTE_32F,
        computeTypeName: tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F",
        dataType: X.CUDA_R_32F,
        scaleType: X.CUDA_R_32F,
        mathMode: tf32 ? X.CUBLAS_TF32_TENSOR_OP_MATH : X.CUBLAS_DEFAULT_MATH,
        mathModeName: tf32 ? "CUBLAS_TF32_TENSOR_OP_MATH" : "CUBLAS_DEFAULT_MATH",
        tf32,
        reductionSchemeMask: all,
      };
    }
    case "float16":
    case "bfloat16": {
      const allowed =
        dtype === "float16"
          ? flags.allowFp16ReducedPrecisionReduction
          : flags.allowBf16ReducedPrecisionReduction;
      return {
        computeType: X.CUBLAS_COMPUTE_32F,
        computeTypeName: "CUBLAS_COMPUTE_32F",
        dataType: DATA_TYPE[dtype],
        scaleType: X.CUDA_R_32F,
        mathMode: allowed
          ? X.CUBLAS_DEFAULT_MATH
          : X.CUBLAS_DEFAULT_MATH | X.CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION,
        mathModeName: allowed
          ? "CUBLAS_DEFAULT_MATH"
          : "CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION",
        tf32: false,
        reductionSchemeMask: allowed
          ? all
          : X.CUBLASLT_REDUCTION_SCHEME_NONE | X.CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
      };
    }
  }
}

/** The two CUBLAS_WORKSPACE_CONFIG values torch accepts in deterministic mode. */
export const DETERMINISTIC_WORKSPACE_CONFIGS = [":4096:8", ":16:8"] as const;

/**
 * torch's rule (Context::alertCuBLASConfigNotDeterministic): with deterministic algorithms on,
 * cuBLAS may only run when CUBLAS_WORKSPACE_CONFIG is ":4096:8" or ":16:8". Returns undefined
 * when fine, the warning text with warnOnly, and throws CublasWorkspaceConfigError otherwise.
 */
export function checkCublasDeterminism(
  deterministic: boolean,
  warnOnly: boolean,
  config: string | undefined,
): string | undefined {
  if (!deterministic) return undefined;
  if (
    config !== undefined &&
    (DETERMINISTIC_WORKSPACE_CONFIGS as readonly string[]).includes(config)
  )
    return undefined;
  const err = new CublasWorkspaceConfigError(config);
  if (warnOnly) return err.message;
  throw err;
}

/**
 * Bytes of the cuBLAS workspace CUBLAS_WORKSPACE_CONFIG asks for (":SIZE_KIB:COUNT" pairs,
 * summed), or torch's default: ":4096:8" on sm_90 and newer, ":4096:2:16:8" before.
 */
export function cublasWorkspaceBytes(config: string | undefined, major: number): number {
  const pairs = config ? [...config.matchAll(/:(\d+):(\d+)/g)] : [];
  if (pairs.length > 0)
    return pairs.reduce((sum, m) => sum + Number(m[1]) * 1024 * Number(m[2]), 0);
  return major >= 9 ? 4096 * 1024 * 8 : 4096 * 1024 * 2 + 16 * 1024 * 8;
}
