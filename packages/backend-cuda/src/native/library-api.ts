/**
 * THE table of every cuBLAS, cuBLASLt, cuFFT, cuSOLVER, cuSPARSELt and MAGMA function this
 * package binds, with the types and enumerators it uses. Each prototype was transcribed from
 * NVIDIA's documentation (the section it comes from stands beside it) before the libraries'
 * headers were installable; test/library-headers.test.ts now holds every row, enumerator and
 * status name to the real headers of NVIDIA's pip wheels, and loads the real libraries
 * (MAGMA, which has no wheel, stays checked against its documentation only).
 * test/library-api.test.ts still checks each row against its documented prototype: name (cublas_v2.h's _v2 exports), argument count, the size class
 * of every argument and of the result (pointers 64-bit, size_t usize, int64_t i64, enums
 * 4-byte ints), handle types being pointers (cufftHandle is the documented int), and the
 * documented enumerator numbers.
 *
 * Conventions are those of driver-api.ts: handles, device pointers and stream arguments are
 * carried as addresses ("usize"); host pointers (out-parameters, host scalars) are "buffer".
 */
import {
  defineLibrary,
  type FfiType,
  ffiCall,
  ffiStatus,
  type SymbolDecl,
} from "@backplane/core/cpu";

export type LibraryName = "cublas" | "cublasLt" | "cufft" | "cusolver" | "cusparseLt" | "magma";

export interface ApiEntry {
  readonly lib: LibraryName;
  /** The C prototype as the documentation prints it (macro names, e.g. cublasCreate). */
  readonly c: string;
  /** Documentation section › subsection — URL path on docs.nvidia.com (or the project's site). */
  readonly doc: string;
  readonly args: readonly FfiType[];
  readonly returns: FfiType;
  readonly optional?: boolean;
}

const U = "usize" as const; // handle / device pointer / stream, carried as an address
const B = "buffer" as const; // host pointer
const I = "i32" as const; // int, enum, cufftHandle

/** An entry returning a status ("i32"). */
const e = <const L extends LibraryName, const A extends readonly FfiType[]>(
  lib: L,
  c: string,
  doc: string,
  args: A,
) => ({ lib, c, doc, ...ffiStatus(args) });

/** An entry with another result type. */
const er = <
  const L extends LibraryName,
  const A extends readonly FfiType[],
  const R extends FfiType,
>(
  lib: L,
  c: string,
  doc: string,
  args: A,
  returns: R,
) => ({ lib, c, doc, ...ffiCall(args, returns) });

const CUBLAS = "cuBLAS › cuBLAS API";
const LT = "cuBLAS › cuBLASLt API › cuBLASLt API Reference";
const FFT = "cuFFT › cuFFT API Reference";
const SOLVER = "cuSOLVER › cuSolverDN: Dense LAPACK Function Reference";

