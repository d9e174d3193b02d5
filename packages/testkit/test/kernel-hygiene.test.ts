/**
 * Conformance fails a kernel that writes into an input's storage (inside the view or in a
 * gap of it), unless the kernel declares inPlace, and one that leaves tensors alive on every
 * call; honest kernels pass.
 */
import { fromFloat64, type Tensor, zeros } from "@backplane/core";
import { defineBackend, registerBackend, type UnaryParams } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { runConformance } from "../src/index.ts";

const relu = (x: Tensor) =>
  fromFloat64(
    x.toFloat64().map((v) => Math.max(0, v)),
    x.shape,
    x.dtype,
  );

/** Writes 0 into the first byte of the input's storage: inside a view, or before its offset. */
function scribble(x: Tensor): void {
  const st = x.storage;
  st.memory.upload(st.handle, 0, new Uint8Array(1));
}

const leaked: Tensor[] = [];

registerBackend(
  defineBackend({
    name: "integrity-probe",
    devices: ["cpu"],
    isAvailable: () => ({ available: true }),
    kernels: [
      {
        op: "relu",
        name: "probe-scribbles",
        device: "cpu",
        dtypes: ["float32"],
        deterministic: true,
        priority: -50,
        run: (p: UnaryParams) => {
          const out = relu(p.x);
          scribble(p.x);
          return out;
        },
      },
      {
        op: "relu",
        name: "probe-leaks",
        device: "cpu",
        dtypes: ["float32"],
        deterministic: true,
        priority: -50,
        run: (p: UnaryParams) => {
          leaked.push(zeros([4])); // a scratch tensor it never disposes
          return relu(p.x);
        },
      },
      {
        op: "relu",
        name: "probe-in-place",
        device: "cpu",
        dtypes: ["float32"],
        deterministic: true,
        inPlace: true,
        priority: -50,
        // Writes its result into the input and returns it, as it declares.
        run: (p: UnaryParams) => {
          // Elementwise over the storage (the cases without views cover it whole).
          const d = p.x.hostData() as Float32Array;
          for (let i = 0; i < d.length; i++) d[i] = Math.max(0, d[i]!);
          return p.x;
        },
      },
      {
        op: "relu",
        name: "probe-clean",
        device: "cpu",
        dtypes: ["float32"],
        deterministic: true,
        priority: -50,
        run: (p: UnaryParams) => relu(p.x),
      },
    ] as never[],
  }),
);

describe("conformance checks that kernels leave inputs as they were and keep nothing alive", () => {
  it("a kernel writing into its input's storage fails with the input named", async () => {
    const r = await runConformance("integrity-probe", {
      ops: ["relu"],
      kernels: ["probe-scribbles"],
      dtypes: ["float32"],
    });
    const ran = r.results.filter((x) => x.kernel === "probe-scribbles");
    expect(ran.length).toBeGreaterThan(0);
    // Every case whose input storage's first byte was not already 0 is caught.
    expect(ran.filter((x) => x.status === "fail").length).toBeGreaterThan(0);
    for (const x of ran.filter((y) => y.status === "fail"))
      expect(x.message).toBe("the kernel wrote into input 0 (its storage's bytes changed)");
  });

  it("a kernel leaving a tensor alive per call fails", async () => {
    const r = await runConformance("integrity-probe", {
      ops: ["relu"],
      kernels: ["probe-leaks"],
      dtypes: ["float32"],
    });
    const ran = r.results.filter((x) => x.kernel === "probe-leaks" && x.status !== "skipped");
    expect(ran.length).toBeGreaterThan(0);
    for (const x of ran)
      expect(x.message).toBe(
        "the kernel leaves 1 tensor storage(s) alive per call (outputs disposed)",
      );
    for (const t of leaked.splice(0)) t.dispose();
  });

  it("a kernel declaring inPlace may write into its input and return it", async () => {
    const r = await runConformance("integrity-probe", {
      ops: ["relu"],
      kernels: ["probe-in-place"],
      dtypes: ["float32"],
      views: false,
    });
    expect(r.failed).toEqual([]);
    expect(r.results.filter((x) => x.status === "pass").length).toBeGreaterThan(0);
  });

  it("the same kernel without the write or the leak passes", async () => {
    const r = await runConformance("integrity-probe", {
      ops: ["relu"],
      kernels: ["probe-clean"],
      dtypes: ["float32"],
    });
    expect(r.failed).toEqual([]);
    expect(r.results.filter((x) => x.status === "pass").length).toBeGreaterThan(0);
  });
});
