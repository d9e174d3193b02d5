/**
 * A larger kernel (4x4 to 7x7, stride 1) as oneDNN's 3x3 Winograd: the kernel is cut into
 * 3x3 blocks (zero-padded to whole blocks), and block (a, b) sees the input shifted by
 * (3a, 3b). Stacking the shifted inputs as channels makes the layer one 3x3 convolution,
 * unpadded, of blocks x channels inputs:
 *
 *   y[o][u][v] = sum over a, b, c, i, j of  w[o][c][3a + i][3b + j] * x[c][u + 3a + i - pt][v + 3b + j - pl]
 *              = sum over (a, b, c), i, j of w'[o][(a, b, c)][i][j]  * x'[(a, b, c)][u + i][v + j]
 *
 * with x'[(a, b, c)][u][v] = x[c][u + 3a - pt][v + 3b - pl] (0 outside the image) on an
 * (outH + 2) x (outW + 2) plane. A 5x5 layer does 36 multiply-adds a tap where it did 25,
 * but Winograd F(4x4, 3x3) does a quarter of a 3x3's: AlexNet's 5x5 64>192 @27 ran in
 * 3.2 ms against 4.2 for oneDNN's direct kernel (Zen 4, one thread).
 */
import type { Tensor } from "@backplane/core";
import type { Conv2dParams } from "@backplane/core/backend";
import { addressOf } from "@backplane/core/cpu";
import { transposeF32 } from "../kernels/transpose.ts";
import { modules } from "../kernels/wasm.ts";

/** How many 3x3 blocks cover the kernel down and across. */
export interface Blocks {
  rows: number;
  cols: number;
}

/** The largest kernel side cut into blocks: 7 is nine blocks, 81 taps for 49. */
const MAX_SIDE = 7;

/** Why a layer is not cut into blocks, or its blocks (3x3 itself: one block, no cutting). */
export function blocksOf(p: Conv2dParams): Blocks | string {
  const big = Math.max(p.kh, p.kw);
  if (p.kh < 3 || p.kw < 3 || big > MAX_SIDE)
    return `Winograd takes 3x3 kernels, and larger ones up to ${MAX_SIDE}x${MAX_SIDE} as 3x3 blocks; this one is ${p.kh}x${p.kw} (onednn-conv takes it)`;
  return { rows: Math.ceil(p.kh / 3), cols: Math.ceil(p.kw / 3) };
}

export const isOneBlock = (b: Blocks): boolean => b.rows === 1 && b.cols === 1;

/** The stacked input's shape, [n, blocks x c, outH + 2, outW + 2]. */
export function stackedShape(p: Conv2dParams, b: Blocks): [number, number, number, number] {
  return [p.n, b.rows * b.cols * p.c, p.outH + 2, p.outW + 2];
}

/**
 * One image's stacked input at `dst` from its planes at `src` (byte addresses): `planes`
 * planes of h x w pixels of `pixel` floats (1: NCHW; 16: a block of nChw16c), each block
 * (a, b) of the kernel a copy of them shifted by (3a - padTop, 3b - padLeft) pixels.
 */
function stackImage(
  p: Conv2dParams,
  b: Blocks,
  src: number,
  planes: number,
  pixel: number,
  dst: number,
): void {
  const k = modules.kernels;
  if (!k) throw new Error("the WASM kernels are not loaded");
  const [, , rows, cols] = stackedShape(p, b);
  const block = 4 * planes * pixel * rows * cols;
  for (let a = 0; a < b.rows; a++)
    for (let c = 0; c < b.cols; c++)
      k.shifted_planes_f32(
        src,
        planes,
        p.h,
        pixel * p.w,
        3 * a - p.padTop,
        pixel * (3 * c - p.padLeft),
        dst + (a * b.cols + c) * block,
        rows,
        pixel * cols,
      );
}

/** Writes the stacked input of `p` into `dst` (the CPU memory, stackedShape's size). */
export function stackInput(p: Conv2dParams, b: Blocks, dst: Tensor): void {
  const [, c, rows, cols] = stackedShape(p, b);
  for (let i = 0; i < p.n; i++)
    stackImage(
      p,
      b,
      addressOf(p.input) + i * 4 * p.c * p.h * p.w,
      p.c,
      1,
      addressOf(dst) + i * 4 * c * rows * cols,
    );
}

/**
 * The stacked input written straight in oneDNN's 16-channel blocks (nChw16c), for input
 * channels in whole blocks of 16: each image moved to those blocks once (into `scratch`,
 * the image's size), then each block of 16 channels is a plane of h rows of 16 w floats,
 * shifted by 16 floats a pixel. Saves writing the stacked input in NCHW and moving it.
 */
export function stackInputC16(p: Conv2dParams, b: Blocks, dst: Tensor, scratch: Tensor): void {
  const [, c, rows, cols] = stackedShape(p, b);
  const hw = p.h * p.w;
  const t = addressOf(scratch);
  for (let i = 0; i < p.n; i++) {
    const x = addressOf(p.input) + i * 4 * p.c * hw;
    for (let g = 0; g < p.c / 16; g++) transposeF32(x + g * 64 * hw, 16, hw, t + g * 64 * hw);
    stackImage(p, b, t, p.c / 16, 16, addressOf(dst) + i * 4 * c * rows * cols);
  }
}

/** w' [oc, blocks x c, 3, 3]: block (a, b) of each kernel, zero past the kernel's edge. */
export function stackWeights(p: Conv2dParams, b: Blocks, into: Float32Array): void {
  const w = p.weight.hostData() as Float32Array;
  const { kh, kw, c: channels } = p;
  const inputs = b.rows * b.cols * channels;
  into.fill(0, 0, p.outChannels * inputs * 9);
  for (let o = 0; o < p.outChannels; o++)
    for (let c = 0; c < channels; c++) {
      const from = (o * channels + c) * kh * kw;
      for (let ky = 0; ky < kh; ky++)
        for (let kx = 0; kx < kw; kx++) {
          const blockIn = (Math.floor(ky / 3) * b.cols + Math.floor(kx / 3)) * channels + c;
          into[(o * inputs + blockIn) * 9 + (ky % 3) * 3 + (kx % 3)] = w[from + ky * kw + kx];
        }
    }
}
