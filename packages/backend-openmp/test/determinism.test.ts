/**
 * The testkit's determinism check on every CPU backend with the worker pool: each kernel
 * that claims determinism gives the same bits at 1, 2 and the machine's thread count and
 * on repeated runs, on every testkit case, in whichever runtime runs this file (npm test
 * runs it on Node, Bun and Deno).
 */
import "@backplane/backend-cpu-mkl";
import "@backplane/backend-nnpack";
import "../src/index.ts";
import { ready, runtime } from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { runDeterminism } from "@backplane/testkit";
import { describe, expect, it } from "vitest";

const SLOW = 300_000;

describe("determinism (testkit) with the worker pool", () => {
  for (const backend of ["cpu-wasm", "cpu-blas", "cpu-dnnl", "nnpack"]) {
    it(
      `${backend}: every deterministic kernel is bit-identical across thread counts and runs`,
      async () => {
        await ready().catch(() => {});
        if (getBackend(backend)?.initState !== "ready") {
          console.log(
            `[backend-openmp] determinism of ${backend} skipped: ${getBackend(backend)?.initError}`,
          );
          return;
        }
        const report = await runDeterminism(backend);
        console.log(`[backend-openmp] ${runtime().name}: ${report}`);
        report.assertPassed();
        expect(report.results.filter((r) => r.status === "same").length).toBeGreaterThan(10);
        expect(report.threads).toContain(2);
      },
      SLOW,
    );
  }
});
