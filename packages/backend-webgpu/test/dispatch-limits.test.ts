/**
 * Grids past maxComputeWorkgroupsPerDimension (65535): matmul batches, conv2d output
 * positions and attention batches that need more workgroups in one dimension than one
 * dispatch may have. They were refused (no kernel could run them on webgpu); they now go
 * in several dispatches, each told its first workgroup id. (Row tiles of a tall matmul and
 * conv2d positions take the same path; on SwiftShader they take minutes, so they are not
 * repeated here.)
 */
import { explain, matmul, randn, scaledDotProductAttention, type Tensor } from "@backplane/core";
import { describe, expect } from "vitest";
import { webgpuCapability } from "../src/index.ts";
import { gpuIt, relErr, values } from "./helpers.ts";

type Device = "cpu" | "webgpu";
const TOL = 2e-5;

/** Seeded float32 operands, the same numbers on both devices. */
const R = (shape: number[], seed: number, dev: Device): Tensor => {
  const t = randn(shape, { seed });
  if (dev === "cpu") return t;
  const m = t.to(dev);
  t.dispose();
  return m;
};

/** webgpu runs it (no kernel there refuses) and agrees with the cpu reference kernels. */
async function agrees(build: (dev: Device) => Tensor): Promise<void> {
  const want = build("cpu");
  const got = build("webgpu");
  expect(got.shape).toEqual(want.shape);
  const err = relErr(await values(got), await values(want));
  for (const t of [want, got]) t.dispose();
  expect(err).toBeLessThanOrEqual(TOL);
}

const limit = () => webgpuCapability()!.limits.maxComputeWorkgroupsPerDimension;

describe("webgpu grids past maxComputeWorkgroupsPerDimension", () => {
  gpuIt("matmul: a batch of more matrices than workgroups per dimension", async () => {
    const batch = limit() + 2;
    const a = R([batch, 2, 3], 1, "webgpu");
    const b = R([3, 2], 2, "webgpu");
    expect(explain("matmul", a, b).selected).toBe("wgsl-matmul-tiled");
    for (const t of [a, b]) t.dispose();
    // b broadcast over the batch, read through a transposed view
    await agrees((d) => matmul(R([batch, 2, 3], 1, d), R([2, 3], 2, d).transpose()));
  });

  gpuIt("scaledDotProductAttention: a batch of more heads than workgroups", async () => {
    const batch = limit() + 2;
    await agrees((d) =>
      scaledDotProductAttention(
        R([batch, 1, 3], 8, d),
        R([batch, 2, 3], 9, d),
        R([1, 2, 2], 10, d),
      ),
    );
  });
});
