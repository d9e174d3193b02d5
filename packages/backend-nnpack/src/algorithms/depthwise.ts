/**
 * Depthwise convolution (groups = input channels, any channel multiplier) computed
 * directly: one output plane per task item, SIMD over four output columns (float32), with
 * dedicated 3x3 stride-1 and stride-2 loops; float64 runs a scalar loop.
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
    const work = f32
      ? conv().dw_work_bytes(
          p.outH,
          p.outW,
          p.kh,
          p.kw,
          p.strideH,
          p.strideW,
          p.dilationH,
          p.dilationW,
        )
      : 64;
    parallel(
      f32 ? "dw_f32" : "dw_f64",
      [
        addressOf(ops.x),
        addressOf(ops.w),
        ops.bias ? addressOf(ops.bias) : 0,
        addressOf(out),
        p.c,
        p.h,
        p.w,
        Og,
        p.kh,
        p.kw,
        p.strideH,
        p.strideW,
        p.dilationH,
        p.dilationW,
        p.padTop,
        p.padLeft,
        p.outH,
        p.outW,
      ],
      p.n * p.outChannels,
      scratch,
      work,
    );
    return out;
  } catch (e) {
    out.dispose();
    throw e;
  } finally {
    scratch.release();
    ops.release();
  }
}
