/**
 * The flags of every namespace in the API we owe (../shared/design/API.md), with torch's
 * defaults. They exist whether or not a backend package is installed, as in torch.
 */
import { FlagError } from "../errors.ts";
import {
  type BoolSpec,
  bool,
  type EnumSpec,
  type FlagSchema,
  type IntSpec,
  int,
  oneOf,
} from "./spec.ts";

/**
 * torch's check_env(): "1" is true, "0" false; anything else is ignored with a warning
 * (defineFlags warns and keeps the default when this throws).
 */
const torchEnvFlag = (t: string): boolean => {
  if (t === "1" || t === "0") return t === "1";
  throw new FlagError(`${JSON.stringify(t)} is not a valid value for a boolean flag; use 0 or 1`);
};

/**
 * OMP_NUM_THREADS as OpenMP reads it: a list of thread counts per nesting level ("4,2"),
 * of which the first is the one a process runs with (torch too: "1,2" is one thread).
 */
const ompThreadsEnv = (t: string): number => {
  const first = t.split(",")[0].trim();
  if (!/^\+?\d+$/.test(first))
    throw new FlagError(`${JSON.stringify(t)} is not a thread count (use a number like 4)`);
  return Number(first);
};

// Who reads each flag (describe() and the inert-flag warning use it).
const CORE = ["@backplane/core"];
const MKL = ["@backplane/backend-cpu-mkl"];
const CUDA = ["@backplane/backend-cuda"];
const CUDNN = ["@backplane/backend-cudnn"];
const NNPACK = ["@backplane/backend-nnpack"];
const EINSUM = ["@backplane/backend-opt-einsum"];
const WEBGPU = ["@backplane/backend-webgpu"];
const MPS = ["@backplane/backend-mps"];

/** The type of BUILTIN_FLAGS, spelled out (JSR publishes explicit types only). */
export interface BuiltinFlagSchemas {
  core: {
    deterministic: BoolSpec;
    deterministicWarnOnly: BoolSpec;
    float32MatmulPrecision: EnumSpec<"highest" | "high" | "medium">;
    verbose: BoolSpec;
    ranking: EnumSpec<"auto" | "off" | "sizeClass" | "perShape" | "exhaustive">;
    strict: BoolSpec;
    checkKernels: BoolSpec;
  };
  cpu: {
    preferredBlasLibrary: EnumSpec<"auto" | "mkl" | "openblas" | "blis" | "wasm">;
    calibrate: BoolSpec;
  };
  cuda: {
    matmul: {
      allowTf32: BoolSpec;
      allowFp16ReducedPrecisionReduction: BoolSpec;
      allowBf16ReducedPrecisionReduction: BoolSpec;
    };
    preferredBlasLibrary: EnumSpec<"cublas" | "cublaslt">;
    preferredLinalgLibrary: EnumSpec<"default" | "cusolver" | "magma">;
    flashSdp: BoolSpec;
    memEfficientSdp: BoolSpec;
    mathSdp: BoolSpec;
    cudnnSdp: BoolSpec;
    overrideableSdp: BoolSpec;
  };
  cudnn: {
    enabled: BoolSpec;
    allowTf32: BoolSpec;
    deterministic: BoolSpec;
    benchmark: BoolSpec;
    benchmarkLimit: IntSpec;
    rnn: {
      fp32Precision: EnumSpec<"none" | "ieee" | "tf32">;
    };
  };
  mha: {
    fastpathEnabled: BoolSpec;
  };
  mps: {
    fallback: BoolSpec;
  };
  mkl: {
    verbose: IntSpec;
  };
  mkldnn: {
    enabled: BoolSpec;
    verbose: IntSpec;
    deterministic: BoolSpec;
  };
  nnpack: {
    enabled: BoolSpec;
  };
  openmp: {
    numThreads: IntSpec;
  };
  optEinsum: {
    enabled: BoolSpec;
    strategy: EnumSpec<
      | "auto"
      | "auto-hq"
      | "optimal"
      | "dp"
      | "greedy"
      | "random-greedy"
      | "branch-all"
      | "branch-2"
      | "branch-1"
    >;
  };
  quantized: {
    engine: EnumSpec<"none">;
  };
  xnnpack: {
    enabled: BoolSpec;
  };
  webgpu: {
    powerPreference: EnumSpec<"high-performance" | "low-power">;
    allowF16: BoolSpec;
  };
}

