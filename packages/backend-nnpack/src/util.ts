/** Pointers, scratch space and parallel calls for the WASM transforms. */
import { bytesPerElement, type Tensor } from "@backplane/core";
import { cpuMemory, cpuThreads, parallelFor } from "@backplane/core/backend";
import { MODULE_ID } from "./wasm.ts";

/** Blocks of the CPU memory for one kernel call, freed together. */
export class Scratch {
  private readonly blocks: number[] = [];
  /** A 64-byte aligned block of at least `bytes` bytes (contents unspecified). */
  alloc(bytes: number): number {
    const p = cpuMemory().allocate(Math.max(64, bytes));
    this.blocks.push(p);
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

/** Whether the tensor lives in the CPU memory the WASM modules import. */
export function inWasmMemory(t: Tensor): boolean {
  try {
    return t.storage.memory === cpuMemory();
  } catch {
    return false;
  }
}

export const roundUp = (x: number, r: number): number => Math.ceil(x / r) * r;

/**
 * Runs export `fn` of the conv module (or of `module`) over `items`, split across the threads the core
 * allows: args are the leading arguments; `work` bytes of private scratch per thread are
 * passed before (start, count) when given.
 */
export function parallel(
  fn: string,
  args: number[],
  items: number,
  scratch: Scratch,
  work?: number,
  module: string = MODULE_ID,
): void {
  if (items <= 0) return;
  const threads = Math.max(1, Math.min(cpuThreads(), items));
  const a = args.slice();
  let threadArgs: { index: number; stride: number }[] | undefined;
  if (work !== undefined) {
    const stride = roundUp(Math.max(64, work), 64);
    threadArgs = [{ index: a.length, stride }];
    a.push(scratch.alloc(stride * threads));
  }
  const start = a.length;
  a.push(0, items);
  const step = new Array<number>(a.length).fill(0);
  step[start] = 1;
  parallelFor(
    {
      module,
      fn,
      args: a,
      step,
      countArg: start + 1,
      threadArgs,
      items,
      label: `nnpack ${fn}`,
    },
    threads,
  );
}
