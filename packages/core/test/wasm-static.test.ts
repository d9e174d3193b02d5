/**
 * The CPU memory's static region: a WASM module claims the bytes its data segments
 * occupy when it loads; overlapping claims are a RegistrationError naming both modules.
 */
import { RegistrationError } from "@backplane/core";
import {
  builtinModule,
  claimStaticMemory,
  dataExtent,
  HEAP_BASE,
  host,
  staticClaims,
} from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";

const read = (rel: string): Uint8Array => {
  const url = new URL(rel, import.meta.url);
  if (host.Deno) return host.Deno.readFileSync(url);
  const fs = builtinModule<typeof import("node:fs")>("node:fs");
  return new Uint8Array(fs!.readFileSync(url));
};

describe("static data claims", () => {
  it("reads the data extent of real modules, inside the static region at their memoryBase", () => {
    for (const [file, base] of [
      ["../../backend-nnpack/wasm/conv.wasm", 20480],
      ["../../backend-cpu-mkl/wasm/kernels.nothreads.wasm", 12288],
    ] as const) {
      const extent = dataExtent(read(file));
      expect(extent, file).not.toBeUndefined();
      const [lo, hi] = extent as [number, number];
      expect(lo, file).toBe(base);
      expect(hi, file).toBeGreaterThan(lo);
      expect(hi, file).toBeLessThanOrEqual(HEAP_BASE);
    }
    // A module without static data claims nothing.
    expect(dataExtent(read("../../backend-openmp/wasm/runtime.wasm"))).toBeUndefined();
    expect(dataExtent(read("../../backend-cpu-mkl/wasm/gemm.wasm"))).toBeUndefined();
  });

  it("refuses overlapping claims and ranges past the static region; a module may claim again", () => {
    claimStaticMemory("test/a", 60000, 61000);
    claimStaticMemory("test/a", 60000, 61000); // reloaded: fine
    expect(() => claimStaticMemory("test/b", 60500, 62000)).toThrow(RegistrationError);
    expect(() => claimStaticMemory("test/b", 60500, 62000)).toThrow(
      /overlaps test\/a's \[60000, 61000\)/,
    );
    expect(() => claimStaticMemory("test/c", 65000, 70000)).toThrow(/past the static region/);
    claimStaticMemory("test/b", 61000, 62000); // adjacent is fine
    expect(staticClaims().map((c) => c.owner)).toEqual(
      expect.arrayContaining(["test/a", "test/b"]),
    );
  });
});
