/**
 * torch.linalg.solve's left=False (X A = B) and lu_factor's pivot option, which were
 * ignored: solve(A, B, { left: false }) returned the X of A X = B, and luFactor(A,
 * { pivot: false }) a pivoted LU. Shapes and refusals as PyTorch 2.13 gives them; values
 * by the residual X A - B in float64 on fresh random inputs.
 */
import {
  ArgumentError,
  luFactor,
  matmul,
  randn,
  ShapeError,
  solve,
  type Tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

/** max |X A - B| / max |B|. */
function residual(x: Tensor, a: Tensor, b: Tensor): number {
  const xa = matmul(x, a);
  const got = xa.toFloat64();
  const want = b.toFloat64();
  xa.dispose();
  let worst = 0;
  let scale = 0;
  // X A has the broadcast batch; B repeats along its leading dims (it broadcast there).
  for (let i = 0; i < got.length; i++) {
    const w = want[i % want.length]!;
    worst = Math.max(worst, Math.abs(got[i]! - w));
    scale = Math.max(scale, Math.abs(w));
  }
  return worst / scale;
}

describe("solve with left: false (X A = B)", () => {
  // [A shape, B shape, X shape as torch gives it]
  const cases: [number[], number[], number[]][] = [
    [
      [4, 4],
      [2, 4],
      [2, 4],
    ],
    [
      [4, 4],
      [4, 4],
      [4, 4],
    ],
    [
      [5, 5],
      [1, 5],
      [1, 5],
    ],
    [
      [3, 4, 4],
      [3, 2, 4],
      [3, 2, 4],
    ],
    [
      [2, 1, 4, 4],
      [3, 5, 4],
      [2, 3, 5, 4],
    ],
    [
      [1, 1],
      [7, 1],
      [7, 1],
    ],
  ];
  for (const [as, bs, xs] of cases)
    it(`A [${as}], B [${bs}] gives X [${xs}] with X A = B`, () => {
      const a = randn(as, { seed: 3, dtype: "float64" });
      const b = randn(bs, { seed: 4, dtype: "float64" });
      const x = solve(a, b, { left: false });
      expect(x.shape).toEqual(xs);
      expect(residual(x, a, b)).toBeLessThan(1e-10);
      // left: true is still A X = B, a different X.
      if (bs.length >= 2 && bs[bs.length - 2] === as[as.length - 1]) {
        const y = solve(a, b);
        expect(Array.from(y.toFloat64())).not.toEqual(Array.from(x.toFloat64()));
        y.dispose();
      }
      for (const t of [a, b, x]) t.dispose();
    });

  it("works on transposed views of A and B", () => {
    const a = randn([6, 6], { seed: 8, dtype: "float64" });
    const b = randn([6, 3], { seed: 9, dtype: "float64" });
    const [at, bt] = [a.transpose(0, 1), b.transpose(0, 1)];
    const x = solve(at, bt, { left: false });
    expect(x.shape).toEqual([3, 6]);
    expect(residual(x, at, bt)).toBeLessThan(1e-10);
    for (const t of [a, b, at, bt, x]) t.dispose();
  });

  it("refuses what torch refuses, with typed errors", () => {
    const a = randn([4, 4], { seed: 1, dtype: "float64" });
    const batched = randn([3, 4, 4], { seed: 1, dtype: "float64" });
    const cases: [Tensor, Tensor, RegExp][] = [
      [a, randn([4], { seed: 2, dtype: "float64" }), /reads as a vector/],
      // torch: "Incompatible shapes of A and B for the equation XA = B (4x4 and 4x1)"
      [batched, randn([3, 4], { seed: 2, dtype: "float64" }), /reads as vectors/],
      [a, randn([2, 5], { seed: 2, dtype: "float64" }), /must have 4 columns/],
    ];
    for (const [x, y, msg] of cases) {
      expect(() => solve(x, y, { left: false })).toThrow(ShapeError);
      expect(() => solve(x, y, { left: false })).toThrow(msg);
    }
    expect(() => solve(a, a, { left: null as unknown as boolean })).toThrow(ArgumentError);
    expect(() => solve(a, a, { right: true } as never)).toThrow(ArgumentError);
  });
});

describe("luFactor's pivot option", () => {
  it("pivot: true is the default; pivot: false is refused as torch refuses it on the CPU", () => {
    const a = randn([5, 5], { seed: 5, dtype: "float64" });
    const base = luFactor(a);
    const same = luFactor(a, { pivot: true });
    expect(Array.from(same.LU.toFloat64())).toEqual(Array.from(base.LU.toFloat64()));
    expect(() => luFactor(a, { pivot: false })).toThrow(ArgumentError);
    expect(() => luFactor(a, { pivot: false })).toThrow(/without pivoting\) is not implemented/);
    expect(() => luFactor(a, { pivoting: false } as never)).toThrow(ArgumentError);
    for (const t of [a, base.LU, base.pivots, same.LU, same.pivots]) t.dispose();
  });
});
