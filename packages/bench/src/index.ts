/**
 * @backplane/bench: the benchmark suites and their harness. `runBench(["gemm", "--json"])`
 * is `backplane bench gemm --json`; a suite's peers (tfjs, onnxruntime, OpenBLAS) are
 * optional: one that is not installed is a note in the output, never a crash.
 */
export {
  formatMs,
  Harness,
  type Impl,
  listArg,
  type MeasureOptions,
  machine,
  type ProgressEvent,
  type Ratio,
  type Result,
  runtimeName,
  type SelfTimed,
  sizesArg,
  table,
} from "./harness.ts";
export { type ProgressOutput, progressReporter } from "./progress.ts";
export { type BenchIO, benchUsage, runBench } from "./run.ts";
export { SUITES, type Suite } from "./suites/index.ts";
