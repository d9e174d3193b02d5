/**
 * einsum's parse against torch.einsum (2.13): "..." covering 32 or more dimensions. Its
 * labels were the control characters \u0001.., and the 32nd onwards (" ", "!", ...) were
 * counted as named indices by the implicit output: "..." on a 40-D tensor gave 49 dims.
 */
import {
  ArgumentError,
  einsum,
  fromFloat64,
  randn,
  Tensor,
  withKernelPriority,
} from "@backplane/core";
import { getKernel, ops } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

describe("einsum with a long ellipsis", () => {
  it("keeps every dimension in the implicit output, as torch (rank 31 to 64)", () => {
    for (const rank of [31, 32, 40, 64]) {
      // torch.einsum("...", t).shape == t.shape; "...i" (implicit) -> [...batch, i]
      const shape = Array.from({ length: rank }, (_, d) => (d === 0 ? 2 : d === rank - 1 ? 3 : 1));
      const t = randn(shape, { seed: rank, dtype: "float64" });
      const p = ops.einsum.prepare("...", t);
      expect(p.output, `rank ${rank}`).toHaveLength(rank);
      const y = withKernelPriority("einsum", ["reference"], () => einsum("...", t));
      expect(y.shape).toEqual(shape);
      // Values are the input's exactly (float64 in, float64 out: no rounding).
      expect(Array.from(y.toFloat64())).toEqual(Array.from(t.toFloat64()));
      const moved = einsum("i...", t);
      expect(moved.shape).toEqual([...shape.slice(1), 2]);
      for (const x of [y, moved, t]) x.dispose();
    }
  });

  it("the reference kernel still sums what the ellipsis does not name", () => {
    const shape = Array.from({ length: 33 }, (_, d) => (d < 2 ? 2 : 1));
    const t = randn(shape, { seed: 7, dtype: "float64" });
    const ref = getKernel("einsum", "reference")!;
    const y = ref.run(ops.einsum.prepare("i...->i", t)) as ReturnType<typeof randn>;
    const v = t.toFloat64();
    expect(y.shape).toEqual([2]);
    expect(Math.abs(y.toFloat64()[0] - (v[0] + v[1]))).toBeLessThan(1e-15);
    expect(Math.abs(y.toFloat64()[1] - (v[2] + v[3]))).toBeLessThan(1e-15);
    y.dispose();
    t.dispose();
  });
});

/**
 * The reference kernel against torch.einsum (2.13, float64) on non-finite values and
 * signed zeros. torch sums an index only one operand holds within that operand first
 * (sum_j a_i b_j c_k = a_i (sum_j b_j) c_k); the loop nest alone added inf * b_j of both
 * signs into NaN. And torch writes a permutation's, diagonal's or outer product's -0 as -0.
 */