export const LIBRARY_API = {
  // ---- cuBLAS (libcublas.so.13 / .12) -------------------------------------------------
  cublasCreate_v2: e(
    "cublas",
    "cublasStatus_t cublasCreate(cublasHandle_t *handle)",
    `${CUBLAS} › cuBLAS Helper Function Reference › cublasCreate() — /cuda/cublas/#cublascreate`,
    [B],
  ),
  cublasDestroy_v2: e(
    "cublas",
    "cublasStatus_t cublasDestroy(cublasHandle_t handle)",
    `${CUBLAS} › cuBLAS Helper Function Reference › cublasDestroy() — /cuda/cublas/#cublasdestroy`,
    [U],
  ),
  cublasGetProperty: e(
    "cublas",
    "cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)",
    `${CUBLAS} › cuBLAS Helper Function Reference › cublasGetProperty() — /cuda/cublas/#cublasgetproperty`,
    [I, B],
  ),
  cublasSetStream_v2: e(
    "cublas",
    "cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t streamId)",
    `${CUBLAS} › cuBLAS Helper Function Reference › cublasSetStream() — /cuda/cublas/#cublassetstream`,
    [U, U],
  ),
  cublasSetWorkspace_v2: e(
    "cublas",
    "cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t workspaceSizeInBytes)",
    `${CUBLAS} › cuBLAS Helper Function Reference › cublasSetWorkspace() — /cuda/cublas/#cublassetworkspace`,
    [U, U, "usize"],
  ),
  cublasSetMathMode: e(
    "cublas",
    "cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)",
    `${CUBLAS} › cuBLAS Helper Function Reference › cublasSetMathMode() — /cuda/cublas/#cublassetmathmode`,
    [U, I],
  ),
  cublasGemmEx: e(
    "cublas",
    "cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A, cudaDataType_t Atype, int lda, const void *B, cudaDataType_t Btype, int ldb, const void *beta, void *C, cudaDataType_t Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo)",
    `${CUBLAS} › BLAS-like Extension › cublasGemmEx() — /cuda/cublas/#cublasgemmex`,
    [U, I, I, I, I, I, B, U, I, I, U, I, I, B, U, I, I, I, I],
  ),
  cublasGemmStridedBatchedEx: e(
    "cublas",
    "cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A, cudaDataType_t Atype, int lda, long long int strideA, const void *B, cudaDataType_t Btype, int ldb, long long int strideB, const void *beta, void *C, cudaDataType_t Ctype, int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)",
    `${CUBLAS} › BLAS-like Extension › cublasGemmStridedBatchedEx() — /cuda/cublas/#cublasgemmstridedbatchedex`,
    [U, I, I, I, I, I, B, U, I, I, "i64", U, I, I, "i64", B, U, I, I, "i64", I, I, I],
  ),
  cublasGemmBatchedEx: e(
    "cublas",
    "cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *const Aarray[], cudaDataType_t Atype, int lda, const void *const Barray[], cudaDataType_t Btype, int ldb, const void *beta, void *const Carray[], cudaDataType_t Ctype, int ldc, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)",
    `${CUBLAS} › BLAS-like Extension › cublasGemmBatchedEx() — /cuda/cublas/#cublasgemmbatchedex`,
    [U, I, I, I, I, I, B, U, I, I, U, I, I, B, U, I, I, I, I, I],
  ),

  // ---- cuBLASLt (libcublasLt.so.13 / .12) ---------------------------------------------
  cublasLtCreate: e(
    "cublasLt",
    "cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle)",
    `${LT} › cublasLtCreate() — /cuda/cublas/#cublasltcreate`,
    [B],
  ),
  cublasLtDestroy: e(
    "cublasLt",
    "cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)",
    `${LT} › cublasLtDestroy() — /cuda/cublas/#cublasltdestroy`,
    [U],
  ),
  cublasLtGetVersion: er(
    "cublasLt",
    "size_t cublasLtGetVersion(void)",
    `${LT} › cublasLtGetVersion() — /cuda/cublas/#cublasltgetversion`,
    [],
    "usize",
  ),
  cublasLtMatmulDescCreate: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc, cublasComputeType_t computeType, cudaDataType_t scaleType)",
    `${LT} › cublasLtMatmulDescCreate() — /cuda/cublas/#cublasltmatmuldesccreate`,
    [B, I, I],
  ),
  cublasLtMatmulDescDestroy: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)",
    `${LT} › cublasLtMatmulDescDestroy() — /cuda/cublas/#cublasltmatmuldescdestroy`,
    [U],
  ),
  cublasLtMatmulDescSetAttribute: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void *buf, size_t sizeInBytes)",
    `${LT} › cublasLtMatmulDescSetAttribute() — /cuda/cublas/#cublasltmatmuldescsetattribute`,
    [U, I, B, "usize"],
  ),
  cublasLtMatrixLayoutCreate: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld)",
    `${LT} › cublasLtMatrixLayoutCreate() — /cuda/cublas/#cublasltmatrixlayoutcreate`,
    [B, I, "u64", "u64", "i64"],
  ),
  cublasLtMatrixLayoutDestroy: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)",
    `${LT} › cublasLtMatrixLayoutDestroy() — /cuda/cublas/#cublasltmatrixlayoutdestroy`,
    [U],
  ),
  cublasLtMatrixLayoutSetAttribute: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr, const void *buf, size_t sizeInBytes)",
    `${LT} › cublasLtMatrixLayoutSetAttribute() — /cuda/cublas/#cublasltmatrixlayoutsetattribute`,
    [U, I, B, "usize"],
  ),
  cublasLtMatmulPreferenceCreate: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)",
    `${LT} › cublasLtMatmulPreferenceCreate() — /cuda/cublas/#cublasltmatmulpreferencecreate`,
    [B],
  ),
  cublasLtMatmulPreferenceDestroy: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)",
    `${LT} › cublasLtMatmulPreferenceDestroy() — /cuda/cublas/#cublasltmatmulpreferencedestroy`,
    [U],
  ),
  cublasLtMatmulPreferenceSetAttribute: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void *buf, size_t sizeInBytes)",
    `${LT} › cublasLtMatmulPreferenceSetAttribute() — /cuda/cublas/#cublasltmatmulpreferencesetattribute`,
    [U, I, B, "usize"],
  ),
  cublasLtMatmulAlgoGetHeuristic: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference, int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount)",
    `${LT} › cublasLtMatmulAlgoGetHeuristic() — /cuda/cublas/#cublasltmatmulalgogetheuristic`,
    [U, U, U, U, U, U, U, I, B, B],
  ),
  cublasLtMatmul: e(
    "cublasLt",
    "cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream)",
    `${LT} › cublasLtMatmul() — /cuda/cublas/#cublasltmatmul`,
    [U, U, B, U, U, U, U, B, U, U, U, U, B, U, "usize", U],
  ),

  // ---- cuFFT (libcufft.so.12 for CUDA 13 / .11 for CUDA 12) ---------------------------
  cufftCreate: e(
    "cufft",
    "cufftResult cufftCreate(cufftHandle *plan)",
    `${FFT} › Extensible Plans › cufftCreate() — /cuda/cufft/#cufftcreate`,
    [B],
  ),
  cufftDestroy: e(
    "cufft",
    "cufftResult cufftDestroy(cufftHandle plan)",
    `${FFT} › cufftDestroy() — /cuda/cufft/#cufftdestroy`,
    [I],
  ),
  cufftGetVersion: e(
    "cufft",
    "cufftResult cufftGetVersion(int *version)",
    `${FFT} › cufftGetVersion() — /cuda/cufft/#cufftgetversion`,
    [B],
  ),
  cufftSetAutoAllocation: e(
    "cufft",
    "cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate)",
    `${FFT} › cuFFT Plan Properties › cufftSetAutoAllocation() — /cuda/cufft/#cufftsetautoallocation`,
    [I, I],
  ),
  cufftMakePlanMany: e(
    "cufft",
    "cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int *n, int *inembed, int istride, int idist, int *onembed, int ostride, int odist, cufftType type, int batch, size_t *workSize)",
    `${FFT} › Extensible Plans › cufftMakePlanMany() — /cuda/cufft/#cufftmakeplanmany`,
    [I, I, B, B, I, I, B, I, I, I, I, B],
  ),
  cufftSetWorkArea: e(
    "cufft",
    "cufftResult cufftSetWorkArea(cufftHandle plan, void *workArea)",
    `${FFT} › cuFFT Plan Properties › cufftSetWorkArea() — /cuda/cufft/#cufftsetworkarea`,
    [I, U],
  ),
  cufftSetStream: e(
    "cufft",
    "cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream)",
    `${FFT} › cufftSetStream() — /cuda/cufft/#cufftsetstream`,
    [I, U],
  ),
  cufftExecC2C: e(
    "cufft",
    "cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *idata, cufftComplex *odata, int direction)",
    `${FFT} › cuFFT Execution › cufftExecC2C() and cufftExecZ2Z() — /cuda/cufft/#cufftexecc2c-and-cufftexecz2z`,
    [I, U, U, I],
  ),
  cufftExecZ2Z: e(
    "cufft",
    "cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex *idata, cufftDoubleComplex *odata, int direction)",
    `${FFT} › cuFFT Execution › cufftExecC2C() and cufftExecZ2Z() — /cuda/cufft/#cufftexecc2c-and-cufftexecz2z`,
    [I, U, U, I],
  ),
  cufftExecR2C: e(
    "cufft",
    "cufftResult cufftExecR2C(cufftHandle plan, cufftReal *idata, cufftComplex *odata)",
    `${FFT} › cuFFT Execution › cufftExecR2C() and cufftExecD2Z() — /cuda/cufft/#cufftexecr2c-and-cufftexecd2z`,
    [I, U, U],
  ),
  cufftExecD2Z: e(
    "cufft",
    "cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal *idata, cufftDoubleComplex *odata)",
    `${FFT} › cuFFT Execution › cufftExecR2C() and cufftExecD2Z() — /cuda/cufft/#cufftexecr2c-and-cufftexecd2z`,
    [I, U, U],
  ),
  cufftExecC2R: e(
    "cufft",
    "cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *idata, cufftReal *odata)",
    `${FFT} › cuFFT Execution › cufftExecC2R() and cufftExecZ2D() — /cuda/cufft/#cufftexecc2r-and-cufftexecz2d`,
    [I, U, U],
  ),
  cufftExecZ2D: e(
    "cufft",
    "cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex *idata, cufftDoubleReal *odata)",
    `${FFT} › cuFFT Execution › cufftExecC2R() and cufftExecZ2D() — /cuda/cufft/#cufftexecc2r-and-cufftexecz2d`,
    [I, U, U],
  ),

  // ---- cuSOLVER dense (libcusolver.so.12 for CUDA 13 / .11 for CUDA 12) ---------------
  cusolverDnCreate: e(
    "cusolver",
    "cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *handle)",
    "cuSOLVER › cuSolverDN: Dense LAPACK Function Reference › Helper Function Reference › cusolverDnCreate() — /cuda/cusolver/#cusolverdncreate",
    [B],
  ),
  cusolverDnDestroy: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle)",
    "cuSOLVER › cuSolverDN: Dense LAPACK Function Reference › Helper Function Reference › cusolverDnDestroy() — /cuda/cusolver/#cusolverdndestroy",
    [U],
  ),
  cusolverDnSetStream: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId)",
    "cuSOLVER › cuSolverDN: Dense LAPACK Function Reference › Helper Function Reference › cusolverDnSetStream() — /cuda/cusolver/#cusolverdnsetstream",
    [U, U],
  ),
  cusolverGetProperty: e(
    "cusolver",
    "cusolverStatus_t cusolverGetProperty(libraryPropertyType type, int *value)",
    "cuSOLVER › cuSOLVER Types Reference › cusolverGetProperty() — /cuda/cusolver/#cusolvergetproperty",
    [I, B],
  ),
  cusolverDnSpotrf_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, float *A, int lda, int *Lwork)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>potrf() — /cuda/cusolver/#cusolverdn-t-potrf`,
    [U, I, I, U, I, B],
  ),
  cusolverDnDpotrf_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDpotrf_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A, int lda, int *Lwork)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>potrf() — /cuda/cusolver/#cusolverdn-t-potrf`,
    [U, I, I, U, I, B],
  ),
  cusolverDnSpotrf: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, float *A, int lda, float *Workspace, int Lwork, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>potrf() — /cuda/cusolver/#cusolverdn-t-potrf`,
    [U, I, I, U, I, U, I, U],
  ),
  cusolverDnDpotrf: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDpotrf(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A, int lda, double *Workspace, int Lwork, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>potrf() — /cuda/cusolver/#cusolverdn-t-potrf`,
    [U, I, I, U, I, U, I, U],
  ),
  cusolverDnSgetrf_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSgetrf_bufferSize(cusolverDnHandle_t handle, int m, int n, float *A, int lda, int *Lwork)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>getrf() — /cuda/cusolver/#cusolverdn-t-getrf`,
    [U, I, I, U, I, B],
  ),
  cusolverDnDgetrf_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDgetrf_bufferSize(cusolverDnHandle_t handle, int m, int n, double *A, int lda, int *Lwork)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>getrf() — /cuda/cusolver/#cusolverdn-t-getrf`,
    [U, I, I, U, I, B],
  ),
  cusolverDnSgetrf: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSgetrf(cusolverDnHandle_t handle, int m, int n, float *A, int lda, float *Workspace, int *devIpiv, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>getrf() — /cuda/cusolver/#cusolverdn-t-getrf`,
    [U, I, I, U, I, U, U, U],
  ),
  cusolverDnDgetrf: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDgetrf(cusolverDnHandle_t handle, int m, int n, double *A, int lda, double *Workspace, int *devIpiv, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>getrf() — /cuda/cusolver/#cusolverdn-t-getrf`,
    [U, I, I, U, I, U, U, U],
  ),
  cusolverDnSgetrs: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSgetrs(cusolverDnHandle_t handle, cublasOperation_t trans, int n, int nrhs, const float *A, int lda, const int *devIpiv, float *B, int ldb, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>getrs() — /cuda/cusolver/#cusolverdn-t-getrs`,
    [U, I, I, I, U, I, U, U, I, U],
  ),
  cusolverDnDgetrs: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDgetrs(cusolverDnHandle_t handle, cublasOperation_t trans, int n, int nrhs, const double *A, int lda, const int *devIpiv, double *B, int ldb, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>getrs() — /cuda/cusolver/#cusolverdn-t-getrs`,
    [U, I, I, I, U, I, U, U, I, U],
  ),
  cusolverDnSgeqrf_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSgeqrf_bufferSize(cusolverDnHandle_t handle, int m, int n, float *A, int lda, int *lwork)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>geqrf() — /cuda/cusolver/#cusolverdn-t-geqrf`,
    [U, I, I, U, I, B],
  ),
  cusolverDnDgeqrf_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDgeqrf_bufferSize(cusolverDnHandle_t handle, int m, int n, double *A, int lda, int *lwork)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>geqrf() — /cuda/cusolver/#cusolverdn-t-geqrf`,
    [U, I, I, U, I, B],
  ),
  cusolverDnSgeqrf: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSgeqrf(cusolverDnHandle_t handle, int m, int n, float *A, int lda, float *TAU, float *Workspace, int Lwork, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>geqrf() — /cuda/cusolver/#cusolverdn-t-geqrf`,
    [U, I, I, U, I, U, U, I, U],
  ),
  cusolverDnDgeqrf: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDgeqrf(cusolverDnHandle_t handle, int m, int n, double *A, int lda, double *TAU, double *Workspace, int Lwork, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>geqrf() — /cuda/cusolver/#cusolverdn-t-geqrf`,
    [U, I, I, U, I, U, U, I, U],
  ),
  cusolverDnSorgqr_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k, const float *A, int lda, const float *tau, int *lwork)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>orgqr() — /cuda/cusolver/#cusolverdn-t-orgqr`,
    [U, I, I, I, U, I, U, B],
  ),
  cusolverDnDorgqr_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k, const double *A, int lda, const double *tau, int *lwork)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>orgqr() — /cuda/cusolver/#cusolverdn-t-orgqr`,
    [U, I, I, I, U, I, U, B],
  ),
  cusolverDnSorgqr: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSorgqr(cusolverDnHandle_t handle, int m, int n, int k, float *A, int lda, const float *tau, float *work, int lwork, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>orgqr() — /cuda/cusolver/#cusolverdn-t-orgqr`,
    [U, I, I, I, U, I, U, U, I, U],
  ),
  cusolverDnDorgqr: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDorgqr(cusolverDnHandle_t handle, int m, int n, int k, double *A, int lda, const double *tau, double *work, int lwork, int *devInfo)",
    `${SOLVER} › Dense Linear Solver Reference › cusolverDn<t>orgqr() — /cuda/cusolver/#cusolverdn-t-orgqr`,
    [U, I, I, I, U, I, U, U, I, U],
  ),
  cusolverDnSsyevd_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSsyevd_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, const float *A, int lda, const float *W, int *lwork)",
    `${SOLVER} › Dense Eigenvalue Solver Reference › cusolverDn<t>syevd() — /cuda/cusolver/#cusolverdn-t-syevd`,
    [U, I, I, I, U, I, U, B],
  ),
  cusolverDnDsyevd_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDsyevd_bufferSize(cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, const double *A, int lda, const double *W, int *lwork)",
    `${SOLVER} › Dense Eigenvalue Solver Reference › cusolverDn<t>syevd() — /cuda/cusolver/#cusolverdn-t-syevd`,
    [U, I, I, I, U, I, U, B],
  ),
  cusolverDnSsyevd: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSsyevd(cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, float *A, int lda, float *W, float *work, int lwork, int *devInfo)",
    `${SOLVER} › Dense Eigenvalue Solver Reference › cusolverDn<t>syevd() — /cuda/cusolver/#cusolverdn-t-syevd`,
    [U, I, I, I, U, I, U, U, I, U],
  ),
  cusolverDnDsyevd: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDsyevd(cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, double *A, int lda, double *W, double *work, int lwork, int *devInfo)",
    `${SOLVER} › Dense Eigenvalue Solver Reference › cusolverDn<t>syevd() — /cuda/cusolver/#cusolverdn-t-syevd`,
    [U, I, I, I, U, I, U, U, I, U],
  ),
  cusolverDnSgesvd_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSgesvd_bufferSize(cusolverDnHandle_t handle, int m, int n, int *lwork)",
    `${SOLVER} › Dense Eigenvalue Solver Reference › cusolverDn<t>gesvd() — /cuda/cusolver/#cusolverdn-t-gesvd`,
    [U, I, I, B],
  ),
  cusolverDnDgesvd_bufferSize: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDgesvd_bufferSize(cusolverDnHandle_t handle, int m, int n, int *lwork)",
    `${SOLVER} › Dense Eigenvalue Solver Reference › cusolverDn<t>gesvd() — /cuda/cusolver/#cusolverdn-t-gesvd`,
    [U, I, I, B],
  ),
  cusolverDnSgesvd: e(
    "cusolver",
    "cusolverStatus_t cusolverDnSgesvd(cusolverDnHandle_t handle, signed char jobu, signed char jobvt, int m, int n, float *A, int lda, float *S, float *U, int ldu, float *VT, int ldvt, float *work, int lwork, float *rwork, int *devInfo)",
    `${SOLVER} › Dense Eigenvalue Solver Reference › cusolverDn<t>gesvd() — /cuda/cusolver/#cusolverdn-t-gesvd`,
    [U, "i8", "i8", I, I, U, I, U, U, I, U, I, U, I, U, U],
  ),
  cusolverDnDgesvd: e(
    "cusolver",
    "cusolverStatus_t cusolverDnDgesvd(cusolverDnHandle_t handle, signed char jobu, signed char jobvt, int m, int n, double *A, int lda, double *S, double *U, int ldu, double *VT, int ldvt, double *work, int lwork, double *rwork, int *devInfo)",
    `${SOLVER} › Dense Eigenvalue Solver Reference › cusolverDn<t>gesvd() — /cuda/cusolver/#cusolverdn-t-gesvd`,
    [U, "i8", "i8", I, I, U, I, U, U, I, U, I, U, I, U, U],
  ),

  // ---- cuSPARSELt (libcusparseLt.so.0): only its version, for backends.cusparselt ----
  cusparseLtGetProperty: e(
    "cusparseLt",
    "cusparseStatus_t cusparseLtGetProperty(libraryPropertyType propertyType, int *value)",
    "cuSPARSELt › cuSPARSELt Functions › Library Management Functions › cusparseLtGetProperty — /cuda/cusparselt/functions.html#cusparseltgetproperty",
    [I, B],
  ),

  // ---- MAGMA (libmagma.so): probed for preferredLinalgLibrary("magma") only ----------
  magma_version: er(
    "magma",
    "void magma_version(magma_int_t *major, magma_int_t *minor, magma_int_t *micro)",
    "MAGMA › Utilities › magma_version — icl.utk.edu/projectsfiles/magma/doxygen/group__magma__util.html",
    [B, B, B],
    "void",
  ),
} as const satisfies Record<string, ApiEntry>;

