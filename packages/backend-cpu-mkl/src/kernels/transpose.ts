/**
 * f32 matrix transposes on the CPU threads parallel-for has (one band of source columns, so
 * of destination rows, a thread: no two threads write one cache line): oneDNN
 * convolutions' activations to and from its channels-last and 16-channel-blocked layouts.
 */
import { cpuThreads, parallelFor } from "@backplane/core/cpu";
import { KERNELS_WASM } from "../wasm-files.ts";
import { modules } from "./wasm.ts";

/** Below this many elements one thread transposes (waking another costs more). */
const PARALLEL_MIN = 1 << 16;

/**
 * dst (cols x rows, its rows ldd elements apart) = the transpose of src (rows x cols, its
 * rows lds apart): byte addresses in the CPU memory.
 */
export function transposeF32(
  src: number,
  rows: number,
  cols: number,
  dst: number,
  lds = cols,
  ldd = rows,
): void {
  const args = [src, rows, cols, lds, dst, ldd];
  // A thread's band: 32 columns or more, so two threads do not both read every line of
  // the source (a 12544 x 16 band back from nChw16c: 38 us on one thread, 49 on two).
  const threads = rows * cols < PARALLEL_MIN ? 1 : Math.min(cpuThreads(), cols >> 5);
  if (threads <= 1) {
    (modules.kernels as NonNullable<typeof modules.kernels>).transpose_f32(...(args as Args));
    return;
  }
  parallelFor(
    {
      module: KERNELS_WASM.id,
      fn: "transpose_f32",
      args,
      step: [4, 0, 0, 0, 4 * ldd, 0],
      countArg: 2,
      items: cols,
      label: "transpose",
    },
    threads,
  );
}

type Args = [number, number, number, number, number, number];
