/**
 * Every status code this package gets back is checked and named: a CUresult, cudaError_t,
 * cublasStatus_t, cufftResult, cusolverStatus_t or cusparseStatus_t that is not success
 * becomes a CudaError carrying the call, the number and its enumerator name.
 */
import { BackplaneError } from "@backplane/core";
import {
  CUBLAS_STATUS_NAMES,
  CUFFT_RESULT_NAMES,
  CUSOLVER_STATUS_NAMES,
  CUSPARSE_STATUS_NAMES,
} from "./native/library-api.ts";
import { CU_RESULT_NAMES, CUDART_ERROR_NAMES } from "./native/status-names.ts";

export type StatusKind = "driver" | "runtime" | "cublas" | "cufft" | "cusolver" | "cusparse";

const TABLES: Record<StatusKind, Readonly<Record<number, string>>> = {
  driver: CU_RESULT_NAMES,
  runtime: CUDART_ERROR_NAMES,
  cublas: CUBLAS_STATUS_NAMES,
  cufft: CUFFT_RESULT_NAMES,
  cusolver: CUSOLVER_STATUS_NAMES,
  cusparse: CUSPARSE_STATUS_NAMES,
};

const TYPES: Record<StatusKind, string> = {
  driver: "CUresult",
  runtime: "cudaError_t",
  cublas: "cublasStatus_t",
  cufft: "cufftResult",
  cusolver: "cusolverStatus_t",
  cusparse: "cusparseStatus_t",
};

/** The enumerator name of a status ("CUDA_ERROR_OUT_OF_MEMORY"), or "unknown CUresult 12345". */
export function statusName(kind: StatusKind, code: number): string {
  return TABLES[kind][code] ?? `unknown ${TYPES[kind]} ${code}`;
}

/** A CUDA library call returned an error status. */
export class CudaError extends BackplaneError {
  /** The function that failed, e.g. "cuMemAlloc_v2". */
  readonly call: string;
  readonly kind: StatusKind;
  /** The status number. */
  readonly status: number;
  /** Its enumerator name. */
  readonly statusName: string;
  constructor(call: string, kind: StatusKind, status: number, description?: string, note = "") {
    const name = statusName(kind, status);
    super(
      kind === "driver" && status === 2 ? "E_CUDA_OOM" : "E_CUDA",
      `${call} failed: ${name} (${status})${description ? `: ${description}` : ""}${note ? `. ${note}` : ""}`,
    );
    this.call = call;
    this.kind = kind;
    this.status = status;
    this.statusName = name;
  }
}

/** The caching allocator could not get memory even after releasing its cache (torch's OutOfMemoryError). */
export class CudaOutOfMemoryError extends BackplaneError {
  readonly device: number;
  readonly requested: number;
  constructor(device: number, requested: number, detail: string) {
    super("E_CUDA_OOM", `CUDA out of memory on cuda:${device}. ${detail}`);
    this.device = device;
    this.requested = requested;
  }
}

/**
 * Deterministic mode is on and CUBLAS_WORKSPACE_CONFIG is not one of the settings that
 * make cuBLAS deterministic (torch raises the same RuntimeError, in the same words).
 */
export class CublasWorkspaceConfigError extends BackplaneError {
  readonly variable = "CUBLAS_WORKSPACE_CONFIG";
  readonly value: string | undefined;
  constructor(value: string | undefined) {
    super(
      "E_NONDETERMINISTIC",
      "Deterministic behavior was enabled with useDeterministicAlgorithms(true), but this operation " +
        "is not deterministic because it uses CuBLAS and you have CUDA >= 10.2. To enable deterministic " +
        "behavior in this case, you must set an environment variable before running your application: " +
        `CUBLAS_WORKSPACE_CONFIG=:4096:8 or CUBLAS_WORKSPACE_CONFIG=:16:8 (it is ${value === undefined ? "unset" : JSON.stringify(value)}). ` +
        "For more information, go to https://docs.nvidia.com/cuda/cublas/index.html#results-reproducibility",
    );
    this.value = value;
  }
}

/** Throws CudaError unless `status` is 0 (success in every CUDA library). */
export function check(
  kind: StatusKind,
  call: string,
  status: number,
  describe?: (code: number) => string | undefined,
): void {
  if (status !== 0) throw new CudaError(call, kind, status, describe?.(status));
}
