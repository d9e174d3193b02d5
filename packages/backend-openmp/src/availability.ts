/**
 * Whether the pool can run here, and if not, the reason a person can act on.
 * probeEnvironment() looks at this runtime; openmpAvailability() turns any probe into an
 * answer, so every reason can be checked (tests) without the runtime that produces it.
 */
import { type RuntimeName, runtime } from "@backplane/core";
import type { Availability } from "@backplane/core/backend";
import { cpuMemory } from "@backplane/core/cpu";
import { hasWebWorkers, workerThreadsModule } from "./spawn.ts";

export interface AvailabilityProbe {
  runtime: RuntimeName;
  sharedArrayBuffer: boolean;
  /** Pages only: whether the page is cross-origin isolated (servers always are). */
  crossOriginIsolated: boolean;
  atomics: boolean;
  /** node:worker_threads (Node, Bun, Deno). */
  workerThreads: boolean;
  /** The Worker constructor (browsers, Deno, Bun). */
  webWorkers: boolean;
  /** The CPU memory: shared, plain (not shared), or the reason there is none. */
  memory: "shared" | "plain" | { error: string };
}

/** What this runtime offers. */
export function probeEnvironment(): AvailabilityProbe {
  const rt = runtime();
  let memory: AvailabilityProbe["memory"];
  try {
    memory = cpuMemory().shared ? "shared" : "plain";
  } catch (e) {
    memory = { error: (e as Error).message };
  }
  return {
    runtime: rt.name,
    sharedArrayBuffer: typeof SharedArrayBuffer === "function",
    crossOriginIsolated: rt.crossOriginIsolated,
    atomics: typeof Atomics === "object" && typeof Atomics.wait === "function",
    workerThreads: workerThreadsModule() !== undefined,
    webWorkers: hasWebWorkers(),
    memory,
  };
}

/** The two response headers that make a page cross-origin isolated. */
export const ISOLATION_HEADERS =
  "Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp";

/** Whether the pool can run with what `probe` describes (default: this runtime). */
export function openmpAvailability(probe: AvailabilityProbe = probeEnvironment()): Availability {
  const page = probe.runtime === "browser";
  if (page && (!probe.crossOriginIsolated || !probe.sharedArrayBuffer))
    return {
      available: false,
      reason:
        "this page is not cross-origin isolated, so it has no SharedArrayBuffer and no threads; " +
        `serve it with the headers ${ISOLATION_HEADERS}`,
    };
  if (!probe.sharedArrayBuffer)
    return {
      available: false,
      reason: "this runtime has no SharedArrayBuffer, which threads need to share memory",
    };
  if (!probe.atomics)
    return { available: false, reason: "this runtime has no Atomics.wait, which threads need" };
  if (!probe.workerThreads && !probe.webWorkers)
    return {
      available: false,
      reason: "this runtime has no workers (neither node:worker_threads nor Web Workers)",
    };
  if (typeof probe.memory === "object")
    return { available: false, reason: `there is no CPU memory: ${probe.memory.error}` };
  if (probe.memory === "plain")
    return {
      available: false,
      reason:
        "the CPU memory (cpuMemory() of @backplane/core) is not shared: it was created without " +
        "SharedArrayBuffer, so workers could not see tensors" +
        (page ? `; serve the page with the headers ${ISOLATION_HEADERS}` : ""),
    };
  return { available: true };
}