describe("einsum reference kernel: inf and -0 as torch", () => {
  const ref = getKernel("einsum", "reference")!;
  const f64 = (values: number[], shape: number[]) =>
    fromFloat64(Float64Array.from(values), shape, "float64");
  const run = (equation: string, ...operands: Tensor[]): number[] => {
    const y = ref.run(ops.einsum.prepare(equation, ...operands)) as Tensor;
    const values = Array.from(y.toFloat64());
    y.dispose();
    return values;
  };

  it("sums an operand's own index before multiplying, so an inf stays inf", () => {
    const a = f64([Number.POSITIVE_INFINITY, -1.5], [2]);
    const b = f64([0.75, -2.0, 0.5], [3]);
    const c = f64([1.25, -0.5], [2]);
    // torch.einsum("i,j,k->ik", a, b, c)
    expect(run("i,j,k->ik", a, b, c)).toEqual([
      Number.NEGATIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      1.40625,
      -0.5625,
    ]);
    const d = f64([1.0, Number.NEGATIVE_INFINITY, 2.0, 0.5, -1.0, 3.0], [2, 3]);
    const e = f64([0.25, -0.75, 1.5, -0.5], [2, 2]);
    expect(run("ij,kl->ik", d, e)).toEqual([
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      -1.25,
      2.5,
    ]);
    const g = f64([Number.POSITIVE_INFINITY, 1.0], [2]);
    expect(run("i,j->", b, g)).toEqual([Number.NEGATIVE_INFINITY]);
    for (const t of [a, b, c, d, e, g]) t.dispose();
  });

  it("keeps finite results with own indices, diagonals and a transposed operand (torch values)", () => {
    // torch: a, b, c = randn(3, 4), randn(5), randn(4, 2, 2) (generator seed 11), a column-major.
    const a = [
      0.7376294517619426, 1.945929152496269, -0.6995416095669132, -1.3022973799235347,
      -0.5132622016467678, -0.26961956647214586, 0.2461846678351276, 0.48392529622643854,
      0.4504177998469279, -0.9568334238175672, 1.5011878764124935, -0.31357366864540154,
    ];
    const b = f64(
      [
        -0.23428438898919327, -1.0713092182066186, 0.16479844209512995, 0.11565449361668026,
        0.38340648063708543,
      ],
      [5],
    );
    const c = f64(
      [
        -1.1724706208069549, 0.6726287869593468, 0.9870015081316169, -1.3279542705962208,
        -1.1830647945389863, -1.1383773971753897, 0.8501625519309879, 2.3109229158069886,
        -1.9191085694380012, -0.7641882705016972, 0.12274320442767346, -1.3252201500281082,
        -1.315632657951852, -1.818836161403737, 1.2529401363476884, 0.39860194391097237,
      ],
      [4, 2, 2],
    );
    const aT = f64(
      Array.from({ length: 12 }, (_, k) => a[(k % 3) * 4 + Math.floor(k / 3)]),
      [4, 3],
    );
    aT.storage.retain();
    const view = new Tensor(aT.storage, "float64", [3, 4], [1, 3], 0); // a, transposed in memory
    const want = [
      0.07134022517375316, -2.5190007980290585, 0.1208775400455373, 0.048025218267544426,
      1.1965136929204827, 3.1597053669251904,
    ];
    const got = run("ij,k,jll->il", view, b, c);
    for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThan(1e-13);
    for (const t of [aT, view, b, c]) t.dispose();
  });

  it("writes -0 where nothing is summed and +0 where something is, as torch", () => {
    const z = f64([-0, 1.5, 0, 2.0, -0, -0], [2, 3]);
    // torch.einsum("ij->ji", z): [-0, 2, 1.5, -0, 0, -0]
    expect(run("ij->ji", z).map((v) => Object.is(v, -0))).toEqual([
      true,
      false,
      false,
      true,
      false,
      true,
    ]);
    const u = f64([-0, 2.0], [2]);
    const v = f64([1.0, -0, 0], [3]);
    // torch.einsum("i,j->ij", u, v): [-0, 0, -0, 2, -0, 0]
    expect(run("i,j->ij", u, v).map((x) => Object.is(x, -0))).toEqual([
      true,
      false,
      true,
      false,
      true,
      false,
    ]);
    const diag = f64([-0, 1, 2, -0], [2, 2]);
    expect(run("ii->i", diag).map((x) => Object.is(x, -0))).toEqual([true, true]);
    // A sum of -0s is +0 in torch: einsum("ij->i", [[-0, -0], [-0, 0]]) == [0, 0].
    const s = f64([-0, -0, -0, 0], [2, 2]);
    expect(run("ij->i", s).map((x) => Object.is(x, -0))).toEqual([false, false]);
    for (const t of [z, u, v, diag, s]) t.dispose();
  });
});

describe("einsum parse errors", () => {
  it("point at an empty operand term, not past the inputs", () => {
    // torch.einsum(",ij->", ...) fails too: operand 0 has 2 dims, its term names none.
    const a = randn([3, 4], { seed: 1 });
    const caret = (equation: string): number => {
      try {
        ops.einsum.prepare(equation, a, a);
      } catch (e) {
        expect(e).toBeInstanceOf(ArgumentError);
        const lines = (e as Error).message.split("\n");
        expect(lines[0]).toMatch(/term names 0/);
        return lines[2].indexOf("^") - 2; // lines are indented by two spaces
      }
      throw new Error(`${equation} did not throw`);
    };
    expect(caret(",ij->")).toBe(0);
    expect(caret("ij,->")).toBe(3);
    a.dispose();
  });
});
