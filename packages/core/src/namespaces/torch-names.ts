/**
 * Every PyTorch name of the API we owe, dotted, mapped to where it lives in Backplane.
 * `backends.` paths resolve on the `backends` object; the rest are exports of
 * `@backplane/core`. docs/api.md is generated from this map and the flag schemas.
 */
export const TORCH_NAMES = {
  // Global switches
  "torch.use_deterministic_algorithms": "useDeterministicAlgorithms",
  "torch.are_deterministic_algorithms_enabled": "areDeterministicAlgorithmsEnabled",
  "torch.is_deterministic_algorithms_warn_only_enabled": "isDeterministicAlgorithmsWarnOnlyEnabled",
  "torch.set_float32_matmul_precision": "setFloat32MatmulPrecision",
  "torch.get_float32_matmul_precision": "getFloat32MatmulPrecision",
  "torch.get_num_threads": "backends.openmp.getNumThreads",
  "torch.set_num_threads": "backends.openmp.setNumThreads",
  "torch.nn.attention.sdpa_kernel": "nn.attention.sdpaKernel",
  "torch.nn.attention.SDPBackend": "nn.attention.SDPBackend",
  // torch.backends.cpu
  "torch.backends.cpu": "backends.cpu",
  "torch.backends.cpu.get_cpu_capability": "backends.cpu.getCpuCapability",
  // torch.backends.cuda
  "torch.backends.cuda": "backends.cuda",
  "torch.backends.cuda.is_built": "backends.cuda.isBuilt",
  "torch.backends.cuda.matmul": "backends.cuda.matmul",
  "torch.backends.cuda.matmul.allow_tf32": "backends.cuda.matmul.allowTf32",
  "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
    "backends.cuda.matmul.allowFp16ReducedPrecisionReduction",
  "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
    "backends.cuda.matmul.allowBf16ReducedPrecisionReduction",
  "torch.backends.cuda.cufft_plan_cache": "backends.cuda.cufftPlanCache",
  "torch.backends.cuda.cufft_plan_cache.size": "backends.cuda.cufftPlanCache.size",
  "torch.backends.cuda.cufft_plan_cache.max_size": "backends.cuda.cufftPlanCache.maxSize",
  "torch.backends.cuda.cufft_plan_cache.clear": "backends.cuda.cufftPlanCache.clear",
  "torch.backends.cuda.preferred_blas_library": "backends.cuda.preferredBlasLibrary",
  "torch.backends.cuda.preferred_linalg_library": "backends.cuda.preferredLinalgLibrary",
  "torch.backends.cuda.SDPBackend": "backends.cuda.SDPBackend",
  "torch.backends.cuda.SDPAParams": "backends.cuda.SDPAParams",
  "torch.backends.cuda.flash_sdp_enabled": "backends.cuda.flashSdpEnabled",
  "torch.backends.cuda.enable_flash_sdp": "backends.cuda.enableFlashSdp",
  "torch.backends.cuda.mem_efficient_sdp_enabled": "backends.cuda.memEfficientSdpEnabled",
  "torch.backends.cuda.enable_mem_efficient_sdp": "backends.cuda.enableMemEfficientSdp",
  "torch.backends.cuda.math_sdp_enabled": "backends.cuda.mathSdpEnabled",
  "torch.backends.cuda.enable_math_sdp": "backends.cuda.enableMathSdp",
  "torch.backends.cuda.cudnn_sdp_enabled": "backends.cuda.cudnnSdpEnabled",
  "torch.backends.cuda.enable_cudnn_sdp": "backends.cuda.enableCudnnSdp",
  "torch.backends.cuda.is_flash_attention_available": "backends.cuda.isFlashAttentionAvailable",
  "torch.backends.cuda.can_use_flash_attention": "backends.cuda.canUseFlashAttention",
  "torch.backends.cuda.can_use_efficient_attention": "backends.cuda.canUseEfficientAttention",
  "torch.backends.cuda.can_use_cudnn_attention": "backends.cuda.canUseCudnnAttention",
  "torch.backends.cuda.sdp_kernel": "backends.cuda.sdpKernel",
  // torch.backends.cudnn
  "torch.backends.cudnn": "backends.cudnn",
  "torch.backends.cudnn.version": "backends.cudnn.version",
  "torch.backends.cudnn.is_available": "backends.cudnn.isAvailable",
  "torch.backends.cudnn.enabled": "backends.cudnn.enabled",
  "torch.backends.cudnn.allow_tf32": "backends.cudnn.allowTf32",
  "torch.backends.cudnn.deterministic": "backends.cudnn.deterministic",
  "torch.backends.cudnn.benchmark": "backends.cudnn.benchmark",
  "torch.backends.cudnn.benchmark_limit": "backends.cudnn.benchmarkLimit",
  "torch.backends.cudnn.flags": "backends.cudnn.flags",
  "torch.backends.cudnn.rnn": "backends.cudnn.rnn",
  "torch.backends.cudnn.rnn.fp32_precision": "backends.cudnn.rnn.fp32Precision",
  // torch.backends.cusparselt
  "torch.backends.cusparselt": "backends.cusparselt",
  "torch.backends.cusparselt.version": "backends.cusparselt.version",
  "torch.backends.cusparselt.is_available": "backends.cusparselt.isAvailable",
  // torch.backends.mha
  "torch.backends.mha": "backends.mha",
  "torch.backends.mha.get_fastpath_enabled": "backends.mha.getFastpathEnabled",
  "torch.backends.mha.set_fastpath_enabled": "backends.mha.setFastpathEnabled",
  // torch.backends.mps
  "torch.backends.mps": "backends.mps",
  "torch.backends.mps.is_available": "backends.mps.isAvailable",
  "torch.backends.mps.is_built": "backends.mps.isBuilt",
  "torch.backends.mps.is_macos_or_newer": "backends.mps.isMacosOrNewer",
  // torch.backends.mkl
  "torch.backends.mkl": "backends.mkl",
  "torch.backends.mkl.is_available": "backends.mkl.isAvailable",
  "torch.backends.mkl.is_enabled": "backends.mkl.isEnabled",
  "torch.backends.mkl.verbose": "backends.mkl.verbose",
  "torch.backends.mkl.VERBOSE_OFF": "backends.mkl.VERBOSE_OFF",
  "torch.backends.mkl.VERBOSE_ON": "backends.mkl.VERBOSE_ON",
  // torch.backends.mkldnn
  "torch.backends.mkldnn": "backends.mkldnn",
  "torch.backends.mkldnn.is_available": "backends.mkldnn.isAvailable",
  "torch.backends.mkldnn.enabled": "backends.mkldnn.enabled",
  "torch.backends.mkldnn.verbose": "backends.mkldnn.verbose",
  "torch.backends.mkldnn.deterministic": "backends.mkldnn.deterministic",
  "torch.backends.mkldnn.VERBOSE_OFF": "backends.mkldnn.VERBOSE_OFF",
  "torch.backends.mkldnn.VERBOSE_ON": "backends.mkldnn.VERBOSE_ON",
  "torch.backends.mkldnn.VERBOSE_ON_CREATION": "backends.mkldnn.VERBOSE_ON_CREATION",
  // torch.backends.nnpack
  "torch.backends.nnpack": "backends.nnpack",
  "torch.backends.nnpack.is_available": "backends.nnpack.isAvailable",
  "torch.backends.nnpack.enabled": "backends.nnpack.enabled",
  "torch.backends.nnpack.flags": "backends.nnpack.flags",
  "torch.backends.nnpack.set_flags": "backends.nnpack.setFlags",
  // torch.backends.openmp
  "torch.backends.openmp": "backends.openmp",
  "torch.backends.openmp.is_available": "backends.openmp.isAvailable",
  "torch.backends.openmp.is_enabled": "backends.openmp.isEnabled",
  // torch.backends.opt_einsum
  "torch.backends.opt_einsum": "backends.optEinsum",
  "torch.backends.opt_einsum.is_available": "backends.optEinsum.isAvailable",
  "torch.backends.opt_einsum.get_opt_einsum": "backends.optEinsum.getOptEinsum",
  "torch.backends.opt_einsum.enabled": "backends.optEinsum.enabled",
  "torch.backends.opt_einsum.strategy": "backends.optEinsum.strategy",
  // torch.backends.quantized, xnnpack, xeon
  "torch.backends.quantized": "backends.quantized",
  "torch.backends.quantized.engine": "backends.quantized.engine",
  "torch.backends.quantized.supported_engines": "backends.quantized.supportedEngines",
  "torch.backends.xnnpack": "backends.xnnpack",
  "torch.backends.xnnpack.enabled": "backends.xnnpack.enabled",
  "torch.backends.xeon": "backends.xeon",
  "torch.backends.xeon.run_cpu": "backends.xeon.runCpu",
} as const;

export type TorchName = keyof typeof TORCH_NAMES;

/** The Backplane name of a PyTorch name (`torch.backends.cudnn.allow_tf32`), or undefined. */
export function fromTorchName(name: string): string | undefined {
  return Object.hasOwn(TORCH_NAMES, name) ? TORCH_NAMES[name as TorchName] : undefined;
}
