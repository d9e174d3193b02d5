/**
 * The driver layer: the raw CUDA entry points every piece of host logic in this package goes
 * through (driver API, cuBLAS, cuBLASLt, cuFFT, cuSOLVER), plus the two host services they
 * need (the address of a host buffer, the driver's description of a status). There are two
 * implementations:
 * - the FFI layer (native/load.ts), which binds libcuda and the math libraries;
 * - the RecordingLayer (recording.ts), which records every call and hands out fake handles
 *   and device pointers, so the host logic (allocator, plan cache, flag translation, kernel
 *   selection, launch packing, error naming) is tested without a GPU.
 */
import type { NativeLibrary } from "@backplane/core/cpu";
import type { DriverSymbols } from "./native/driver-api.ts";
import type {
  CUBLAS_DECL,
  CUBLASLT_DECL,
  CUFFT_DECL,
  CUSOLVER_DECL,
  LibraryName,
} from "./native/library-api.ts";

export type CublasSymbols = NativeLibrary<typeof CUBLAS_DECL>["symbols"];
export type CublasLtSymbols = NativeLibrary<typeof CUBLASLT_DECL>["symbols"];
export type CufftSymbols = NativeLibrary<typeof CUFFT_DECL>["symbols"];
export type CusolverSymbols = NativeLibrary<typeof CUSOLVER_DECL>["symbols"];

/** The math libraries, each loaded or absent. */
export interface MathLibraries {
  cublas?: CublasSymbols;
  cublasLt?: CublasLtSymbols;
  cufft?: CufftSymbols;
  cusolver?: CusolverSymbols;
}

export type MathLibraryName = keyof MathLibraries;

export interface LibraryInfo {
  /** Where it was loaded from. */
  path?: string;
  /** Its version, as the library reports it (e.g. "13.0.0"). */
  version?: string;
  /** Why it is not loaded. */
  reason?: string;
}

export interface CudaLayer {
  readonly kind: "ffi" | "recording";
  /** libcuda's entry points. */
  readonly cu: DriverSymbols;
  /** Loaded math libraries. */
  readonly libs: MathLibraries;
  /** Path, version or the reason it is missing, per library (magma and cusparseLt included). */
  readonly info: Partial<Record<LibraryName, LibraryInfo>>;
  /** The address of a host buffer's first byte (kernel parameter arrays point into host memory). */
  addressOf(view: ArrayBufferView): bigint;
  /** The driver's own description of a CUresult (cuGetErrorString), where it can say. */
  describe(code: number): string | undefined;
}
