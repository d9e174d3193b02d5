/** What every algorithm shares: operands in WASM-readable form, trivial cases, batch chunks. */
import { bytesPerElement, empty, type Tensor } from "@backplane/core";
import type { Conv2dParams } from "@backplane/core/backend";
import { addressOf, type Scratch } from "@backplane/core/cpu";
import { parallel } from "../util.ts";

/** Input, weight and bias as contiguous tensors (copies where the caller passed views). */
export interface Operands {
  x: Tensor;
  w: Tensor;
  bias: Tensor | null;
  release(): void;
}

export function operands(p: Conv2dParams): Operands {
  const x = p.input.contiguous();
  const w = p.weight.contiguous();
  const bias = p.bias ? p.bias.contiguous() : null;
  return {
    x,
    w,
    bias,
    release() {
      x.dispose();
      w.dispose();
      bias?.dispose();
    },
  };
}

/** Sizes every algorithm uses. */
export function dims(p: Conv2dParams) {
  const Cg = p.c / p.groups;
  const Og = p.outChannels / p.groups;
  return { Cg, Og, bpe: bytesPerElement(p.dtype), plane: p.outH * p.outW };
}

/** Adds bias[c] to every plane of out [N, O, outH, outW] (contiguous). */
export function addBias(out: Tensor, bias: Tensor, scratch: Scratch): void {
  const [n, o, h, w] = out.shape;
  parallel(
    out.dtype === "float64" ? "bias_f64" : "bias_f32",
    [addressOf(out), addressOf(bias), o, h * w],
    n * o,
    scratch,
  );
}

/**
 * The output when there is nothing to convolve: an empty output, or no input channels
 * (every output is its bias, or zero). undefined otherwise.
 */
export function trivialOutput(p: Conv2dParams): Tensor | undefined {
  const shape = [p.n, p.outChannels, p.outH, p.outW];
  if (p.n * p.outChannels * p.outH * p.outW !== 0 && p.c !== 0) return undefined;
  const out = empty(shape, { dtype: p.dtype });
  if (out.numel === 0) return out;
  const data = out.hostData() as Float32Array | Float64Array;
  const b = p.bias?.toFloat64();
  const plane = p.outH * p.outW;
  for (let i = 0; i < out.numel; i++) data[i] = b ? b[Math.floor(i / plane) % p.outChannels] : 0;
  return out;
}

/** Scratch bytes one chunk of the batch may use before it is split further. */
export const CHUNK_BYTES = 96 * 2 ** 20;

/** Images per chunk when one image needs `perImage` bytes of scratch (at least one). */
export function imagesPerChunk(n: number, perImage: number): number {
  return Math.max(1, Math.min(n, Math.floor(CHUNK_BYTES / Math.max(1, perImage))));
}
