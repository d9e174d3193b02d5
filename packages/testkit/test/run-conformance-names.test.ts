/**
 * runConformance takes the backend's name or its package's (issue 34: the docs' example
 * passed the package name and got a plain Error); an unknown name is an ArgumentError that
 * lists the registered backends.
 */
import { ArgumentError } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { runConformance } from "../src/index.ts";

describe("runConformance's backend argument", () => {
  it("the package name finds the backend it registered", async () => {
    const byPackage = await runConformance("@backplane/core", { ops: ["relu"], views: false });
    const byName = await runConformance("reference", { ops: ["relu"], views: false });
    expect(byPackage.backend).toBe("reference");
    expect(byPackage.passed).toBe(byName.passed);
    expect(byPackage.passed).toBeGreaterThan(0);
  });

  it("an unknown name is an ArgumentError naming what is registered", async () => {
    await expect(runConformance("backend-naive")).rejects.toThrow(ArgumentError);
    await expect(runConformance("backend-naive")).rejects.toThrow(
      /Registered: .*reference \(@backplane\/core\)/,
    );
  });
});

describe("runConformance's options", () => {
  it("null options and misspelt ops/kernels are ArgumentErrors, not a pass with 0 results", async () => {
    const bad: [unknown, RegExp][] = [
      [null, /options must be an object, got null/],
      [{ ops: ["rleu"] }, /no kernel for op "rleu"; did you mean relu\?/],
      [{ ops: "relu" }, /options.ops must be an array of names/],
      [{ kernels: ["no-such-kernel-xyz"] }, /no kernel named "no-such-kernel-xyz"/],
    ];
    for (const [opts, text] of bad) {
      const p = runConformance("reference", opts as never);
      await expect(p).rejects.toBeInstanceOf(ArgumentError);
      await expect(p).rejects.toThrow(text);
    }
  });
});

describe("testkit cases", () => {
  it("a transposed case leaves only its view alive (the base tensor is disposed)", async () => {
    const { CASES } = await import("../src/cases.ts");
    const { makeRng } = await import("../src/random.ts");
    const { memoryStats } = await import("@backplane/core");
    const c = CASES.matmul.find((x) => x.name.startsWith("transposed views"))!;
    const before = memoryStats("cpu").allocatedBytes;
    const args = c.make("float32", makeRng(1)) as { dispose(): void }[];
    for (const t of args) t.dispose();
    expect(memoryStats("cpu").allocatedBytes).toBe(before);
  });
});
