/**
 * multiHeadAttention on webgpu tensors: the core's compositions registered for the device,
 * each step on the WGSL kernels, against the float64 reference on the cpu. float32 on the
 * GPU: 2e-5 of the output's largest magnitude (products of up to E = 24 terms, a softmax
 * over up to 13 keys).
 */
import {
  explain,
  kernelPriority,
  type MhaOptions,
  multiHeadAttention,
  randn,
  type Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect } from "vitest";
import { gpuIt, relErr, values } from "./helpers.ts";

const TOL = 2e-5;

interface Case {
  name: string;
  batch: number | null;
  L: number;
  S: number;
  E: number;
  heads: number;
  self: boolean;
  bias: boolean;
  mask?: "bool" | "additive" | "causal";
}

const CASES: Case[] = [
  {
    name: "self-attention (fast path), batch 2, biases",
    batch: 2,
    L: 7,
    S: 7,
    E: 24,
    heads: 3,
    self: true,
    bias: true,
  },
  {
    name: "cross-attention (slow path), unbatched",
    batch: null,
    L: 5,
    S: 13,
    E: 16,
    heads: 4,
    self: false,
    bias: true,
  },
  {
    name: "no biases, one head, bool mask",
    batch: 1,
    L: 6,
    S: 9,
    E: 8,
    heads: 1,
    self: false,
    bias: false,
    mask: "bool",
  },
  {
    name: "additive mask, batch 3",
    batch: 3,
    L: 4,
    S: 11,
    E: 12,
    heads: 2,
    self: false,
    bias: true,
    mask: "additive",
  },
  {
    name: "causal self-attention",
    batch: 2,
    L: 9,
    S: 9,
    E: 16,
    heads: 2,
    self: true,
    bias: true,
    mask: "causal",
  },
];

/** The case's inputs as float64 cpu tensors (the reference's) and float32 webgpu ones. */
function inputs(
  c: Case,
  seed: number,
): { cpu: [Tensor[], MhaOptions]; gpu: [Tensor[], MhaOptions] } {
  const lead = c.batch === null ? [] : [c.batch];
  // Weights at 1/sqrt(E), as torch's xavier init, keep the scores near 1.
  const f64 = (shape: number[], s: number, scale = 1) => {
    const r = randn(shape, { seed: seed + s, dtype: "float64" });
    const t = tensor(
      Array.from(r.toFloat64(), (x) => x * scale),
      { shape, dtype: "float64" },
    );
    r.dispose();
    return t;
  };
  const q = f64([...lead, c.L, c.E], 1);
  const k = c.self ? q : f64([...lead, c.S, c.E], 2);
  const v = c.self ? q : f64([...lead, c.S, c.E], 3);
  const opts: MhaOptions = {
    inProjWeight: f64([3 * c.E, c.E], 4, c.E ** -0.5),
    inProjBias: c.bias ? f64([3 * c.E], 5) : null,
    outProjWeight: f64([c.E, c.E], 6, c.E ** -0.5),
    outProjBias: c.bias ? f64([c.E], 7) : null,
    numHeads: c.heads,
  };
  if (c.mask === "causal") opts.isCausal = true;
  if (c.mask === "bool")
    opts.attnMask = tensor(
      Array.from({ length: c.L * c.S }, (_, i) => i % c.S <= (i * 7) % c.S || i % c.S === 0),
      { shape: [c.L, c.S] },
    );
  if (c.mask === "additive") opts.attnMask = f64([c.L, c.S], 8);
  const toGpu = (t: Tensor) => (t.dtype === "bool" ? t : t.astype("float32")).to("webgpu");
  const gpuOpts: MhaOptions = { ...opts };
  for (const key of [
    "inProjWeight",
    "inProjBias",
    "outProjWeight",
    "outProjBias",
    "attnMask",
  ] as const) {
    const t = opts[key];
    if (t) (gpuOpts as unknown as Record<string, unknown>)[key] = toGpu(t);
  }
  const gq = toGpu(q);
  const gk = c.self ? gq : toGpu(k);
  const gv = c.self ? gq : toGpu(v);
  return { cpu: [[q, k, v], opts], gpu: [[gq, gk, gv], gpuOpts] };
}

describe("multiHeadAttention on webgpu", () => {
  gpuIt("runs on the device and matches the float64 reference", async () => {
    for (const [i, c] of CASES.entries()) {
      const { cpu, gpu } = inputs(c, 100 * i);
      const [q, k, v] = gpu[0];
      const e = explain("multiHeadAttention", q, k, v, gpu[1]);
      expect(e.selected, c.name).toBe(c.self ? "webgpu-fast-path" : "webgpu-slow-path");
      const want = multiHeadAttention(cpu[0][0], cpu[0][1], cpu[0][2], cpu[1]);
      const got = multiHeadAttention(q, k, v, gpu[1]);
      expect(got.device, c.name).toBe("webgpu");
      expect(got.shape, c.name).toEqual(want.shape);
      expect(relErr(await values(got), want.toFloat64()), c.name).toBeLessThan(TOL);
      if (c.self) {
        // The slow path forced on the same self-attention input agrees too.
        using _ = kernelPriority("multiHeadAttention", ["webgpu-slow-path"]);
        const slow = multiHeadAttention(q, k, v, gpu[1]);
        expect(relErr(await values(slow), want.toFloat64()), `${c.name}, slow`).toBeLessThan(TOL);
        slow.dispose();
      }
      got.dispose();
      want.dispose();
    }
  });
});
