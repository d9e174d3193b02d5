/**
 * Winograd F(6x6, 3x3) ("wt8x8") and F(4x4, 3x3) ("wt6x6"), and FFT ("ft8x8", "ft16x16")
 * convolution, NNPACK's structure: pack the input into tiles, transform every tile of every input channel
 * (WASM), multiply the transforms point by point and sum over input channels -- one
 * batched GEMM per transform point, [tiles x C] @ [C x O], through the core's matmul (so
 * native BLAS serves it where loaded; complex products as real GEMMs on [re | im] blocks)
 * -- then transform back, tile by tile, adding the bias (WASM).
 */
import { empty, matmul, type Tensor } from "@backplane/core";
import type { Conv2dParams } from "@backplane/core/backend";
import { addressOf, Scratch } from "@backplane/core/cpu";
import { type Transformed, transformedWeights } from "../cache.ts";
import { parallel, roundUp } from "../util.ts";
import { FT_WORK_BYTES } from "../wasm.ts";
import { dims, imagesPerChunk, operands, trivialOutput } from "./common.ts";

export type TransformAlgorithm = "wt8x8" | "wt6x6" | "ft8x8" | "ft16x16";

/** Tile geometry of an algorithm on these params. */
export function tiling(p: Conv2dParams, alg: TransformAlgorithm) {
  const wino = alg === "wt8x8" || alg === "wt6x6";
  const N = alg === "ft16x16" ? 16 : alg === "wt6x6" ? 6 : 8;
  const khe = (p.kh - 1) * p.dilationH + 1;
  const kwe = (p.kw - 1) * p.dilationW + 1;
  const mh = N - khe + 1;
  const mw = N - kwe + 1;
  const tilesH = Math.ceil(p.outH / mh);
  const tilesW = Math.ceil(p.outW / mw);
  return {
    wino,
    N,
    mh,
    mw,
    tilesH,
    tilesW,
    /** Transform points: 64 / 36 real (Winograd) or 34 / 130 complex (FFT). */
    points: wino ? N * N : N === 8 ? 34 : 130,
    /** Reals per point: 1, or 2 for complex. */
    width: wino ? 1 : 2,
    Hp: (tilesH - 1) * mh + N,
    Wp: (tilesW - 1) * mw + N,
  };
}

// Long: NNPACK's three stages (input, kernel, output transforms) around the tuple GEMM share the tile geometry and buffers.
export function transformConv(p: Conv2dParams, alg: TransformAlgorithm): Tensor {
  const trivial = trivialOutput(p);
  if (trivial) return trivial;
  const { Cg, Og } = dims(p);
  const { n: batch, c: C, h: H, w: W, outChannels: O, groups: G, outH, outW } = p;
  const Cp = roundUp(Cg, 4);
  const Op = roundUp(Og, 4);
  const CB = Cp / 4;
  const t = tiling(p, alg);
  const { wino, N, mh, mw, tilesH, tilesW, points: F, width: cw, Hp, Wp } = t;
  const tiles = tilesH * tilesW;
  const wt = alg === "wt6x6" ? "wt6" : "wt8";
  const ops = operands(p);
  const scratch = new Scratch();
  let tw: Transformed | undefined;
  let out: Tensor | undefined;
  try {
    const w = addressOf(ops.w);
    const key = wino ? alg : `${alg}|d${p.dilationH}x${p.dilationW}`;
    tw = transformedWeights(key, ops.w, [F, G, cw * Cp, cw * Op], (u) => {
      if (wino)
        parallel(`${wt}_kernel`, [w, addressOf(u), Cg, Og, G, Cp, Op], G * Cp, scratch, 512);
      else
        parallel(
          "ft_kernel",
          [w, addressOf(u), N, p.kh, p.kw, p.dilationH, p.dilationW, Cg, Og, G, Cp, Op],
          G * Cp,
          scratch,
          FT_WORK_BYTES,
        );
    });
    out = empty([batch, O, outH, outW], { dtype: "float32" });
    const bias = ops.bias ? addressOf(ops.bias) : 0;
    const perImage = G * CB * Hp * Wp * 16 + F * G * tiles * cw * (Cp + Op) * 4;
    const nb = imagesPerChunk(batch, perImage);
    for (let n0 = 0; n0 < batch; n0 += nb) {
      const nc = Math.min(nb, batch - n0);
      const T = nc * tiles;
      const s = new Scratch();
      try {
        const P = s.alloc(nc * G * CB * Hp * Wp * 16);
        const x = addressOf(ops.x) + n0 * C * H * W * 4;
        parallel(
          "pack_c4",
          [x, P, C, Cg, CB, G, H, W, Hp, Wp, p.padTop, p.padLeft],
          nc * G * CB,
          s,
        );
        const V = empty([F, G, T, cw * Cp], { dtype: "float32" });
        let M: Tensor;
        try {
          if (wino)
            parallel(
              `${wt}_input`,
              [P, addressOf(V), CB, G, Hp, Wp, tilesH, tilesW, T, Cp],
              G * T,
              s,
              1024,
            );
          else
            parallel(
              "ft_input",
              [P, addressOf(V), N, mh, mw, CB, G, Hp, Wp, tilesH, tilesW, T, Cp],
              G * T,
              s,
              FT_WORK_BYTES,
            );
          // The tuple GEMM: for every transform point and group, [T x C] @ [C x O].
          M = matmul(V, tw.u);
        } finally {
          V.dispose();
        }
        try {
          if (!M.isContiguous) {
            const c = M.contiguous();
            M.dispose();
            M = c;
          }
          const y = addressOf(out) + n0 * O * outH * outW * 4;
          if (wino)
            parallel(
              `${wt}_output`,
              [addressOf(M), y, bias, O, Og, G, Op, T, outH, outW, tilesH, tilesW],
              G * T,
              s,
              2048,
            );
          else
            parallel(
              "ft_output",
              [addressOf(M), y, bias, N, mh, mw, O, Og, G, Op, T, outH, outW, tilesH, tilesW],
              G * T,
              s,
              FT_WORK_BYTES,
            );
        } finally {
          M.dispose();
        }
      } finally {
        s.release();
      }
    }
    const done = out;
    out = undefined;
    return done;
  } finally {
    out?.dispose();
    tw?.release();
    scratch.release();
    ops.release();
  }
}
