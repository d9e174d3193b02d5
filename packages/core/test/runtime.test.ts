import { runtime } from "@backplane/core";
import { host } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";

const g = host;

describe("runtime detection", () => {
  it("names the runtime the tests run on", () => {
    const expected = g.Bun ? "bun" : g.Deno ? "deno" : "node";
    const r = runtime();
    expect(r.name).toBe(expected);
    expect(r.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("sees WASM SIMD and threads (every runtime here has both)", () => {
    const r = runtime();
    expect(r.wasm).toBe(true);
    expect(r.wasmSimd).toBe(true);
    expect(r.wasmThreads).toBe(true);
    expect(r.crossOriginIsolated).toBe(true);
    expect(r.hardwareConcurrency).toBeGreaterThan(0);
  });
});