export type LibrarySymbol = keyof typeof LIBRARY_API;

/**
 * cublas_v2.h exports the "new" cuBLAS API under _v2 names (cuBLAS › Using the cuBLAS API ›
 * New and Legacy cuBLAS API — /cuda/cublas/#new-and-legacy-cublas-api): the documented
 * names on the left are macros for the symbols on the right. The Ex functions have no _v2.
 */
export const CUBLAS_V2_EXPORTS: Readonly<Record<string, string>> = {
  cublasCreate: "cublasCreate_v2",
  cublasDestroy: "cublasDestroy_v2",
  cublasSetStream: "cublasSetStream_v2",
  cublasSetWorkspace: "cublasSetWorkspace_v2",
  cublasGetVersion: "cublasGetVersion_v2",
};

type Decl<L extends LibraryName> = {
  -readonly [K in LibrarySymbol as (typeof LIBRARY_API)[K]["lib"] extends L ? K : never]: {
    args: (typeof LIBRARY_API)[K]["args"];
    returns: (typeof LIBRARY_API)[K]["returns"];
    optional: boolean;
  };
};

function declFor<L extends LibraryName>(lib: L): Decl<L> {
  const out: Record<string, SymbolDecl> = {};
  for (const [name, entry] of Object.entries(LIBRARY_API) as [string, ApiEntry][]) {
    if (entry.lib === lib)
      out[name] = { args: entry.args, returns: entry.returns, optional: entry.optional ?? false };
  }
  return defineLibrary(out) as Decl<L>;
}

