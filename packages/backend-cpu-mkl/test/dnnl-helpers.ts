/**
 * Tests of oneDNN need libdnnl.so.2. Where it does not load they skip, with one line
 * saying why; where CI installed it (BACKPLANE_EXPECT_DNNL=1, set by .ci/run) they fail.
 */
import { ready } from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { builtinModule, readEnv } from "@backplane/core/cpu";
import { it } from "vitest";
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
