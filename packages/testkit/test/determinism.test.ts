/**
 * The determinism check itself: a kernel that claims determinism but whose bits depend on
 * the thread count (or on the run) is reported, and an honest one passes.
 */
import { ArgumentError, fromFloat64, getFlag, type Tensor } from "@backplane/core";
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

registerBackend(
  defineBackend({
    name: "determinism-thrower",
    packageName: "@example/determinism-thrower",
    devices: ["cpu"],
    isAvailable: () => ({ available: true }),
    kernels: [
      {
        op: "relu",
        name: "probe-always-throws",
        device: "cpu",
        dtypes: ["float64"],
        deterministic: true,
        priority: -50,
        run: () => {
          throw new RangeError("probe kernel failure");
        },
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

  it("a run that throws is a failure carrying its error, not a bit-identical result", async () => {
    const report = await runDeterminism("determinism-thrower", { threads: [1, 2] });
    expect(report.results.length).toBeGreaterThan(0);
    for (const r of report.results) {
      expect(r.status).toBe("threw");
      expect(r.error).toBeInstanceOf(Error);
      expect(r.detail).toMatch(/^1 threads, run 1 threw \w+: .*probe kernel failure/);
    }
    expect(report.failed).toHaveLength(report.results.length);
    expect(String(report)).toMatch(/THREW relu \[probe-always-throws/);
    expect(() => report.assertPassed()).toThrow(/probe kernel failure/);
  });

  it("refuses bad options and unknown names with an ArgumentError; takes a package name", async () => {
    const bad: [unknown, unknown, RegExp][] = [
      [
        "determinism-probe",
        { threads: [-1] },
        /threads must be a non-empty array of integers >= 1/,
      ],
      ["determinism-probe", { threads: [] }, /threads must be/],
      ["determinism-probe", { repeats: 0 }, /repeats must be an integer >= 1, got 0/],
      ["determinism-probe", null, /options must be an object, got null/],
      ["determinism-probe", { ops: ["rleu"] }, /no kernel for op "rleu"; did you mean relu\?/],
      ["determinism-probe", { kernels: ["probe-honset"] }, /did you mean probe-honest\?/],
      ["no-such-backend", {}, /no backend "no-such-backend" is registered/],
      ["determinism-prob", {}, /did you mean determinism-probe\?/],
    ];
    for (const [name, opts, text] of bad) {
      const p = runDeterminism(name as string, opts as never);
      await expect(p).rejects.toBeInstanceOf(ArgumentError);
      await expect(p).rejects.toThrow(text);
    }
    const byPackage = await runDeterminism("@example/determinism-thrower", { threads: [1] });
    expect(byPackage.backend).toBe("determinism-thrower");
  });
});