export const BUILTIN_FLAGS: BuiltinFlagSchemas = {
  core: {
    deterministic: bool(false, { torch: "torch.use_deterministic_algorithms", readBy: CORE }),
    deterministicWarnOnly: bool(false, { torch: "warn_only", readBy: CORE }),
    float32MatmulPrecision: oneOf(["highest", "high", "medium"], "highest", {
      torch: "torch.set_float32_matmul_precision",
      readBy: CORE,
    }),
    verbose: bool(false, {
      env: "BACKPLANE_VERBOSE",
      doc: "trace every kernel call",
      readBy: CORE,
    }),
    ranking: oneOf(["auto", "off", "sizeClass", "perShape", "exhaustive"], "auto", {
      env: "BACKPLANE_RANKING",
      doc: "how kernels are ordered: auto (per op: conv2d per shape, matmul and SDPA by the calibrated size), off (authors' priority), sizeClass, perShape (each backend timed at a shape's first call), exhaustive (every kernel timed per shape, as cudnn.benchmark)",
      readBy: CORE,
    }),
    strict: bool(false, {
      env: "BACKPLANE_STRICT",
      doc: "a kernel priority the inputs defeat raises FallbackError instead of falling back; kernel results are checked as with checkKernels",
      readBy: CORE,
    }),
    checkKernels: bool(false, {
      env: "BACKPLANE_CHECK_KERNELS",
      doc: "check every kernel result against its op (shape, dtype, device, not an input): KernelContractError otherwise; the testkit turns it on",
      readBy: CORE,
    }),
  },
  cpu: {
    preferredBlasLibrary: oneOf(["auto", "mkl", "openblas", "blis", "wasm"], "auto", {
      env: "BACKPLANE_BLAS",
      readBy: MKL,
    }),
    calibrate: bool(true, {
      env: "BACKPLANE_CALIBRATE",
      doc: "rank the CPU backends' kernels by timing them at ready() (cached per machine; backends.cpu.calibrate() redoes it)",
      readBy: CORE,
    }),
  },
  cuda: {
    matmul: {
      allowTf32: bool(false, {
        torch: "torch.backends.cuda.matmul.allow_tf32",
        doc: "the same setting as float32MatmulPrecision, seen from CUDA (as in torch)",
        readBy: [...CORE, ...CUDA],
      }),
      allowFp16ReducedPrecisionReduction: bool(true, {
        torch: "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
        readBy: CUDA,
      }),
      allowBf16ReducedPrecisionReduction: bool(true, {
        torch: "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
        readBy: CUDA,
      }),
    },
    preferredBlasLibrary: oneOf(["cublas", "cublaslt"], "cublas", {
      env: "TORCH_BLAS_PREFER_CUBLASLT",
      fromEnv: (t) => (torchEnvFlag(t) ? "cublaslt" : "cublas"),
      torch: "torch.backends.cuda.preferred_blas_library",
      readBy: CUDA,
    }),
    preferredLinalgLibrary: oneOf(["default", "cusolver", "magma"], "default", {
      env: "TORCH_LINALG_PREFER_CUSOLVER",
      fromEnv: (t) => (torchEnvFlag(t) ? "cusolver" : "default"),
      torch: "torch.backends.cuda.preferred_linalg_library",
      readBy: CUDA,
    }),
    flashSdp: bool(true, { torch: "torch.backends.cuda.enable_flash_sdp", readBy: CORE }),
    memEfficientSdp: bool(true, {
      torch: "torch.backends.cuda.enable_mem_efficient_sdp",
      readBy: CORE,
    }),
    mathSdp: bool(true, { torch: "torch.backends.cuda.enable_math_sdp", readBy: CORE }),
    cudnnSdp: bool(true, { torch: "torch.backends.cuda.enable_cudnn_sdp", readBy: CORE }),
    overrideableSdp: bool(true, {
      doc: "third-party SDPA kernels (SDPBackend.OVERRIDEABLE)",
      readBy: CORE,
    }),
  },
  cudnn: {
    enabled: bool(true, { torch: "torch.backends.cudnn.enabled", readBy: CUDNN }),
    allowTf32: bool(true, { torch: "torch.backends.cudnn.allow_tf32", readBy: CUDNN }),
    deterministic: bool(false, { torch: "torch.backends.cudnn.deterministic", readBy: CUDNN }),
    benchmark: bool(false, {
      torch: "torch.backends.cudnn.benchmark",
      doc: "also makes the dispatcher time every kernel per shape (core.ranking exhaustive) when core.ranking is auto",
      readBy: [...CORE, ...CUDNN],
    }),
    benchmarkLimit: int(10, {
      min: 0,
      torch: "torch.backends.cudnn.benchmark_limit",
      readBy: [...CORE, ...CUDNN],
    }),
    rnn: {
      fp32Precision: oneOf(["none", "ieee", "tf32"], "none", {
        torch: "torch.backends.cudnn.rnn.fp32_precision",
        readBy: CUDNN,
      }),
    },
  },
  mha: {
    fastpathEnabled: bool(true, { torch: "torch.backends.mha.set_fastpath_enabled", readBy: CORE }),
  },
  mps: {
    fallback: bool(false, {
      env: ["PYTORCH_ENABLE_MPS_FALLBACK", "BACKPLANE_MPS_FALLBACK"],
      doc: "ops without an mps kernel run on the CPU (warning once per op) instead of raising",
      readBy: MPS,
    }),
  },
  mkl: {
    verbose: int(0, {
      min: 0,
      max: 1,
      env: "MKL_VERBOSE",
      torch: "torch.backends.mkl.verbose",
      readBy: MKL,
    }),
  },
  mkldnn: {
    enabled: bool(true, { torch: "torch.backends.mkldnn.enabled", readBy: MKL }),
    verbose: int(0, {
      min: 0,
      max: 2,
      env: ["ONEDNN_VERBOSE", "DNNL_VERBOSE"],
      torch: "torch.backends.mkldnn.verbose",
      readBy: MKL,
    }),
    deterministic: bool(false, {
      torch: "torch.backends.mkldnn.deterministic",
      doc: "oneDNN kernels that are not bit-reproducible step aside (the fp32 forward convolution is: it runs either way)",
      readBy: MKL,
    }),
  },
  nnpack: {
    enabled: bool(true, { torch: "torch.backends.nnpack.set_flags", readBy: NNPACK }),
  },
  openmp: {
    numThreads: int(0, {
      min: 0,
      max: 1024,
      env: "OMP_NUM_THREADS",
      fromEnv: ompThreadsEnv,
      doc: "0: the cores available",
      readBy: CORE,
    }),
  },
  optEinsum: {
    enabled: bool(true, { torch: "torch.backends.opt_einsum.enabled", readBy: EINSUM }),
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
      { torch: "torch.backends.opt_einsum.strategy", readBy: EINSUM },
    ),
  },
  quantized: {
    engine: oneOf(["none"], "none", {
      torch: "torch.backends.quantized.engine",
      extensible: true,
      doc: "engines become valid when a package provides them and can serve them (quantized.supportedEngines); none lets every engine's kernels run in their ranked order",
      readBy: ["@backplane/backend-nnpack", "@backplane/backend-cpu-mkl"],
    }),
  },
  xnnpack: {
    enabled: bool(false, { torch: "torch.backends.xnnpack.enabled", readBy: [] }),
  },
  webgpu: {
    powerPreference: oneOf(["high-performance", "low-power"], "high-performance", {
      readBy: WEBGPU,
    }),
    allowF16: bool(true, { readBy: WEBGPU }),
  },
} satisfies Record<string, FlagSchema>;

