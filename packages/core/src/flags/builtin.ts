/**
 * The flags of every namespace in the API we owe (../shared/design/API.md), with torch's
 * defaults. They exist whether or not a backend package is installed, as in torch.
 */
import { bool, type FlagSchema, int, oneOf } from "./spec.ts";

const truthy = (t: string) => /^(1|true|on|yes)$/i.test(t);

export const BUILTIN_FLAGS = {
  core: {
    deterministic: bool(false, { torch: "torch.use_deterministic_algorithms" }),
    deterministicWarnOnly: bool(false, { torch: "warn_only" }),
    float32MatmulPrecision: oneOf(["highest", "high", "medium"], "highest", {
      torch: "torch.set_float32_matmul_precision",
    }),
    verbose: bool(false, { env: "BACKPLANE_VERBOSE", doc: "trace every kernel call" }),
    benchmark: bool(false, { doc: "autotune every op's candidates once per shape" }),
  },
  cpu: {
    preferredBlasLibrary: oneOf(["auto", "mkl", "openblas", "blis", "wasm"], "auto", {
      env: "BACKPLANE_BLAS",
    }),
  },
  cuda: {
    matmul: {
      allowTf32: bool(false, { torch: "torch.backends.cuda.matmul.allow_tf32" }),
      allowFp16ReducedPrecisionReduction: bool(true, {
        torch: "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
      }),
      allowBf16ReducedPrecisionReduction: bool(true, {
        torch: "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
      }),
    },
    preferredBlasLibrary: oneOf(["cublas", "cublaslt"], "cublas", {
      env: "TORCH_BLAS_PREFER_CUBLASLT",
      fromEnv: (t) => (truthy(t) ? "cublaslt" : "cublas"),
      torch: "torch.backends.cuda.preferred_blas_library",
    }),
    preferredLinalgLibrary: oneOf(["default", "cusolver", "magma"], "default", {
      env: "TORCH_LINALG_PREFER_CUSOLVER",
      fromEnv: (t) => (truthy(t) ? "cusolver" : "default"),
      torch: "torch.backends.cuda.preferred_linalg_library",
    }),
    flashSdp: bool(true, { torch: "torch.backends.cuda.enable_flash_sdp" }),
    memEfficientSdp: bool(true, { torch: "torch.backends.cuda.enable_mem_efficient_sdp" }),
    mathSdp: bool(true, { torch: "torch.backends.cuda.enable_math_sdp" }),
    cudnnSdp: bool(true, { torch: "torch.backends.cuda.enable_cudnn_sdp" }),
    overrideableSdp: bool(true, { doc: "third-party SDPA kernels (SDPBackend.OVERRIDEABLE)" }),
  },
  cudnn: {
    enabled: bool(true, { torch: "torch.backends.cudnn.enabled" }),
    allowTf32: bool(true, { torch: "torch.backends.cudnn.allow_tf32" }),
    deterministic: bool(false, { torch: "torch.backends.cudnn.deterministic" }),
    benchmark: bool(false, { torch: "torch.backends.cudnn.benchmark" }),
    benchmarkLimit: int(10, { min: 0, torch: "torch.backends.cudnn.benchmark_limit" }),
    rnn: {
      fp32Precision: oneOf(["none", "ieee", "tf32"], "none", {
        torch: "torch.backends.cudnn.rnn.fp32_precision",
      }),
    },
  },
  mha: {
    fastpathEnabled: bool(true, { torch: "torch.backends.mha.set_fastpath_enabled" }),
  },
  mkl: {
    verbose: int(0, { min: 0, max: 1, env: "MKL_VERBOSE", torch: "torch.backends.mkl.verbose" }),
  },
  mkldnn: {
    enabled: bool(true, { torch: "torch.backends.mkldnn.enabled" }),
    verbose: int(0, {
      min: 0,
      max: 2,
      env: "ONEDNN_VERBOSE",
      torch: "torch.backends.mkldnn.verbose",
    }),
  },
  nnpack: {
    enabled: bool(true, { torch: "torch.backends.nnpack.set_flags" }),
  },
  openmp: {
    numThreads: int(0, {
      min: 0,
      max: 1024,
      env: "OMP_NUM_THREADS",
      doc: "0: the cores available",
    }),
  },
  optEinsum: {
    enabled: bool(true, { torch: "torch.backends.opt_einsum.enabled" }),
    strategy: oneOf(
      [
        "auto",
        "auto-hq",
        "optimal",
        "dp",
        "greedy",
        "random-greedy",
        "branch-all",
        "branch-2",
        "branch-1",
      ],
      "auto",
      { torch: "torch.backends.opt_einsum.strategy" },
    ),
  },
  quantized: {
    engine: oneOf(["none", "x86", "fbgemm", "qnnpack", "onednn"], "none", {
      torch: "torch.backends.quantized.engine",
    }),
  },
  xnnpack: {
    enabled: bool(false, { torch: "torch.backends.xnnpack.enabled" }),
  },
  webgpu: {
    powerPreference: oneOf(["high-performance", "low-power"], "high-performance"),
    allowF16: bool(true),
  },
} satisfies Record<string, FlagSchema>;

/** Which package answers for each namespace; the core answers for the rest itself. */
export const NAMESPACE_PACKAGES: Record<string, string | null> = {
  cpu: null,
  cuda: "@backplane/backend-cuda",
  cudnn: "@backplane/backend-cudnn",
  cusparselt: "@backplane/backend-cuda",
  mha: null,
  mps: "@backplane/backend-mps",
  mkl: "@backplane/backend-cpu-mkl",
  mkldnn: "@backplane/backend-cpu-mkl",
  nnpack: "@backplane/backend-nnpack",
  openmp: "@backplane/backend-openmp",
  optEinsum: "@backplane/backend-opt-einsum",
  quantized: null,
  xnnpack: null,
  xeon: "@backplane/backend-openmp",
  webgpu: "@backplane/backend-webgpu",
  nn: null,
};
