/**
 * What WASM kernels share around the CPU device's one memory: whether a tensor lives in it,
 * the byte address of its first element, typed views at an address, scratch blocks freed
 * together when the kernel is done, and whether this runtime can run them at all.
 */
import type { Availability } from "../registry/backends.ts";
import { runtime } from "../runtime/detect.ts";
import { bytesPerElement } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { placeOf, retaken } from "../util/views.ts";
import { cpuMemory } from "./memory.ts";

export class Scratch {
  private readonly blocks: number[] = [];
  /** A 64-byte aligned block of `bytes` (at least 64). */
  alloc(bytes: number): number {
    const p = cpuMemory().allocate(Math.max(64, bytes));
    this.blocks.push(p);
    return p;
  }
  /** Copies `data` into a new block; returns its pointer. */
  f64(data: Float64Array): number {
    const at = placeOf(data); // a view of the CPU memory, which alloc() may detach
    const p = this.alloc(data.byteLength);
    const buffer = cpuMemory().memory.buffer;
    new Float64Array(buffer, p, at.length).set(retaken(data, at, buffer));
    return p;
  }
  release(): void {
    const mem = cpuMemory();
    for (const p of this.blocks) mem.free(p);
    this.blocks.length = 0;
  }
}

/** Byte address of a tensor's first element in the CPU memory. */
export function addressOf(t: Tensor): number {
  return (t.storage.handle as number) + t.offset * bytesPerElement(t.dtype);
}

/** Whether the tensor lives in the CPU memory WASM kernels import. */
export function inWasmMemory(t: Tensor): boolean {
  try {
    return t.storage.memory === cpuMemory();
  } catch {
    return false;
  }
}

export const f64View = (ptr: number, n: number): Float64Array =>
  new Float64Array(cpuMemory().memory.buffer, ptr, n);
export const i32View = (ptr: number, n: number): Int32Array =>
  new Int32Array(cpuMemory().memory.buffer, ptr, n);

/**
 * Whether WASM SIMD kernels can run here: WebAssembly with fixed-width SIMD128, and the CPU
 * memory they import. The reason says which is missing.
 */
export function wasmSimdAvailability(): Availability {
  const rt = runtime();
  if (!rt.wasm) return { available: false, reason: "this runtime has no WebAssembly" };
  if (!rt.wasmSimd)
    return {
      available: false,
      reason: "this runtime's WebAssembly has no SIMD (fixed-width SIMD128 is required)",
    };
  try {
    cpuMemory();
  } catch (e) {
    return { available: false, reason: (e as Error).message };
  }
  return { available: true };
}
