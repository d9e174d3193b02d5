/** Scratch buffers in the CPU memory for WASM kernels, freed when the kernel is done. */
import { bytesPerElement, type Tensor } from "@backplane/core";
import { cpuMemory } from "@backplane/core/backend";

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
    const p = this.alloc(data.byteLength);
    new Float64Array(cpuMemory().memory.buffer, p, data.length).set(data);
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
