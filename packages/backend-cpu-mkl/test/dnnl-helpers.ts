/**
 * Tests of oneDNN need libdnnl.so.2. Where it does not load they skip, with one line
 * saying why; where CI installed it (BACKPLANE_EXPECT_DNNL=1, set by .ci/run) they fail.
 */
import { ready } from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { builtinModule, readEnv } from "@backplane/core/cpu";
import { it } from "vitest";
import { dnnlState } from "../src/dnnl/state.ts";
import { DNNL_BACKEND } from "../src/index.ts";

await ready(DNNL_BACKEND).catch(() => {});
const loaded = getBackend(DNNL_BACKEND)?.initState === "ready";
const required = readEnv("BACKPLANE_EXPECT_DNNL") === "1";
if (!loaded && !required)
  console.log(
    `[backend-cpu-mkl] oneDNN tests skipped: ${getBackend(DNNL_BACKEND)?.initError ?? "not registered"}`,
  );

/** `it` where oneDNN loaded (or CI requires it); `it.skip` on a machine without. */
export const itDnnl = (loaded || required ? it : it.skip) as typeof it.skip;

/** node:child_process when this is Node (the child tests run Node's own flags), else undefined. */
export function nodeChildProcess(): typeof import("node:child_process") | undefined {
  if (typeof (globalThis as { Deno?: unknown }).Deno !== "undefined" || "Bun" in globalThis)
    return undefined;
  return builtinModule<typeof import("node:child_process")>("node:child_process");
}

type Fn = (...args: unknown[]) => unknown;

/**
 * Counts the primitives and memory objects made while `fn` runs that are still alive after
 * it (those made before and destroyed meanwhile do not count), and the handles destroyed a
 * second time (counted and not passed to oneDNN); with `refuse`, every
 * dnnl_primitive_create fails (dnnl_unimplemented) as a refusal would.
 */
export function countLive<R>(
  fn: () => R,
  refuse = false,
): { live: number; result: R; doubleFrees: number } {
  const d = dnnlState.ready().dnnl as unknown as Record<string, Fn>;
  const names = [
    "dnnl_primitive_create",
    "dnnl_primitive_destroy",
    "dnnl_memory_create",
    "dnnl_memory_destroy",
  ];
  const saved = names.map((n) => d[n]);
  const made = new Set<bigint>();
  // Handles destroyed in the call, to catch one destroyed twice (counted, not passed on).
  const gone = new Set<bigint>();
  let doubleFrees = 0;
  names.forEach((n, i) => {
    d[n] = (...args: unknown[]) => {
      if (refuse && n === "dnnl_primitive_create") return 3; // dnnl_unimplemented
      if (n.endsWith("destroy")) {
        const h = args[0] as bigint;
        if (gone.has(h) && !made.has(h)) {
          doubleFrees++;
          return 0;
        }
        gone.add(h);
        made.delete(h);
        return saved[i](...args);
      }
      const status = saved[i](...args);
      if (status === 0) {
        const h = (args[0] as BigUint64Array)[0];
        made.add(h);
        gone.delete(h); // (an address handed out again)
      }
      return status;
    };
  });
  try {
    const result = fn();
    return { live: made.size, result, doubleFrees };
  } finally {
    names.forEach((n, i) => {
      d[n] = saved[i];
    });
  }
}
