/** Parallel calls of the WASM transforms (pointers and scratch blocks are the core's). */
import { cpuThreads, parallelFor, type Scratch } from "@backplane/core/cpu";
import { MODULE_ID } from "./wasm.ts";

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
