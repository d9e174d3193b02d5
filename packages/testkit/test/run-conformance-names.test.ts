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
