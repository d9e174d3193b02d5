/**
 * wgsl-sdpa-tiled where it had parted from PyTorch 2.13: head dim 0 (every score 0 at any
 * scale, the mean of v; 0 * inf = NaN before), and key/value batch dims that broadcast.
 */
import {
  DeviceError,
  kernelPriority,
  randn,
  scaledDotProductAttention,
  type Tensor,
} from "@backplane/core";
import { describe, expect } from "vitest";
import { gpuIt, relErr, values } from "./helpers.ts";

const OP = "scaledDotProductAttention";
/** float32 against the float64 reference, relative to its largest magnitude. */
const TOL = 2e-5;

/** The attention of these seeded float32 operands on webgpu (forced kernel) and on cpu (math). */
async function both(shapes: number[][], opts: object): Promise<[Float64Array, Float64Array]> {
  const make = (dev: string) =>
    shapes.map((s, i) => {
      const t = randn(s, { seed: 30 + i });
      if (dev === "cpu") return t;
      const m = t.to(dev);
      t.dispose();
      return m;
    }) as [Tensor, Tensor, Tensor];
  const run = async (dev: string, kernel: string) => {
    const [q, k, v] = make(dev);
    using _ = kernelPriority(OP, [kernel]);
    const o = scaledDotProductAttention(q, k, v, opts);
    const out = await values(o);
    for (const t of [q, k, v, o]) t.dispose();
    return out;
  };
  return [await run("webgpu", "wgsl-sdpa-tiled"), await run("cpu", "math")];
}

describe("wgsl-sdpa-tiled as PyTorch 2.13", () => {
  gpuIt("head dim 0 gives the mean of v at any scale, not NaN", async () => {
    for (const opts of [{}, { scale: 2 }]) {
      const [got, want] = await both(
        [
          [2, 3, 0],
          [2, 5, 0],
          [2, 5, 4],
        ],
        opts,
      );
      expect(got.every(Number.isFinite)).toBe(true);
      expect(relErr(got, want)).toBeLessThan(TOL);
    }
  });

  gpuIt("broadcasts key and value batch dims against each other (GQA too)", async () => {
    const [a, b] = await both(
      [
        [2, 3, 5, 8],
        [2, 3, 40, 8],
        [1, 3, 40, 4],
      ],
      {},
    );
    expect(relErr(a, b)).toBeLessThan(TOL);
    const opts = { enableGqa: true };
    const [c, d] = await both(
      [
        [2, 4, 5, 8],
        [2, 2, 40, 8],
        [2, 1, 40, 4],
      ],
      opts,
    );
    expect(relErr(c, d)).toBeLessThan(TOL);
  });

  gpuIt("a mask on another device is a DeviceError that says to move it", async () => {
    const [q, k, v] = [
      [1, 2, 5, 8],
      [1, 2, 7, 8],
      [1, 2, 7, 4],
    ].map((s, i) => randn(s, { seed: 40 + i }).to("webgpu"));
    const mask = randn([5, 7], { seed: 43 });
    let caught: unknown;
    try {
      scaledDotProductAttention(q, k, v, { attnMask: mask });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(DeviceError);
    expect((caught as Error).message).toMatch(/attnMask is on cpu .*query is on webgpu.*\.to\(\)/);
    for (const t of [q, k, v, mask]) t.dispose();
  });
});