export const CUBLAS_DECL = declFor("cublas");
export const CUBLASLT_DECL = declFor("cublasLt");
export const CUFFT_DECL = declFor("cufft");
export const CUSOLVER_DECL = declFor("cusolver");
export const CUSPARSELT_DECL = declFor("cusparseLt");
export const MAGMA_DECL = declFor("magma");

/**
 * The types the prototypes above use that no installed header defines, as the
 * documentation defines them ("handle" types must be pointers).
 */
export const LIBRARY_TYPES: Readonly<
  Record<string, { c: string; kind: "handle" | "int-handle" | "enum" | "struct"; doc: string }>
> = {
  cublasHandle_t: {
    c: "struct cublasContext *",
    kind: "handle",
    doc: `${CUBLAS} › cuBLAS Datatypes Reference › cublasHandle_t — /cuda/cublas/#cublashandle-t`,
  },
  cublasLtHandle_t: {
    c: "struct cublasLtContext *",
    kind: "handle",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtHandle_t — /cuda/cublas/#cublaslthandle-t`,
  },
  cublasLtMatmulDesc_t: {
    c: "cublasLtMatmulDescOpaque_t *",
    kind: "handle",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtMatmulDesc_t — /cuda/cublas/#cublasltmatmuldesc-t`,
  },
  cublasLtMatrixLayout_t: {
    c: "cublasLtMatrixLayoutOpaque_t *",
    kind: "handle",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtMatrixLayout_t — /cuda/cublas/#cublasltmatrixlayout-t`,
  },
  cublasLtMatmulPreference_t: {
    c: "cublasLtMatmulPreferenceOpaque_t *",
    kind: "handle",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtMatmulPreference_t — /cuda/cublas/#cublasltmatmulpreference-t`,
  },
  cusolverDnHandle_t: {
    c: "struct cusolverDnContext *",
    kind: "handle",
    doc: "cuSOLVER › cuSolverDN Types › cusolverDnHandle_t — /cuda/cusolver/#cusolverdnhandle-t",
  },
  cudaStream_t: {
    c: "struct CUstream_st *",
    kind: "handle",
    doc: "CUDA Runtime API › Data types › cudaStream_t — /cuda/cuda-runtime-api/group__CUDART__TYPES.html",
  },
  cufftHandle: {
    c: "int",
    kind: "int-handle",
    doc: `${FFT} › cuFFT Types › cufftHandle ("a handle type used to store and access cuFFT plans": typedef int) — /cuda/cufft/#cufft-types`,
  },
  cublasLtMatmulAlgo_t: {
    c: "struct",
    kind: "struct",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtMatmulAlgo_t (uint64_t data[8]) — /cuda/cublas/#cublasltmatmulalgo-t`,
  },
  cublasLtMatmulHeuristicResult_t: {
    c: "struct",
    kind: "struct",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtMatmulHeuristicResult_t — /cuda/cublas/#cublasltmatmulheuristicresult-t`,
  },
  cublasStatus_t: {
    c: "enum",
    kind: "enum",
    doc: `${CUBLAS} › cuBLAS Datatypes Reference › cublasStatus_t — /cuda/cublas/#cublasstatus-t`,
  },
  cublasOperation_t: {
    c: "enum",
    kind: "enum",
    doc: `${CUBLAS} › cuBLAS Datatypes Reference › cublasOperation_t — /cuda/cublas/#cublasoperation-t`,
  },
  cublasFillMode_t: {
    c: "enum",
    kind: "enum",
    doc: `${CUBLAS} › cuBLAS Datatypes Reference › cublasFillMode_t — /cuda/cublas/#cublasfillmode-t`,
  },
  cublasMath_t: {
    c: "enum",
    kind: "enum",
    doc: `${CUBLAS} › cuBLAS Datatypes Reference › cublasMath_t — /cuda/cublas/#cublasmath-t`,
  },
  cublasComputeType_t: {
    c: "enum",
    kind: "enum",
    doc: `${CUBLAS} › cuBLAS Datatypes Reference › cublasComputeType_t — /cuda/cublas/#cublascomputetype-t`,
  },
  cublasGemmAlgo_t: {
    c: "enum",
    kind: "enum",
    doc: `${CUBLAS} › cuBLAS Datatypes Reference › cublasGemmAlgo_t — /cuda/cublas/#cublasgemmalgo-t`,
  },
  cublasLtMatmulDescAttributes_t: {
    c: "enum",
    kind: "enum",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtMatmulDescAttributes_t — /cuda/cublas/#cublasltmatmuldescattributes-t`,
  },
  cublasLtMatrixLayoutAttribute_t: {
    c: "enum",
    kind: "enum",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtMatrixLayoutAttribute_t — /cuda/cublas/#cublasltmatrixlayoutattribute-t`,
  },
  cublasLtMatmulPreferenceAttributes_t: {
    c: "enum",
    kind: "enum",
    doc: `${LT} › cuBLASLt Datatypes Reference › cublasLtMatmulPreferenceAttributes_t — /cuda/cublas/#cublasltmatmulpreferenceattributes-t`,
  },
  cufftResult: {
    c: "enum",
    kind: "enum",
    doc: `${FFT} › cuFFT Types › cufftResult — /cuda/cufft/#cufftresult`,
  },
  cufftType: {
    c: "enum",
    kind: "enum",
    doc: `${FFT} › cuFFT Types › Parameter cufftType — /cuda/cufft/#parameter-cuffttype`,
  },
  cusolverStatus_t: {
    c: "enum",
    kind: "enum",
    doc: "cuSOLVER › cuSOLVER Types Reference › cusolverStatus_t — /cuda/cusolver/#cusolverstatus-t",
  },
  cusolverEigMode_t: {
    c: "enum",
    kind: "enum",
    doc: "cuSOLVER › cuSOLVER Types Reference › cusolverEigMode_t — /cuda/cusolver/#cusolvereigmode-t",
  },
  cusparseStatus_t: {
    c: "enum",
    kind: "enum",
    doc: "cuSPARSELt › cuSPARSELt Data Types › cusparseStatus_t — /cuda/cusparselt/types.html#cusparsestatus-t",
  },
  magma_int_t: {
    c: "int",
    kind: "enum",
    doc: "MAGMA › magma_types.h: magma_int_t is int (LP64 build; the ILP64 build is int64_t) — icl.utk.edu/projectsfiles/magma/doxygen/",
  },
};

