/**
 * it.each / describe.each work on every runtime the tests run on: vitest (Node), bun:test,
 * and Deno through scripts/deno-vitest.ts (node:test has no .each; the shim adds it).
 */
import { describe, expect, it } from "vitest";

const seen: string[] = [];

describe.each([
  ["float32", 4],
  ["float64", 8],
])("dtype %s", (dtype, bytes) => {
  it.each([
    [1, 2],
    [3, 4],
  ])("adds %i and %i", (x, y) => {
    seen.push(`${dtype}:${x}+${y}`);
    expect(x + y).toBe(x === 1 ? 3 : 7);
    expect(bytes).toBe(dtype === "float32" ? 4 : 8);
  });
});

it.each([5, 6])("a scalar case %d", (v) => {
  seen.push(`scalar:${v}`);
  expect(v).toBeGreaterThan(4);
});

it("ran every case above once", () => {
  expect([...seen].sort()).toEqual(
    ["float32:1+2", "float32:3+4", "float64:1+2", "float64:3+4", "scalar:5", "scalar:6"].sort(),
  );
});
