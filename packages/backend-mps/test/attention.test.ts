/**
 * mps-sdpa through the CPU stand-in where it had parted from PyTorch 2.13: head dim 0
 * (every score 0 at any scale: the mean of v, where 0 * inf gave NaN), and key/value batch
 * dims that broadcast against each other.
 */
import { kernelPriority, randn, scaledDotProductAttention, type Tensor } from "@backplane/core";
import { beforeAll, describe, expect, it } from "vitest";
import { loadHelper } from "../src/index.ts";
import { standin } from "./helpers.ts";

const OP = "scaledDotProductAttention";
/** float32 (the stand-in accumulates in double) against the float64 reference, relative. */
const TOL = 2e-5;
const helper = standin();
const it_ = helper.path ? it : it.skip;

/** The attention of seeded float32 operands on mps (forced kernel) and on cpu (math). */
async function both(shapes: number[][], opts: object): Promise<[Float64Array, Float64Array]> {
  const run = async (dev: string, kernel: string) => {
    const ts = shapes.map((s, i) => {
      const t = randn(s, { seed: 50 + i });
      if (dev === "cpu") return t;
      const m = t.to(dev);
      t.dispose();
      return m;
    }) as [Tensor, Tensor, Tensor];
    using _ = kernelPriority(OP, [kernel]);
    const o = scaledDotProductAttention(...ts, opts);
    const out = Float64Array.from((await o.data()) as ArrayLike<number>);
    for (const t of [...ts, o]) t.dispose();
    return out;
  };
  return [await run("mps", "mps-sdpa"), await run("cpu", "math")];
}

const relErr = (a: Float64Array, b: Float64Array) => {
  const m = b.reduce((x, y) => Math.max(x, Math.abs(y)), 0) || 1;
  return a.reduce((x, y, i) => Math.max(x, Math.abs(y - b[i]) / m), 0);
};

describe("mps-sdpa (CPU stand-in) as PyTorch 2.13", () => {
  beforeAll(async () => {
    if (helper.path) await loadHelper(helper.path);
  });

  it_("head dim 0 gives the mean of v at any scale, not NaN", async () => {
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

  it_("broadcasts key and value batch dims against each other (GQA too)", async () => {
    const [a, b] = await both(
      [
        [2, 3, 5, 8],
        [2, 3, 40, 8],
        [1, 3, 40, 4],
      ],
      {},
    );
    expect(relErr(a, b)).toBeLessThan(TOL);
    const [c, d] = await both(
      [
        [2, 4, 5, 8],
        [2, 2, 40, 8],
        [2, 1, 40, 4],
      ],
      { enableGqa: true },
    );
    expect(relErr(c, d)).toBeLessThan(TOL);
  });
});
