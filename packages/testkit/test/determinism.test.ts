/**
 * The determinism check itself: a kernel that claims determinism but whose bits depend on
 * the thread count (or on the run) is reported, and an honest one passes.
 */
import { fromFloat64, getFlag, type Tensor } from "@backplane/core";
import { defineBackend, registerBackend, type UnaryParams } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { runDeterminism } from "../src/index.ts";

let runs = 0;

registerBackend(
  defineBackend({
    name: "determinism-probe",
    devices: ["cpu"],
    isAvailable: () => ({ available: true }),
    kernels: [
      {
        op: "relu",
        name: "probe-by-threads",
        device: "cpu",
        dtypes: ["float32", "float64"],
        deterministic: true,
        priority: -50,
        // Claims determinism, but the last bits follow the thread count setting.
        run: (p: UnaryParams) => {
          const y = p.x
            .toFloat64()
            .map((v) => Math.max(0, v) * (1 + (getFlag("openmp.numThreads") as number) * 2 ** -40));
          return fromValues(y, p.x);
        },
      },
      {
        op: "gelu",
        name: "probe-by-run",
        device: "cpu",
        dtypes: ["float64"],
        deterministic: true,
        priority: -50,
        // Claims determinism, but every run differs.
        run: (p: UnaryParams) =>
          fromValues(
            p.x.toFloat64().map((v) => v + ++runs * 2 ** -30),
            p.x,
          ),
      },
      {
        op: "relu",
        name: "probe-honest",
        device: "cpu",
        dtypes: ["float64"],
        deterministic: true,
        priority: -50,
        run: (p: UnaryParams) =>
          fromValues(
            p.x.toFloat64().map((v) => Math.max(0, v)),
            p.x,
          ),
      },
    ] as never[],
  }),
);

function fromValues(values: Float64Array, like: Tensor): Tensor {
  return fromFloat64(values, like.shape, like.dtype);
}

describe("runDeterminism", () => {
  it("reports a kernel whose bits follow the thread count or the run, and passes an honest one", async () => {
    const report = await runDeterminism("determinism-probe", { threads: [1, 2] });
    const by = (k: string) => report.results.filter((r) => r.kernel === k);
    expect(by("probe-by-threads").some((r) => r.status === "differs")).toBe(true);
    expect(by("probe-by-threads").find((r) => r.status === "differs")?.detail).toMatch(
      /1 threads, run 1 differs from 2 threads, run 1/,
    );
    expect(by("probe-by-run").every((r) => r.status === "differs")).toBe(true);
    expect(by("probe-honest").length).toBeGreaterThan(0);
    expect(by("probe-honest").every((r) => r.status === "same")).toBe(true);
    expect(() => report.assertPassed()).toThrow(/determinism of determinism-probe failed/);
  });
});
