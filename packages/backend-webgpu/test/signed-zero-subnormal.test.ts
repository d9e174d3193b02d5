/**
 * Signs torch keeps that the WGSL kernels had lost: relu of a negative subnormal is 0
 * (SwiftShader flushes subnormals before a compare, and -1e-40 < 0 was false there), and
 * conv2d sums that start from a bias of -0 stay -0 (the padding of the last 16-deep slice
 * added +0 products).
 */
import { conv2d, mul, randn, relu, type Tensor, tensor } from "@backplane/core";
import { describe, expect } from "vitest";
import { gpuIt, values } from "./helpers.ts";

type Device = "cpu" | "webgpu";

const on = (t: Tensor, dev: Device): Tensor => {
  if (dev === "cpu") return t;
  const m = t.to(dev);
  t.dispose();
  return m;
};

/**
 * Every element as the cpu reference's: zeros with the same sign (Object.is), the rest
 * within float32 rounding of the float64 reference.
 */
async function sameSigns(build: (dev: Device) => Tensor): Promise<Float64Array> {
  const want = build("cpu");
  const got = build("webgpu");
  const [w, g] = [await values(want), await values(got)];
  for (const t of [want, got]) t.dispose();
  const ok = (v: number, r: number) =>
    r === 0 ? Object.is(v, r) : Math.abs(v - r) <= 2e-6 * Math.max(1, Math.abs(r));
  const differs = Array.from(g).findIndex((v, i) => !ok(v, w[i]));
  expect(
    differs,
    `at ${differs}: ${Object.is(g[differs], -0) ? "-0" : g[differs]}, reference ${Object.is(w[differs], -0) ? "-0" : w[differs]}`,
  ).toBe(-1);
  return w;
}

describe("webgpu kernels keep torch's signs", () => {
  gpuIt("relu of negative subnormals is 0; positive ones and -0 pass", async () => {
    // random float32 subnormals of both signs (|x| < 1.18e-38), some normals, a -0
    const x = (dev: Device) => {
      const r = randn([257], { seed: 11 });
      const scale = tensor(new Float32Array([1e-39]));
      const small = mul(r, scale);
      const data = new Float32Array(258);
      data.set(small.dataSync() as Float32Array);
      data[0] = 3;
      data[1] = -3;
      data[257] = -0;
      for (const t of [r, scale, small]) t.dispose();
      return on(tensor(data), dev);
    };
    const want = await sameSigns((d) => {
      const t = x(d);
      const y = relu(t);
      t.dispose();
      return y;
    });
    expect(want.some((v) => v > 0 && v < 1.2e-38)).toBe(true); // subnormals were kept
  });

  gpuIt("conv2d: a bias of -0 over products of -0 gives -0", async () => {
    // image 1 is all -0; positive weights make every product -0 there. No padding: torch's
    // zero padding adds +0 products, so a border there is +0 (the reference keeps -0).
    const x = (dev: Device) => {
      const r = randn([2, 3, 5, 6], { seed: 12 });
      const data = r.dataSync() as Float32Array;
      data.fill(-0, 3 * 5 * 6);
      r.dispose();
      return on(tensor(data, { shape: [2, 3, 5, 6] }), dev);
    };
    const w = (dev: Device) => {
      const r = randn([4, 3, 3, 3], { seed: 13 });
      const data = (r.dataSync() as Float32Array).map(Math.abs);
      r.dispose();
      return on(tensor(data, { shape: [4, 3, 3, 3] }), dev);
    };
    const bias = (dev: Device) => {
      const r = randn([4], { seed: 14 });
      const data = r.dataSync() as Float32Array;
      data[1] = -0;
      r.dispose();
      return on(tensor(data), dev);
    };
    const want = await sameSigns((d) => {
      const args = [x(d), w(d), bias(d)] as const;
      const y = conv2d(args[0], args[1], { bias: args[2] });
      for (const t of args) t.dispose();
      return y;
    });
    expect(want.some((v) => Object.is(v, -0))).toBe(true);
  });
});
