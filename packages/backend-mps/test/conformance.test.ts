/**
 * The testkit's conformance suite on device "mps" through the CPU stand-in helper: every
 * mps kernel on every case (inputs moved with t.to("mps"), new memory poisoned with NaN
 * bytes, results judged against the float64 reference), then the CPU fallback kernel on
 * every op with backends.mps.fallback on.
 */
import { backends, runtime, setLogHandler } from "@backplane/core";
import { runConformance, runDeterminism } from "@backplane/testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { resetFallbackWarnings } from "../src/fallback.ts";
import { loadHelper, MPS_BACKEND, mpsKernels } from "../src/index.ts";
import { standin } from "./helpers.ts";

/**
 * Worst relative error allowed (relative to the reference's largest magnitude). The
 * stand-in accumulates in double and rounds once to the dtype, so these are the dtype's
 * rounding with the testkit's default headroom; Metal's float accumulation on a Mac is
 * looser and is what bench/smoke.ts measures there.
 */
export const TOLERANCES = { float32: 2e-5, float16: 4e-3, bfloat16: 3e-2 };

const helper = standin();
const it_ = helper.path ? it : it.skip;

describe("conformance (testkit) on mps, through the CPU stand-in helper", () => {
  beforeAll(async () => {
    if (helper.path) await loadHelper(helper.path);
  });

  it_("every mps kernel passes runConformance", async () => {
    const report = await runConformance(MPS_BACKEND, {
      kernels: mpsKernels.map((k) => k.name),
      tolerances: TOLERANCES,
    });
    console.log(`[backend-mps] ${runtime().name}, stand-in: ${report}`);
    report.assertPassed();
    const ran = new Set(report.results.filter((r) => r.status === "pass").map((r) => r.op));
    for (const op of [
      "matmul",
      "conv2d",
      "softmax",
      "logSoftmax",
      "scaledDotProductAttention",
      "add",
      "mul",
      "relu",
      "gelu",
    ])
      expect(ran.has(op), op).toBe(true);
    for (const d of ["float32", "float16", "bfloat16"])
      expect(
        report.results.some((r) => r.dtype === d && r.status === "pass"),
        d,
      ).toBe(true);
  });

  it_("every mps kernel is bit-identical across runs (runDeterminism)", async () => {
    const report = await runDeterminism(MPS_BACKEND, {
      kernels: mpsKernels.map((k) => k.name),
      dtypes: ["float32", "float16"],
    });
    console.log(`[backend-mps] ${report}`);
    report.assertPassed();
    expect(report.results.filter((r) => r.status === "same").length).toBeGreaterThan(30);
  });

  it_("with mps.fallback on, every op runs on the CPU and passes too", async () => {
    backends.mps.fallback = true;
    const warnings: string[] = [];
    const prev = setLogHandler((_level, message) => warnings.push(message));
    resetFallbackWarnings();
    try {
      const report = await runConformance(MPS_BACKEND, {
        kernels: ["mps-cpu-fallback"],
        tolerances: TOLERANCES,
        badInputs: false,
      });
      console.log(`[backend-mps] fallback: ${report}`);
      report.assertPassed();
      expect(report.passed).toBeGreaterThan(100);
      // One warning per op, however many cases ran it.
      const ops = new Set(report.results.filter((r) => r.status === "pass").map((r) => r.op));
      expect(warnings.length).toBe(ops.size);
      for (const op of ops)
        expect(
          warnings.filter((w) => w.startsWith(`${op} has no mps kernel`)),
          op,
        ).toHaveLength(1);
    } finally {
      setLogHandler(prev);
      backends.mps.fallback = false;
    }
  });
});
