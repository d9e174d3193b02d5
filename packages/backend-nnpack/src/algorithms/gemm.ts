/**
 * "implicit-gemm": im2col (WASM) and one batched GEMM per chunk of the batch through the
 * core's matmul, [G, Og, Cg kh kw] @ [n, G, Cg kh kw, outH outW] -> [n, O, outH, outW]:
 * any kernel size, stride, padding, dilation and groups, float32 and float64.
 * "direct" for 1x1 kernels: the same GEMM straight on the input, no im2col.
 */
import { empty, matmul, type Tensor } from "@backplane/core";
import type { Conv2dParams } from "@backplane/core/backend";
import { addressOf, cpuMemory, Scratch } from "@backplane/core/cpu";
import { parallel } from "../util.ts";
import { addBias, dims, imagesPerChunk, operands, trivialOutput } from "./common.ts";

export function implicitGemm(p: Conv2dParams): Tensor {
  const trivial = trivialOutput(p);
  if (trivial) return trivial;
  const { Cg, Og, bpe, plane } = dims(p);
  const { n: batch, c: C, h: H, w: W, outChannels: O, groups: G, kh, kw } = p;
  const K = Cg * kh * kw;
  const ops = operands(p);
  const scratch = new Scratch();
  const wv = ops.w.reshape([G, Og, K]);
  let out: Tensor | undefined;
  try {
    const nb = imagesPerChunk(batch, (G * K + O) * plane * bpe);
    for (let n0 = 0; n0 < batch; n0 += nb) {
      const nc = Math.min(nb, batch - n0);
      const col = empty([nc, G, K, plane], { dtype: p.dtype });
      let r: Tensor;
      try {
        parallel(
          p.dtype === "float64" ? "im2col_f64" : "im2col_f32",
          [
            addressOf(ops.x) + n0 * C * H * W * bpe,
            addressOf(col),
            H,
            W,
            kh,
            kw,
            p.strideH,
            p.strideW,
            p.dilationH,
            p.dilationW,
            p.padTop,
            p.padLeft,
            p.outH,
            p.outW,
          ],
          nc * C,
          scratch,
        );
        r = matmul(wv, col);
      } finally {
        col.dispose();
      }
      if (nc === batch && r.isContiguous) {
        out = r.reshape([batch, O, p.outH, p.outW]);
        r.dispose();
      } else {
        out ??= empty([batch, O, p.outH, p.outW], { dtype: p.dtype });
        const rc = r.contiguous();
        r.dispose();
        cpuMemory().copy(
          addressOf(rc),
          0,
          addressOf(out),
          n0 * O * plane * bpe,
          nc * O * plane * bpe,
        );
        rc.dispose();
      }
    }
    if (ops.bias) addBias(out!, ops.bias, scratch);
    const done = out!;
    out = undefined;
    return done;
  } finally {
    out?.dispose();
    wv.dispose();
    scratch.release();
    ops.release();
  }
}

export function pointwise(p: Conv2dParams): Tensor {
  const trivial = trivialOutput(p);
  if (trivial) return trivial;
  const { Cg, Og } = dims(p);
  const { n: batch, outChannels: O, groups: G } = p;
  const xv = p.input.reshape([batch, G, Cg, p.h * p.w]);
  const wv = p.weight.reshape([G, Og, Cg]);
  const scratch = new Scratch();
  let r: Tensor | undefined;
  try {
    r = matmul(wv, xv);
    if (!r.isContiguous) {
      const c = r.contiguous();
      r.dispose();
      r = c;
    }
    const out = r.reshape([batch, O, p.outH, p.outW]);
    if (p.bias) {
      const b = p.bias.contiguous();
      try {
        addBias(out, b, scratch);
      } finally {
        b.dispose();
      }
    }
    return out;
  } finally {
    r?.dispose();
    xv.dispose();
    wv.dispose();
    scratch.release();
  }
}
