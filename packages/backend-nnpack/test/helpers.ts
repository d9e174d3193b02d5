/**
 * Shared by the tests: the float64 reference, relative errors, forced kernels. The GEMM
 * stages run on backend-cpu-mkl (native BLAS, or its WASM kernel under
 * preferredBlasLibrary "wasm"), as they would for a user.
 */
import "@backplane/backend-cpu-mkl";
import "../src/index.ts";
import {
  type Conv2dOptions,
  conv2d,
  explain,
  randn,
  ready,
  type Tensor,
  withKernelPriority,
} from "@backplane/core";
import { getKernel, ops } from "@backplane/core/backend";

/**
 * Worst float32 error each algorithm is allowed, as max |y - ref| / max |ref| against the
 * float64 reference (the testkit's measure), with margin over what was measured on random
 * normal inputs up to 256 input channels (README, "Accuracy").
 */
export const TOLERANCE = {
  wt8x8: 1e-4,
  wt6x6: 5e-5,
  ft8x8: 5e-6,
  ft16x16: 5e-6,
  "implicit-gemm": 1e-5,
  direct: 1e-5,
  auto: 1e-4,
} as const;

export type KernelName = keyof typeof TOLERANCE;

/** conv2d through the dispatcher with `kernel` first; undefined when it would not run. */
export function forced(
  kernel: string,
  x: Tensor,
  w: Tensor,
  opts?: Conv2dOptions,
): Tensor | undefined {
  return withKernelPriority("conv2d", [kernel], () =>
    explain("conv2d", x, w, opts).selected === kernel ? conv2d(x, w, opts) : undefined,
  );
}

/** The float64 reference output. */
export function reference(x: Tensor, w: Tensor, opts: Conv2dOptions = {}): Float64Array {
  const x64 = x.astype("float64");
  const w64 = w.astype("float64");
  const b64 = opts.bias ? opts.bias.astype("float64") : undefined;
  try {
    const y = getKernel("conv2d", "reference")!.run(
      ops.conv2d.prepare(x64, w64, { ...opts, bias: b64 }),
    ) as Tensor;
    const out = y.toFloat64();
    y.dispose();
    return out;
  } finally {
    x64.dispose();
    w64.dispose();
    b64?.dispose();
  }
}

/** max |y - ref| / max |ref|; NaN anywhere is infinite. */
export function relError(y: Float64Array, ref: Float64Array): number {
  if (y.length !== ref.length) return Number.POSITIVE_INFINITY;
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < y.length; i++) {
    const d = Math.abs(y[i] - ref[i]);
    if (Number.isNaN(d)) return Number.POSITIVE_INFINITY;
    diff = Math.max(diff, d);
    scale = Math.max(scale, Math.abs(ref[i]));
  }
  return diff / (scale || 1);
}

/** sqrt(sum (y - ref)^2 / sum ref^2). */
export function rmsError(y: Float64Array, ref: Float64Array): number {
  let e = 0;
  let r = 0;
  for (let i = 0; i < y.length; i++) {
    e += (y[i] - ref[i]) ** 2;
    r += ref[i] ** 2;
  }
  return Math.sqrt(e / (r || 1));
}

let seed = 100;
export const rand = (shape: number[], dtype: "float32" | "float64" = "float32") =>
  randn(shape, { seed: seed++, dtype });

/** Waits for backend-nnpack and backend-cpu-mkl (the native library loads in the background). */
export const whenReady = (): Promise<void> => ready();

/** The GEMM settings the accuracy tests run under. */
export const GEMMS = ["auto", "wasm"] as const;
