import type { Harness } from "../harness.ts";

export interface Suite {
  description: string;
  run(h: Harness, args: string[]): Promise<void>;
}

/** Each suite loads when it runs, so one suite's backends and peers never load for another. */
export const SUITES: Record<string, { summary: string; load: () => Promise<Suite> }> = {
  conv2d: {
    summary: "conv2d layers: nnpack algorithms against implicit GEMM, tfjs-wasm, ort-web, PyTorch",
    load: async () => (await import("./conv2d.ts")).default,
  },
  dispatch: {
    summary:
      "the dispatcher's overhead per call against the kernel called directly, and tfjs-core's",
    load: async () => (await import("./dispatch.ts")).default,
  },
  einsum: {
    summary: "einsum contraction paths: strategies' cost and search time on a set of expressions",
    load: async () => (await import("./einsum.ts")).default,
  },
  gemm: {
    summary: "sgemm n = 256..2048: WASM, native BLAS, 2 threads, against tfjs-wasm, onnxruntime",
    load: async () => (await import("./gemm.ts")).default,
  },
  interleave: {
    summary: "a oneDNN conv2d and an OpenBLAS matmul alternating on 2 threads, against each alone",
    load: async () => (await import("./interleave.ts")).default,
  },
  quantized: {
    summary:
      "int8 linear and conv2d layers: the qnnpack (WASM) and onednn engines against fp32, onnxruntime, PyTorch",
    load: async () => (await import("./quantized.ts")).default,
  },
  sdpa: {
    summary: "attention N = 512..4096: math path against the fused flash kernels, time and memory",
    load: async () => (await import("./sdpa.ts")).default,
  },
};
