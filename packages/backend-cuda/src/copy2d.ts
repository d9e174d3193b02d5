/**
 * The one launcher of kernels/copy.cu's copy2d: a batch of strided rows x cols matrices copied
 * into another layout (gathers for GEMM operands, cuSOLVER's column-major buffers, the
 * memory's contiguous()). Offsets and strides are in elements.
 */
import { DeviceError } from "@backplane/core";
import { type CudaRuntime, grid1d } from "./runtime.ts";

/** copy2d kernel by element size. */
const COPY2D: Record<number, string> = {
  1: "copy2d_b1",
  2: "copy2d_b2",
  4: "copy2d_b4",
  8: "copy2d_b8",
  16: "copy2d_b16",
};

export interface Copy2d {
  dst: bigint;
  src: bigint;
  /** Device table of each matrix's source offset (int64), or 0n: `b * srcBatch`. */
  table: bigint;
  srcBatch: number;
  batch: number;
  rows: number;
  cols: number;
  srcRowStride: number;
  srcColStride: number;
  dstBatch: number;
  dstRowStride: number;
  dstColStride: number;
}

export const hasCopy2d = (elementBytes: number): boolean => elementBytes in COPY2D;

export function launchCopy2d(
  rt: CudaRuntime,
  device: number,
  elementBytes: number,
  c: Copy2d,
): void {
  const kernel = COPY2D[elementBytes];
  if (!kernel) throw new DeviceError(`no copy kernel for ${elementBytes}-byte elements`);
  const count = c.batch * c.rows * c.cols;
  if (count === 0) return;
  rt.launch(device, kernel, grid1d(count), [256, 1, 1], 0, [
    { type: "ptr", value: c.dst },
    { type: "ptr", value: c.src },
    { type: "ptr", value: c.table },
    { type: "i64", value: c.srcBatch },
    { type: "i64", value: c.batch },
    { type: "i64", value: c.rows },
    { type: "i64", value: c.cols },
    { type: "i64", value: c.srcRowStride },
    { type: "i64", value: c.srcColStride },
    { type: "i64", value: c.dstBatch },
    { type: "i64", value: c.dstRowStride },
    { type: "i64", value: c.dstColStride },
  ]);
}
