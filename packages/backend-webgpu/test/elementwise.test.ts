/**
 * wgsl-relu against torch's relu, clamp_min(x, 0): -0 and NaN pass through (the shader's
 * max(x, 0) made -0 into +0), on the contiguous and the strided path, int32 unchanged.
 * And ranks past the shader's 8 walked dims, where merging dims leaves at most 8: they ran
 * nowhere (a NoKernelError on webgpu), though torch takes up to 25 dims.
 */
import {
  add,
  explain,
  fromFloat64,
  gelu,
  getFlag,
  mul,
  randn,
  relu,
  softmax,
  Tensor,
} from "@backplane/core";
import { describe, expect } from "vitest";
import { webgpuCapability } from "../src/index.ts";
import { gpuIt, relErr, values } from "./helpers.ts";

const X = [-0, 0, -1.5, 2.5, Number.NaN, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, -0];
const want = (v: number) => (v < 0 ? 0 : v);

/** -0 printed as such (String(-0) is "0"). */
const fmt = (v: number) => (Object.is(v, -0) ? "-0" : String(v));

describe("wgsl-relu", () => {
  gpuIt("keeps -0 and NaN, contiguous and strided", async () => {
    const f16 = webgpuCapability()!.features.shaderF16 && getFlag("webgpu.allowF16") === true;
    for (const dtype of f16 ? (["float32", "float16"] as const) : (["float32"] as const)) {
      const gpu = fromFloat64(Float64Array.from(X), [X.length], dtype).to("webgpu");
      // The whole vector (contiguous path) and every other element from 1 (strided path).
      const views = [gpu, new Tensor(gpu.storage, dtype, [4], [2], 1)];
      for (const x of views) {
        const src = await values(x);
        const got = await values(relu(x));
        src.forEach((v, i) => {
          expect(Object.is(got[i], want(v)), `${dtype} [${i}]: ${fmt(got[i])} for ${fmt(v)}`).toBe(
            true,
          );
        });
      }
    }
  });

  gpuIt("int32: negatives become 0", async () => {
    const x = fromFloat64(Float64Array.from([-3, 0, 7, -(2 ** 31)]), [4], "int32").to("webgpu");
    expect(Array.from(await values(relu(x)))).toEqual([0, 0, 7, 0]);
  });
});

describe("elementwise and softmax past rank 8", () => {
  const S9 = [2, 1, 3, 1, 2, 1, 2, 1, 3];
  type Build = (dev: "cpu" | "webgpu") => Tensor;
  const R = (shape: number[], seed: number, dev: "cpu" | "webgpu") => {
    const t = randn(shape, { seed });
    return dev === "cpu" ? t : t.to("webgpu");
  };
  // The webgpu kernel runs (explain says so) and matches the cpu reference (f32: 2e-5).
  async function same(op: string, build: Build, args: (dev: "cpu" | "webgpu") => unknown[]) {
    expect(explain(op, ...args("webgpu")).selected, op).toMatch(/^wgsl-/);
    const err = relErr(await values(build("webgpu")), await values(build("cpu")));
    expect(err, op).toBeLessThanOrEqual(2e-5);
  }

  gpuIt("rank 9 and 10 run when the merged walk has at most 8 dims", async () => {
    const x = (d: "cpu" | "webgpu") => R(S9, 1, d);
    const y = (d: "cpu" | "webgpu") => R(S9, 2, d);
    // A strided rank-9 view: dims 0 and 8 swapped, so the walk is not flat.
    const xt = (d: "cpu" | "webgpu") => R(S9, 3, d).transpose(0, 8);
    await same(
      "add",
      (d) => add(x(d), y(d)),
      (d) => [x(d), y(d)],
    );
    await same(
      "mul",
      (d) => mul(xt(d), R([2], 4, d)),
      (d) => [xt(d), R([2], 4, d)],
    );
    await same(
      "relu",
      (d) => relu(xt(d)),
      (d) => [xt(d)],
    );
    await same(
      "gelu",
      (d) => gelu(xt(d)),
      (d) => [xt(d), undefined],
    );
    const z = (d: "cpu" | "webgpu") => R([...S9, 2], 5, d).transpose(0, 9);
    for (const dim of [0, 4, -1])
      await same(
        "softmax",
        (d) => softmax(z(d), dim),
        (d) => [z(d), dim],
      );
  });
});
