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
import { conv } from "../wasm.ts";
import { dims, operands, trivialOutput } from "./common.ts";

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
    const m = conv();
    if (f32 && Og === 1) {
      // Items: (image, group of four channels).
      const args = [...head, addressOf(out), p.c, p.h, p.w, ...geometry, ...tail];
      const work = m.dw_c4_work_bytes(p.outH, p.outW, ...geometry);
      parallel("dw_c4_f32", args, p.n * Math.ceil(p.c / 4), scratch, work);
    } else {
      // Items: (image, output channel).
      const args = [...head, addressOf(out), p.c, p.h, p.w, Og, ...geometry, ...tail];
      const work = f32 ? m.dw_work_bytes(p.outH, p.outW, ...geometry) : 64;
      parallel(f32 ? "dw_f32" : "dw_f64", args, p.n * p.outChannels, scratch, work);
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