/**
 * Flags that are one setting seen twice, kept equal by change hooks (torch's
 * cuda.matmul.allow_tf32 is the float32 matmul precision not being "highest"): a scope
 * that changes one of them saves and restores them all.
 */
export const MIRRORED_FLAGS: readonly (readonly string[])[] = [
  ["core.float32MatmulPrecision", "cuda.matmul.allowTf32"],
];

/**
 * The backends Backplane's own packages register, by name: ready() of one whose package is
 * not imported has nothing to wait for, while a name in no list is a typo.
 */
export const BACKEND_PACKAGES: Readonly<Record<string, string>> = {
  "cpu-blas": "@backplane/backend-cpu-mkl",
  "cpu-dnnl": "@backplane/backend-cpu-mkl",
  "cpu-wasm": "@backplane/backend-cpu-mkl",
  cuda: "@backplane/backend-cuda",
  cusparselt: "@backplane/backend-cuda",
  cudnn: "@backplane/backend-cudnn",
  mps: "@backplane/backend-mps",
  nnpack: "@backplane/backend-nnpack",
  openmp: "@backplane/backend-openmp",
  "opt-einsum": "@backplane/backend-opt-einsum",
  webgpu: "@backplane/backend-webgpu",
};

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

/** The switch of each SDP backend family (torch.backends.cuda's enable_*_sdp flags). */
export const SDP_FAMILY_FLAGS = {
  MATH: "cuda.mathSdp",
  FLASH_ATTENTION: "cuda.flashSdp",
  EFFICIENT_ATTENTION: "cuda.memEfficientSdp",
  CUDNN_ATTENTION: "cuda.cudnnSdp",
  OVERRIDEABLE: "cuda.overrideableSdp",
} as const;

/** The switch of each kernel family of an op, and the one for kernels of no listed family. */
export interface FamilySwitches {
  readonly families: Readonly<Record<string, string>>;
  readonly other: string;
}

/**
 * Ops whose kernel families are switched by flags, as torch's SDP backends are: a kernel
 * of a family runs only while its switch is true, whether or not its own `flags` name it
 * (sdpaKernel([MATH]) must stop a FLASH_ATTENTION kernel that forgot cuda.flashSdp). A
 * kernel of no listed family is a third party's: SDPBackend.OVERRIDEABLE.
 */
export const FAMILY_FLAGS: Readonly<Record<string, FamilySwitches>> = {
  scaledDotProductAttention: { families: SDP_FAMILY_FLAGS, other: "cuda.overrideableSdp" },
};
