/**
 * Tests of the native path need a BLAS library. Where none loads (a bare machine with
 * Node and npm only) they skip, with one line saying what to install; where CI installed
 * one (BACKPLANE_EXPECT_BLAS=1, set by .ci/run) a missing library fails them instead.
 */
import { ready } from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { readEnv } from "@backplane/core/cpu";
import { it } from "vitest";
import { NATIVE_BACKEND } from "../src/index.ts";

await ready(NATIVE_BACKEND).catch(() => {});
const backend = getBackend(NATIVE_BACKEND);
const loaded = backend?.initState === "ready";
const required = readEnv("BACKPLANE_EXPECT_BLAS") === "1";
if (!loaded && !required)
  console.log(
    `[backend-cpu-mkl] native BLAS tests skipped: ${backend?.initError ?? "not registered"}`,
  );

/** Whether the native kernels run here (or CI requires them): else tests leave them out. */
export const nativeRuns = loaded || required;

/** `it` where a native BLAS loaded (or CI requires one); `it.skip` on a machine without. */
export const itNative = (loaded || required ? it : it.skip) as typeof it.skip;
