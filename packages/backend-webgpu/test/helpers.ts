/**
 * Shared by the tests: opens the device once and says whether there is one. Without an
 * adapter the GPU tests skip, and the reason is printed (CI sets one up: ci-setup.sh).
 */
import { runtime, type Tensor } from "@backplane/core";
import { it } from "vitest";
import { webgpuAvailability, webgpuCapability } from "../src/index.ts";

export const availability = await webgpuAvailability();
export const available = availability.available;
if (!available) {
  console.log(
    `[backend-webgpu] ${runtime().name}: no WebGPU adapter, GPU tests skip: ${availability.reason}`,
  );
}

/** Software drivers (lavapipe, SwiftShader) on shared cores are slow: generous timeouts. */
export const TIMEOUT = 180_000;

/**
 * Deno's OpenGL path on Mesa's llvmpipe (only when DENO_WEBGPU_BACKEND=gl asks for it):
 * every pipeline compiles through GLSL and LLVM, minutes for the tests with many shader
 * variants (2.5 minutes for kernels.test.ts without Mesa's shader cache; 10 s on lavapipe).
 */
const host = globalThis as { Deno?: { env: { get(n: string): string | undefined } } };
const adapterName = available ? (webgpuCapability()?.adapter.description ?? "") : "";
export const softwareGl =
  host.Deno?.env.get("DENO_WEBGPU_BACKEND") === "gl" && /llvmpipe|softpipe/i.test(adapterName);

/** A test that compiles many pipelines: skipped, with one line, on software OpenGL. */
export const heavyGpuIt = (name: string, fn: () => unknown | Promise<unknown>) => {
  if (available && softwareGl) {
    console.log(
      `[backend-webgpu] skipped on ${adapterName} through OpenGL (minutes of shader compiles): ${name}`,
    );
    return it.skip(name, fn as () => Promise<void>);
  }
  return gpuIt(name, fn);
};

/** `it` when a device is open, else `it.skip`. */
export const gpuIt = (name: string, fn: () => unknown | Promise<unknown>) =>
  (available ? it : it.skip)(name, fn as () => Promise<void>, TIMEOUT);

/** Elements of any tensor as float64 (read back from the GPU). */
export async function values(t: Tensor): Promise<Float64Array> {
  if (t.storage.memory.hostView) return t.toFloat64();
  const h = await t.toAsync("cpu");
  try {
    return h.toFloat64();
  } finally {
    h.dispose();
  }
}

/** max |x - ref| / max |ref|; NaN where ref is not NaN (or the reverse) is Infinity. */
export function relErr(x: Float64Array, ref: Float64Array): number {
  if (x.length !== ref.length) return Number.POSITIVE_INFINITY;
  let scale = 0;
  for (const r of ref) if (Number.isFinite(r)) scale = Math.max(scale, Math.abs(r));
  let worst = 0;
  for (let i = 0; i < ref.length; i++) {
    if (Number.isNaN(ref[i]) || Number.isNaN(x[i])) {
      if (Number.isNaN(ref[i]) !== Number.isNaN(x[i])) return Number.POSITIVE_INFINITY;
      continue;
    }
    worst = Math.max(worst, Math.abs(x[i] - ref[i]));
  }
  return worst / (scale || 1);
}