/**
 * Enumerators with their documented numbers. cudaDataType_t and libraryPropertyType live in
 * library_types.h, which is installed: the test checks those against the header too.
 */
export const LIBRARY_ENUMS = {
  // cublasOperation_t — /cuda/cublas/#cublasoperation-t
  CUBLAS_OP_N: 0,
  CUBLAS_OP_T: 1,
  // cublasFillMode_t — /cuda/cublas/#cublasfillmode-t
  CUBLAS_FILL_MODE_LOWER: 0,
  CUBLAS_FILL_MODE_UPPER: 1,
  // cublasMath_t — /cuda/cublas/#cublasmath-t
  CUBLAS_DEFAULT_MATH: 0,
  CUBLAS_PEDANTIC_MATH: 2,
  CUBLAS_TF32_TENSOR_OP_MATH: 3,
  CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: 16,
  // cublasComputeType_t — /cuda/cublas/#cublascomputetype-t
  CUBLAS_COMPUTE_16F: 64,
  CUBLAS_COMPUTE_32F: 68,
  CUBLAS_COMPUTE_32F_PEDANTIC: 69,
  CUBLAS_COMPUTE_64F: 70,
  CUBLAS_COMPUTE_32F_FAST_16F: 74,
  CUBLAS_COMPUTE_32F_FAST_16BF: 75,
  CUBLAS_COMPUTE_32F_FAST_TF32: 77,
  // cublasGemmAlgo_t — /cuda/cublas/#cublasgemmalgo-t
  CUBLAS_GEMM_DEFAULT: -1,
  // cudaDataType_t — /cuda/cublas/#cudadatatype-t (library_types.h)
  CUDA_R_32F: 0,
  CUDA_R_64F: 1,
  CUDA_R_16F: 2,
  CUDA_C_32F: 4,
  CUDA_C_64F: 5,
  CUDA_R_16BF: 14,
  // libraryPropertyType — /cuda/cublas/#librarypropertytype (library_types.h)
  MAJOR_VERSION: 0,
  MINOR_VERSION: 1,
  PATCH_LEVEL: 2,
  // cublasLtMatmulDescAttributes_t — /cuda/cublas/#cublasltmatmuldescattributes-t
  CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: 0,
  CUBLASLT_MATMUL_DESC_SCALE_TYPE: 1,
  CUBLASLT_MATMUL_DESC_TRANSA: 3,
  CUBLASLT_MATMUL_DESC_TRANSB: 4,
  // cublasLtMatrixLayoutAttribute_t — /cuda/cublas/#cublasltmatrixlayoutattribute-t
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: 5,
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: 6,
  // cublasLtMatmulPreferenceAttributes_t — /cuda/cublas/#cublasltmatmulpreferenceattributes-t
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: 1,
  CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: 3,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: 8,
  // cublasLtReductionScheme_t — /cuda/cublas/#cublasltreductionscheme-t
  CUBLASLT_REDUCTION_SCHEME_NONE: 0,
  CUBLASLT_REDUCTION_SCHEME_INPLACE: 1,
  CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: 2,
  CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: 4,
  CUBLASLT_REDUCTION_SCHEME_MASK: 7,
  // cufftType — /cuda/cufft/#parameter-cuffttype
  CUFFT_R2C: 0x2a,
  CUFFT_C2R: 0x2c,
  CUFFT_C2C: 0x29,
  CUFFT_D2Z: 0x6a,
  CUFFT_Z2D: 0x6c,
  CUFFT_Z2Z: 0x69,
  // cuFFT transform direction — /cuda/cufft/#cufft-transform-directions
  CUFFT_FORWARD: -1,
  CUFFT_INVERSE: 1,
  // cusolverEigMode_t — /cuda/cusolver/#cusolvereigmode-t
  CUSOLVER_EIG_MODE_NOVECTOR: 0,
  CUSOLVER_EIG_MODE_VECTOR: 1,
} as const;

