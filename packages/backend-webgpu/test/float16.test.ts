/**
 * float16 through every WGSL kernel, against the cpu's float64 reference rounded to float16.
 * Only adapters with shader-f16 run them (Deno on lavapipe does; SwiftShader, which Node and
 * Bun use, does not and the tests skip with one line). Inputs hold what float16 makes hard:
 * values near 65504 (products overflow to inf), subnormals, NaN, ±inf, -0, and odd offsets.
 */
import {
  add,
  conv2d,
  fromFloat64,
  gelu,
  logSoftmax,
  matmul,
  mul,
  relu,
  scaledDotProductAttention,
  softmax,
  Tensor,
} from "@backplane/core";
import { describe, expect } from "vitest";
import { webgpuCapability } from "../src/index.ts";
import { gpuIt, values } from "./helpers.ts";

const f16it = (name: string, fn: () => Promise<void>) =>
  gpuIt(name, async () => {
    if (!webgpuCapability()!.features.shaderF16) {
      console.log(`[backend-webgpu] no shader-f16 on this adapter, skipped: ${name}`);
      return;
    }
    await fn();
  });

/** Deterministic normals (Box-Muller on an LCG), scaled, with `specials` spread in. */
function gen(n: number, seed: number, scale: number, specials: number[]): Float64Array {
  let s = seed;
  const u = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s + 1) / 2147483649;
  };
  const v = new Float64Array(n);
  for (let i = 0; i < n; i++)
    v[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()) * scale;
  specials.forEach((x, k) => {
    if (n) v[(k * 7919) % n] = x;
  });
  return v;
}

/** The same float16 numbers twice: on webgpu, and as float64 on cpu (the reference). */
function pair(shape: number[], seed: number, scale = 1, specials: number[] = []) {
  const h = fromFloat64(
    gen(
      shape.reduce((a, b) => a * b, 1),
      seed,
      scale,
      specials,
    ),
    shape,
    "float16",
  );
  const r = fromFloat64(h.toFloat64(), shape, "float64");
  const g = h.to("webgpu");
  h.dispose();
  return { g, r };
}

/**
 * got (float16 on webgpu) against the float64 reference rounded to float16: NaN and ±inf
 * where the reference has them, else |got - want| <= rtol |want| + atol max|want|.
 */
async function close(got: Tensor, want: Tensor, rtol: number, atol: number): Promise<void> {
  expect(got.dtype).toBe("float16");
  expect(got.device).toBe("webgpu");
  expect(got.shape).toEqual(want.shape);
  const g = await values(got);
  const w = fromFloat64(want.toFloat64(), want.shape, "float16").toFloat64();
  let scale = 0;
  for (const x of w) if (Number.isFinite(x)) scale = Math.max(scale, Math.abs(x));
  for (let i = 0; i < w.length; i++) {
    if (!Number.isFinite(w[i]) || !Number.isFinite(g[i])) {
      expect([i, g[i]]).toEqual([i, w[i]]);
      continue;
    }
    const err = Math.abs(g[i] - w[i]);
    if (err > rtol * Math.abs(w[i]) + atol * scale) expect([i, g[i]]).toEqual([i, w[i]]);
  }
  got.dispose();
  want.dispose();
}

// float16 keeps 11 bits (eps 9.8e-4): results rounded once agree to an ulp; f32 sums in
// products and reductions add a few ulps of the largest term.
const ELEMENTWISE = [1e-3, 0] as const;
const REDUCED = [2e-3, 2e-3] as const;
const SPECIALS = [Number.NaN, Infinity, -Infinity, -0, 2 ** -24, 3 * 2 ** -24, 65504, -65504];

