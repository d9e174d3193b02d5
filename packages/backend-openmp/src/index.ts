/**
 * @backplane/backend-openmp: one CPU thread pool every CPU kernel shares (what OpenMP is
 * to PyTorch), and run-cpu (torch.backends.xeon.run_cpu).
 *
 * Importing it registers the "openmp" backend (backends.openmp, backends.xeon) and, where
 * threads are possible (SharedArrayBuffer, workers, a shared CPU memory), installs the pool
 * as the core's ParallelService: every parallelFor() of every CPU kernel then runs on it.
 * Workers start lazily, up to backends.openmp.getNumThreads() - 1 (the calling thread is
 * one of the threads); `await backends.ready()` waits for them.
 */
import { registerBackend } from "@backplane/core/backend";
import { installPool, openmpBackend } from "./backend.ts";
import { loadRuntimeModuleSync } from "./runtime-module.ts";

// (A second copy of the package, loaded by mistake, finds the first one registered and
// leaves its pool in place.)
if (registerBackend(openmpBackend).def === openmpBackend) {
  installPool();
  try {
    loadRuntimeModuleSync();
  } catch {
    // No WASM CPU memory here: parallelSum() says so when it is called.
  }
}

export {
  type AvailabilityProbe,
  ISOLATION_HEADERS,
  openmpAvailability,
  probeEnvironment,
} from "./availability.ts";
export {
  installPool,
  OPENMP_BACKEND,
  openmpBackend,
  openmpPool,
  VERSION,
  waitPolicy,
} from "./backend.ts";
export { type PoolOptions, type PoolStats, WorkerPool } from "./pool.ts";
export { DEBUG_MODULE } from "./protocol.ts";
export {
  availableCores,
  formatCoreList,
  formatPlan,
  parseCoreList,
  planRunCpu,
  RUN_CPU_USAGE,
  type RunCpuInstance,
  type RunCpuOptions,
  type RunCpuPlan,
  type RunCpuRuntime,
  RunCpuUsageError,
  runCpu,
} from "./run-cpu.ts";
export {
  loadRuntimeModule,
  loadRuntimeModuleSync,
  type ParallelSumOptions,
  parallelSum,
  RUNTIME_MODULE,
  type RuntimeExports,
  runtimeModule,
  SUM_CHUNK,
} from "./runtime-module.ts";
export type { WorkerKind } from "./worker-source.ts";