/** Size in bytes of cublasLtMatmulHeuristicResult_t: algo (uint64_t[8]) + size_t + status + float + int[4]. */
export const HEURISTIC_RESULT_BYTES = 96;
/** Byte offsets inside cublasLtMatmulHeuristicResult_t. */
export const HEURISTIC_RESULT = { algo: 0, workspaceSize: 64, state: 72, wavesCount: 76 } as const;

/** cublasStatus_t — /cuda/cublas/#cublasstatus-t */
export const CUBLAS_STATUS_NAMES: Readonly<Record<number, string>> = {
  0: "CUBLAS_STATUS_SUCCESS",
  1: "CUBLAS_STATUS_NOT_INITIALIZED",
  3: "CUBLAS_STATUS_ALLOC_FAILED",
  7: "CUBLAS_STATUS_INVALID_VALUE",
  8: "CUBLAS_STATUS_ARCH_MISMATCH",
  11: "CUBLAS_STATUS_MAPPING_ERROR",
  13: "CUBLAS_STATUS_EXECUTION_FAILED",
  14: "CUBLAS_STATUS_INTERNAL_ERROR",
  15: "CUBLAS_STATUS_NOT_SUPPORTED",
  16: "CUBLAS_STATUS_LICENSE_ERROR",
};

/** cufftResult — /cuda/cufft/#cufftresult (codes removed in cuFFT 12 keep their names). */
export const CUFFT_RESULT_NAMES: Readonly<Record<number, string>> = {
  0: "CUFFT_SUCCESS",
  1: "CUFFT_INVALID_PLAN",
  2: "CUFFT_ALLOC_FAILED",
  3: "CUFFT_INVALID_TYPE",
  4: "CUFFT_INVALID_VALUE",
  5: "CUFFT_INTERNAL_ERROR",
  6: "CUFFT_EXEC_FAILED",
  7: "CUFFT_SETUP_FAILED",
  8: "CUFFT_INVALID_SIZE",
  9: "CUFFT_UNALIGNED_DATA",
  10: "CUFFT_INCOMPLETE_PARAMETER_LIST",
  11: "CUFFT_INVALID_DEVICE",
  12: "CUFFT_PARSE_ERROR",
  13: "CUFFT_NO_WORKSPACE",
  14: "CUFFT_NOT_IMPLEMENTED",
  15: "CUFFT_LICENSE_ERROR",
  16: "CUFFT_NOT_SUPPORTED",
  17: "CUFFT_MISSING_DEPENDENCY",
  18: "CUFFT_NVRTC_FAILURE",
  19: "CUFFT_NVJITLINK_FAILURE",
  20: "CUFFT_NVSHMEM_FAILURE",
};