describe("webgpu float16 kernels", () => {
  f16it("add, mul, relu, gelu: overflow to inf, subnormals, non-finite, views", async () => {
    for (const shape of [[1], [7], [0], [257], [13, 67]]) {
      const a = pair(shape, 1, 1, SPECIALS);
      const b = pair(shape, 2, 1, [1, 1, -1, 1, 1, 0.5, 2, -1]);
      await close(add(a.g, b.g), add(a.r, b.r), ...ELEMENTWISE);
      await close(mul(a.g, b.g), mul(a.r, b.r), ...ELEMENTWISE);
      await close(relu(a.g), relu(a.r), 0, 0);
      await close(gelu(a.g), gelu(a.r), ...REDUCED);
      await close(
        gelu(a.g, { approximate: "tanh" }),
        gelu(a.r, { approximate: "tanh" }),
        ...REDUCED,
      );
      for (const t of [a.g, a.r, b.g, b.r]) t.dispose();
    }
    // an odd element offset (a 2-byte start inside a 4-byte word) and a stride-0 dim
    const s = pair([64], 3);
    const view = (t: Tensor) => {
      t.storage.retain();
      return new Tensor(t.storage, t.dtype, [3, 5], [0, 3], 3);
    };
    await close(add(view(s.g), view(s.g)), add(view(s.r), view(s.r)), ...ELEMENTWISE);
  });

  f16it("matmul: small and tiled, views, overflow to inf, subnormal inputs", async () => {
    for (const [m, k, n] of [
      [1, 1, 1],
      [7, 13, 5],
      [65, 17, 67],
      [5, 0, 3],
      [70, 20, 70],
    ]) {
      const a = pair([k, m], 4, 1, [Number.NaN, Infinity]);
      const b = pair([n, k], 5);
      await close(
        matmul(a.g.transpose(), b.g.transpose()),
        matmul(a.r.transpose(), b.r.transpose()),
        ...REDUCED,
      );
      const big = pair([m, k], 6, 30000); // sums beyond 65504 are inf
      const sub = pair([k, n], 7, 3e-6); // float16 subnormals
      await close(matmul(big.g, sub.g), matmul(big.r, sub.r), ...REDUCED);
      await close(matmul(big.g, b.g.transpose()), matmul(big.r, b.r.transpose()), ...REDUCED);
    }
  });

  f16it(
    "softmax, logSoftmax: rows past float16's range, non-finite rows, subnormal outputs",
    async () => {
      const v = gen(6 * 9, 8, 3, []);
      v[0] = Number.NaN;
      v[10] = Infinity;
      for (let j = 18; j < 27; j++) v[j] = -Infinity;
      v[28] = -Infinity;
      v[36] = 65504;
      v[37] = -65504; // x - max is -131008: past float16, computed in f32
      [v[45], v[46], v[47]] = [0, -12, -17]; // exp: a float16 subnormal, then 2^-24
      const x = fromFloat64(v, [6, 9], "float16");
      const xr = fromFloat64(x.toFloat64(), [6, 9], "float64");
      const xg = x.to("webgpu");
      for (const dim of [1, 0]) {
        await close(softmax(xg, dim), softmax(xr, dim), ...REDUCED);
        await close(logSoftmax(xg, dim), logSoftmax(xr, dim), ...REDUCED);
      }
    },
  );

  f16it("conv2d and scaledDotProductAttention: views, overflow, masks", async () => {
    const x = pair([2, 9, 8, 3], 9, 1, [Number.NaN]); // NHWC, read as NCHW
    const w = pair([5, 3, 3, 3], 10);
    const opts = (b: Tensor) => ({ padding: 1, stride: 2, bias: b });
    const b = pair([5], 11);
    const perm = (t: Tensor) => t.permute([0, 3, 1, 2]);
    await close(conv2d(perm(x.g), w.g, opts(b.g)), conv2d(perm(x.r), w.r, opts(b.r)), ...REDUCED);
    const big = pair([1, 3, 6, 6], 12, 20000);
    await close(conv2d(big.g, w.g), conv2d(big.r, w.r), ...REDUCED);

    const q = pair([2, 33, 16], 13, 2);
    const k = pair([2, 16, 45], 14, 2); // a transposed key
    // large but finite values (inf in V at a masked key: see the report on masked keys)
    const val = pair([2, 45, 8], 15, 8000);
    const m = pair([33, 45], 16, 1, [-Infinity]);
    const run = (t: "g" | "r", causal: boolean) =>
      scaledDotProductAttention(
        q[t],
        k[t].transpose(),
        val[t],
        causal ? { isCausal: true } : { attnMask: m[t] },
      );
    await close(run("g", false), run("r", false), ...REDUCED);
    await close(run("g", true), run("r", true), ...REDUCED);
  });
});
