/**
 * float16 and bfloat16 on the CPU stand-in: results rounded as torch rounds them, and
 * views of 2-byte elements at odd element offsets read right.
 */
import {
  add,
  conv2d,
  type DType,
  matmul,
  mul,
  randn,
  type Tensor,
  tensor,
  withKernelPriority,
} from "@backplane/core";
import { beforeAll, describe, expect, it } from "vitest";
import { loadHelper } from "../src/index.ts";
import { standin } from "./helpers.ts";
import { view } from "./views.ts";

const built = standin();
const d = built.path ? describe : describe.skip;

/** The raw 16-bit words of a half tensor on any device, in logical order. */
function bits(t: Tensor): number[] {
  const c = (t.device === "cpu" ? t : t.to("cpu")).contiguous();
  return [...(c.hostData() as Uint16Array).subarray(0, c.numel)];
}

/** `shape` read from a fresh random storage at an odd element offset, with padded rows. */
function oddView(shape: [number, number], dtype: DType, seed: number, device: string): Tensor {
  const [rows, cols] = shape;
  const offset = 3;
  const base = randn([offset + rows * (cols + 1)], { dtype, seed });
  const t = view(device === "cpu" ? base : base.to("mps"), shape, [cols + 1, 1], offset);
  return t;
}

d("half precision on the mps stand-in", () => {
  beforeAll(async () => {
    await loadHelper(built.path!);
  });

  // 1 + h + t, where 1 + h is a float16 (bfloat16) halfway point and t is below float32's
  // half-ulp: torch sums in float32 (to 1 + h) and rounds that tie to even, 1. Rounding the
  // exact sum once would give the next value up. Bits from torch 2.13 (a @ b and conv2d).
  const halfway = [
    { dtype: "float16" as const, h: 2 ** -11, t: 2 ** -14, torchBits: 0x3c00 },
    { dtype: "bfloat16" as const, h: 2 ** -8, t: 2 ** -28, torchBits: 0x3f80 },
  ];
  for (const { dtype, h, t, torchBits } of halfway)
    it(`${dtype}: a sum just past a halfway point rounds as torch's float32 sum does`, () => {
      const a = tensor([[1, h, 2 ** -12]], { dtype });
      const b = tensor([[1], [1], [t]], { dtype });
      const exact = matmul(a.astype("float64"), b.astype("float64")).toFloat64()[0]!;
      expect(exact).toBeGreaterThan(1 + h); // just past the tie: a real double-rounding case
      expect(bits(matmul(a.to("mps"), b.to("mps")))).toEqual([torchBits]);
      const x = a.reshape([1, 3, 1, 1]).to("mps");
      const w = b.reshape([1, 3, 1, 1]).to("mps");
      expect(bits(conv2d(x, w))).toEqual([torchBits]);
    });

  for (const dtype of ["float16", "bfloat16"] as const)
    it(`${dtype}: odd-offset views give the reference's bits`, () => {
      const on = (device: string) => ({
        a: oddView([5, 7], dtype, 11, device),
        b: oddView([7, 3], dtype, 12, device),
        c: oddView([5, 7], dtype, 13, device),
      });
      const cpu = on("cpu");
      const mps = on("mps");
      const ref = <T>(op: string, f: () => T): T => withKernelPriority(op, ["reference"], f);
      expect(bits(matmul(mps.a, mps.b))).toEqual(bits(ref("matmul", () => matmul(cpu.a, cpu.b))));
      expect(bits(matmul(mps.b.transpose(), mps.a.transpose()))).toEqual(
        bits(ref("matmul", () => matmul(cpu.b.transpose(), cpu.a.transpose()))),
      );
      expect(bits(add(mps.a, mps.c))).toEqual(bits(ref("add", () => add(cpu.a, cpu.c))));
      expect(bits(mul(mps.a, mps.c.transpose().transpose()))).toEqual(
        bits(ref("mul", () => mul(cpu.a, cpu.c))),
      );
    });
});
