/**
 * Depthwise convolution (groups = input channels, any channel multiplier) computed
 * directly. float32 with one output channel per input channel (MobileNet's layers) runs
 * four channels at a time, one per SIMD lane, on a transposed zero-padded copy of their
 * planes (dw_c4_f32); other multipliers run one output plane per task item, SIMD over
 * four output columns (dw_f32); float64 runs a scalar loop.
 */
import { empty, type Tensor } from "@backplane/core";
import type { Conv2dParams } from "@backplane/core/backend";
import { addressOf, Scratch } from "@backplane/core/cpu";
import { parallel } from "../util.ts";
import { dims, operands, trivialOutput } from "./common.ts";

/**
 * Most bytes of per-thread scratch the depthwise kernels may take. Their zero-padded copy of
 * a plane spans every row and column the taps reach, which huge padding, stride or dilation
 * make far larger than input or output (x [1,1,1,1], 3x3, padding and dilation 8000: 4 GB
 * for one output); past 2^31 the WASM's i32 size wraps and the kernel wrote out of bounds.
 */
export const DEPTHWISE_WORK_LIMIT = 256 * 2 ** 20;

/**
 * The per-thread scratch bytes of the depthwise kernels: what dw_c4_work_bytes /
 * dw_work_bytes (assembly) compute, here in float64 so that it cannot wrap; the kernels'
 * supports() and run() both read this one figure. float64 runs a scalar loop (64 bytes).
 */
export function depthwiseWorkBytes(p: Conv2dParams): number {
  if (p.dtype !== "float32") return 64;
  const rows = (p.outH - 1) * p.strideH + (p.kh - 1) * p.dilationH + 1;
  if (p.outChannels === p.c) {
    const cols = (p.outW + 1) * p.strideW + (p.kw - 1) * p.dilationW + 1;
    return (rows * cols + p.outW + 1 + p.kh * p.kw) * 16 + 64;
  }
  const row = Math.ceil(p.outW / 4) * 4 * p.strideW + (p.kw - 1) * p.dilationW + 8;
  return rows * row * 4 + 64;
}

export function depthwise(p: Conv2dParams): Tensor {
  const trivial = trivialOutput(p);
  if (trivial) return trivial;
  const { Og } = dims(p);
  const f32 = p.dtype === "float32";
  const ops = operands(p);
  const scratch = new Scratch();
  const out = empty([p.n, p.outChannels, p.outH, p.outW], { dtype: p.dtype });
  try {
    const geometry = [p.kh, p.kw, p.strideH, p.strideW, p.dilationH, p.dilationW] as const;
    const head = [addressOf(ops.x), addressOf(ops.w), ops.bias ? addressOf(ops.bias) : 0];
    const tail = [p.padTop, p.padLeft, p.outH, p.outW];
    if (f32 && Og === 1) {
      // Items: (image, group of four channels).
      const args = [...head, addressOf(out), p.c, p.h, p.w, ...geometry, ...tail];
      parallel("dw_c4_f32", args, p.n * Math.ceil(p.c / 4), scratch, depthwiseWorkBytes(p));
    } else {
      // Items: (image, output channel).
      const args = [...head, addressOf(out), p.c, p.h, p.w, Og, ...geometry, ...tail];
      const kernel = f32 ? "dw_f32" : "dw_f64";
      parallel(kernel, args, p.n * p.outChannels, scratch, depthwiseWorkBytes(p));
    }
    return out;
  } catch (e) {
    out.dispose();
    throw e;
  } finally {
    scratch.release();
    ops.release();
  }
}
