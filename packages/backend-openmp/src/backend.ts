/**
 * The "openmp" backend: answers for backends.openmp (the pool: isEnabled, the thread
 * count) and backends.xeon (runCpu). Importing the package registers it and, where
 * threads are possible, installs the pool as the core's ParallelService.
 */
import {
  ArgumentError,
  type Backends,
  backends,
  type FlagScope,
  getFlag,
  onFlagChange,
  runtime,
  setFlag,
} from "@backplane/core";
import { type BackendDefinition, defineBackend, statusOf } from "@backplane/core/backend";
import { cpuMemory, readEnv, setParallelService } from "@backplane/core/cpu";
import { openmpAvailability } from "./availability.ts";
import { WorkerPool } from "./pool.ts";
import { runCpu } from "./run-cpu.ts";
import { loadRuntimeModule, loadRuntimeModuleSync } from "./runtime-module.ts";

export const OPENMP_BACKEND = "openmp";
export const VERSION = "0.1.0";

let pool: WorkerPool | undefined;

/** The pool every CPU kernel shares, once installed (undefined where threads are unavailable). */
export function openmpPool(): WorkerPool | undefined {
  return pool;
}

/** OMP_WAIT_POLICY: "passive" never spins, "active" spins for a millisecond. */
export function waitPolicy(text: string | undefined = readEnv("OMP_WAIT_POLICY")): {
  spinMicros?: number;
  callerSpinMicros?: number;
} {
  const p = text?.trim().toLowerCase();
  if (p === "passive") return { spinMicros: 0, callerSpinMicros: 0 };
  if (p === "active") return { spinMicros: 1000, callerSpinMicros: 1000 };
  return {};
}

const numThreads = (): number =>
  (getFlag("openmp.numThreads") as number) || runtime().hardwareConcurrency;

/** Creates the pool and installs it in the core (no worker starts until it is used). */
export function installPool(): WorkerPool | undefined {
  if (pool) return pool;
  if (!openmpAvailability().available) return undefined;
  const p = new WorkerPool({ memory: cpuMemory().memory, ...waitPolicy() });
  pool = p;
  // The pool follows the setting both ways: a scope that asked for more threads than the
  // machine has ends with the workers it started with.
  onFlagChange("openmp.numThreads", (v) => {
    p.resize((v as number) || runtime().hardwareConcurrency);
  });
  setParallelService(p);
  return p;
}

export const openmpBackend: BackendDefinition = defineBackend({
  name: OPENMP_BACKEND,
  namespaces: ["openmp", "xeon"],
  packageName: "@backplane/backend-openmp",
  devices: ["cpu"],
  version: () => VERSION,
  isAvailable: () => openmpAvailability(),
  async init() {
    const p = installPool();
    if (!loadRuntimeModuleSync()) await loadRuntimeModule();
    await p?.ready();
  },
  capability: () => {
    const s = pool?.stats();
    return {
      workers: s?.workers ?? 0,
      threads: 1 + (s?.workers ?? 0),
      starting: s?.starting ?? 0,
      kind: s?.kind,
      spinMicros: s?.spinMicros ?? 0,
      callerSpinMicros: s?.callerSpinMicros ?? 0,
      wakeLatencyMicros: pool?.wakeLatencyMicros,
      deaths: s?.deaths ?? 0,
      lastError: s?.lastError,
    };
  },
  api: {
    openmp: {
      isEnabled: () => statusOf("openmp").available,
      /** Threads CPU kernels use: the setting, or the cores available when it is 0. */
      getNumThreads: numThreads,
      setNumThreads: (n: number) => {
        if (!Number.isInteger(n) || n < 1)
          throw new ArgumentError(
            // (quoted when a string: "4" must not read as the number 4)
            `openmp.setNumThreads: n must be an integer >= 1, got ${typeof n === "string" ? JSON.stringify(n) : String(n)}`,
          );
        setFlag("openmp.numThreads", n);
      },
      /** `using _ = backends.openmp.numThreadsScope(1)` */
      numThreadsScope: (n: number): FlagScope => backends.flags({ openmp: { numThreads: n } }),
      /** The pool (undefined where threads are unavailable). */
      pool: openmpPool,
    } satisfies Partial<Backends["openmp"]>, // as the core types backends.openmp
    xeon: {
      /** torch.backends.xeon.run_cpu: `await backends.xeon.runCpu(["--ninstances", "2", "app.js"])`. */
      runCpu,
    },
  },
});