/** cusolverStatus_t — /cuda/cusolver/#cusolverstatus-t */
export const CUSOLVER_STATUS_NAMES: Readonly<Record<number, string>> = {
  0: "CUSOLVER_STATUS_SUCCESS",
  1: "CUSOLVER_STATUS_NOT_INITIALIZED",
  2: "CUSOLVER_STATUS_ALLOC_FAILED",
  3: "CUSOLVER_STATUS_INVALID_VALUE",
  4: "CUSOLVER_STATUS_ARCH_MISMATCH",
  5: "CUSOLVER_STATUS_MAPPING_ERROR",
  6: "CUSOLVER_STATUS_EXECUTION_FAILED",
  7: "CUSOLVER_STATUS_INTERNAL_ERROR",
  8: "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
  9: "CUSOLVER_STATUS_NOT_SUPPORTED",
  10: "CUSOLVER_STATUS_ZERO_PIVOT",
  11: "CUSOLVER_STATUS_INVALID_LICENSE",
  // The iterative-refinement (IRS) codes and INVALID_WORKSPACE, as cusolver_common.h numbers them.
  12: "CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED",
  13: "CUSOLVER_STATUS_IRS_PARAMS_INVALID",
  14: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC",
  15: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE",
  16: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER",
  20: "CUSOLVER_STATUS_IRS_INTERNAL_ERROR",
  21: "CUSOLVER_STATUS_IRS_NOT_SUPPORTED",
  22: "CUSOLVER_STATUS_IRS_OUT_OF_RANGE",
  23: "CUSOLVER_STATUS_IRS_NRHS_NOT_SUPPORTED_FOR_REFINE_GMRES",
  25: "CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED",
  26: "CUSOLVER_STATUS_IRS_INFOS_NOT_DESTROYED",
  30: "CUSOLVER_STATUS_IRS_MATRIX_SINGULAR",
  31: "CUSOLVER_STATUS_INVALID_WORKSPACE",
};

/** cusparseStatus_t — /cuda/cusparselt/types.html#cusparsestatus-t */
export const CUSPARSE_STATUS_NAMES: Readonly<Record<number, string>> = {
  0: "CUSPARSE_STATUS_SUCCESS",
  1: "CUSPARSE_STATUS_NOT_INITIALIZED",
  2: "CUSPARSE_STATUS_ALLOC_FAILED",
  3: "CUSPARSE_STATUS_INVALID_VALUE",
  4: "CUSPARSE_STATUS_ARCH_MISMATCH",
  5: "CUSPARSE_STATUS_MAPPING_ERROR",
  6: "CUSPARSE_STATUS_EXECUTION_FAILED",
  7: "CUSPARSE_STATUS_INTERNAL_ERROR",
  8: "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
  9: "CUSPARSE_STATUS_ZERO_PIVOT",
  10: "CUSPARSE_STATUS_NOT_SUPPORTED",
  11: "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES",
};
