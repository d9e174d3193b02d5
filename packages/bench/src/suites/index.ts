import type { Harness } from "../harness.ts";

export interface Suite {
  description: string;
  run(h: Harness, args: string[]): Promise<void>;
}

/**
 * An option a suite reads from its arguments, `--name=value` or `--name value` (a switch
 * takes no value). runBench checks every option against its suite's list before the suite
 * loads (an unknown one, or a bad value, is exit 2) and hands it on as `--name=value`.
 */
export interface SuiteOption {
  name: string;
  /** What the value looks like, for help ("a,b"); none: a switch. */
  value?: string;
  help: string;
  /**
   * What the value may be: a comma-separated list of these names (impls, a half of the
   * suite), "integers" (a list of whole numbers >= 1), "integer" (one); else any text.
   */
  accepts?: readonly string[] | "integer" | "integers";
}

export interface SuiteEntry {
  summary: string;
  /** Every option the suite reads (--json is runBench's own). */
  options: readonly SuiteOption[];
  load: () => Promise<Suite>;
}

// The impls a suite's --impls may name: what gemm.ts and conv2d.ts time (keep in step).
const GEMM_IMPLS = [
  "backplane-native",
  "backplane-dispatch",
  "backplane-wasm",
  "backplane-wasm-2t",
  "backplane-webgpu",
  "openblas-direct",
  "tfjs-wasm",
  "ort-web",
  "ort-web-2t",
  "ort-node",
];
const CONV2D_IMPLS = [
  "backplane-dispatch",
  "backplane-auto",
  "backplane-auto[wasm-gemm]",
  "backplane-auto[uncached]",
  ...["wt8x8", "wt6x6", "ft8x8", "ft16x16", "direct", "implicit-gemm"].map((a) => `backplane-${a}`),
  ...["wt8x8", "wt6x6", "implicit-gemm"].map((a) => `backplane-${a}[wasm-gemm]`),
  "tfjs-wasm",
  "ort-web",
];

/** Each suite loads when it runs, so one suite's backends and peers never load for another. */
export const SUITES: Record<string, SuiteEntry> = {
  conv2d: {
    summary: "conv2d layers: nnpack algorithms against implicit GEMM, tfjs-wasm, ort-web, PyTorch",
    options: [
      { name: "--quick", help: "5 samples per impl instead of 11" },
      { name: "--only", value: "text", help: "only the layers whose name contains text" },
      {
        name: "--threads",
        value: "n",
        help: "threads of Backplane (backend-openmp's pool) and PyTorch (default 1; tfjs-wasm and ort-web only at 1)",
        accepts: "integer",
      },
      {
        name: "--impls",
        value: "a,b",
        help: "only these Backplane impls and peers (PyTorch always)",
        accepts: CONV2D_IMPLS,
      },
    ],
    load: async () => (await import("./conv2d.ts")).default,
  },
  dispatch: {
    summary:
      "the dispatcher's overhead per call against the kernel called directly, and tfjs-core's",
    options: [],
    load: async () => (await import("./dispatch.ts")).default,
  },
  einsum: {
    summary: "einsum contraction paths: strategies' cost and search time on a set of expressions",
    options: [],
    load: async () => (await import("./einsum.ts")).default,
  },
  gemm: {
    summary: "sgemm n = 256..2048: WASM, native BLAS, 2 threads, against tfjs-wasm, onnxruntime",
    options: [
      {
        name: "--sizes",
        value: "a,b",
        help: "these sizes instead of 256,512,1024,2048",
        accepts: "integers",
      },
      { name: "--impls", value: "a,b", help: "only these impls", accepts: GEMM_IMPLS },
    ],
    load: async () => (await import("./gemm.ts")).default,
  },
  interleave: {
    summary: "a oneDNN conv2d and an OpenBLAS matmul alternating on 2 threads, against each alone",
    options: [],
    load: async () => (await import("./interleave.ts")).default,
  },
  quantized: {
    summary:
      "int8 linear and conv2d layers: the qnnpack (WASM) and onednn engines against fp32, onnxruntime, PyTorch",
    options: [
      {
        name: "--only",
        value: "linear|conv2d",
        help: "one half of the suite",
        accepts: ["linear", "conv2d"],
      },
    ],
    load: async () => (await import("./quantized.ts")).default,
  },
  sdpa: {
    summary: "attention N = 512..4096: math path against the fused flash kernels, time and memory",
    options: [],
    load: async () => (await import("./sdpa.ts")).default,
  },
};
