/// <reference types="@webgpu/types" />
/** What every WGSL kernel shares: element types, bindings of tensors, refusal reasons. */
import { type DType, empty, getFlag, type Tensor } from "@backplane/core";
import type { Binding } from "../exec.ts";
import { type GpuState, gpuState } from "../gpu.ts";
import { bindingOf, type GpuHandle, STALE } from "../memory.ts";

/** Most dimensions a strided index walk handles in a shader. */
export const MAX_RANK = 8;

export const FLOAT_DTYPES = ["float32", "float16"] as const;

/** Flags that make the dispatcher trace these kernels (besides core.verbose). */
export const VERBOSE = ["webgpu.verbose"] as const;

/** The WGSL scalar of a dtype (its name, as the pipeline keys carry it), and the line that enables it. */
export function wgslType(dtype: string): { T: string; enable: string } {
  if (dtype === "float16") return { T: "f16", enable: "enable f16;\n" };
  if (dtype === "int32") return { T: "i32", enable: "" };
  return { T: "f32", enable: "" };
}

export function binding(t: Tensor): Binding {
  return bindingOf(t.storage.handle as GpuHandle);
}

export function output(shape: readonly number[], dtype: DType): Tensor {
  return empty(shape, { dtype, device: "webgpu" });
}

/**
 * The checks every kernel makes first: an open device, float16 allowed (the shader-f16
 * feature and backends.webgpu.allowF16), every tensor and the output within
 * maxStorageBufferBindingSize. Returns the device state, or the reason.
 */
export function baseChecks(
  dtype: DType,
  tensors: readonly (Tensor | null | undefined)[],
  outBytes: number,
): GpuState | string {
  const s = gpuState();
  if (!s) return "the webgpu device is not open (await backends.ready())";
  if (s.lost) return s.lost;
  if (dtype === "float16") {
    if (!s.f16) return "float16 needs the shader-f16 feature, which this adapter does not offer";
    if (getFlag("webgpu.allowF16") !== true)
      return "float16 is off: backends.webgpu.allowF16 = false";
  }
  const limit = s.limits.maxStorageBufferBindingSize;
  for (const t of tensors) {
    if (t && (t.storage.handle as GpuHandle).generation !== s.generation) return STALE;
    if (t && t.storage.byteLength > limit)
      return `an input of ${t.storage.byteLength} bytes exceeds maxStorageBufferBindingSize (${limit})`;
  }
  if (outBytes > limit)
    return `the output of ${outBytes} bytes exceeds maxStorageBufferBindingSize (${limit})`;
  return s;
}

export const bytesOf = (dtype: DType, numel: number): number =>
  numel * (dtype === "float16" || dtype === "bfloat16" ? 2 : dtype === "float64" ? 8 : 4);

/** Strides of `shape` broadcast to `target` (right-aligned; 0 where broadcast): the core's. */
export { leadingBroadcastStrides as broadcastStrides } from "@backplane/core/backend";

export function isContiguous(shape: readonly number[], strides: readonly number[]): boolean {
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] !== 1 && strides[i] !== s) return false;
    s *= shape[i];
  }
  return true;
}

export function product(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Drops size-1 dims and merges dims that walk memory contiguously in every operand. */
export function collapse(
  shape: readonly number[],
  strides: readonly (readonly number[])[],
): { shape: number[]; strides: number[][] } {
  const outShape: number[] = [];
  const outStrides: number[][] = strides.map(() => []);
  for (let d = 0; d < shape.length; d++) {
    if (shape[d] === 1) continue;
    const last = outShape.length - 1;
    if (last >= 0 && strides.every((st, k) => outStrides[k][last] === st[d] * shape[d])) {
      outShape[last] *= shape[d];
      strides.forEach((st, k) => {
        outStrides[k][last] = st[d];
      });
      continue;
    }
    outShape.push(shape[d]);
    strides.forEach((st, k) => {
      outStrides[k].push(st[d]);
    });
  }
  return { shape: outShape, strides: outStrides };
}
