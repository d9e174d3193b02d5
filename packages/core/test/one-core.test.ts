/**
 * One core per process (src/one-core.ts): what this copy publishes, the versions that may
 * join, and a tensor of another copy named as such. Two real copies installed side by
 * side (the same version joining, a breaking one refused) are scripts/consumer-test.mjs's
 * check, on Node, Bun and Deno.
 */
import { ArgumentError, matmul, tensor, version } from "@backplane/core";
import { describe, expect, it } from "vitest";
import { breakingPart, CORE_CONTRACT, oneCore } from "../src/one-core.ts";
import { TENSOR_BRAND } from "../src/tensor/tensor.ts";

describe("one core per process", () => {
  it("publishes this copy's version, contract and folder on the globalThis brand", () => {
    const claim = Reflect.get(globalThis, Symbol.for("@backplane/core")) as {
      version: string;
      contract: number;
      path: string;
    };
    expect(claim.version).toBe(version);
    expect(claim.contract).toBe(CORE_CONTRACT);
    expect(claim.path).toMatch(/packages\/core$/);
    // The same copy asking again gets what it published, whatever it passes.
    expect(oneCore({}, {}, {}).user).toBe(oneCore({ other: true }, {}, {}).user);
  });

  it("copies of one breaking version join: 0.x by its minor, then by the major", () => {
    expect(breakingPart("0.1.0")).toBe("0.1");
    expect(breakingPart("0.1.7")).toBe(breakingPart("0.1.0"));
    expect(breakingPart("0.2.0")).not.toBe(breakingPart("0.1.0"));
    expect(breakingPart("1.4.2")).toBe(breakingPart("1.0.0"));
    expect(breakingPart("2.0.0")).not.toBe(breakingPart("1.9.9"));
  });

  it("a tensor of another copy is named as one, with what to do", () => {
    const a = tensor([[1, 2]]);
    const foreign = { shape: [2, 1], dtype: "float32", [TENSOR_BRAND]: "0.2.0" };
    expect(() => matmul(a, foreign as never)).toThrow(ArgumentError);
    expect(() => matmul(a, foreign as never)).toThrow(
      /b is a Tensor of another copy of @backplane\/core \(version 0\.2\.0; this copy is .*npm dedupe/,
    );
    expect(() => matmul(a, {} as never)).toThrow(/must be a Tensor, got object/);
  });
});
