/**
 * fft, ifft, rfft, irfft along one dimension. There is no complex dtype: a complex
 * tensor is a float tensor whose last dimension is 2 (re, im), as torch.view_as_real gives.
 */

import { dispatch } from "../dispatch/dispatcher.ts";
import { ArgumentError, DTypeError, ShapeError } from "../errors.ts";
import { defineOp, type OpParams, type OpRecord } from "../registry/kernels.ts";
import { isFloat } from "../tensor/dtype.ts";
import { normalizeDim, type Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { checkOptions, checkTensor } from "./validate.ts";

export type FftNorm = "backward" | "ortho" | "forward";
export interface FftOptions {
  /** Signal length: the input is zero-padded or trimmed to n (irfft: the output length). */
  n?: number;
  /** Signal dimension, counted without the trailing (re, im) dimension of complex tensors. Default -1. */
  dim?: number;
  norm?: FftNorm;
}

export interface FftParams extends OpParams {
  x: Tensor;
  kind: "fft" | "ifft" | "rfft" | "irfft";
  /** Input is complex (trailing dim 2). */
  complexInput: boolean;
  /** Signal dimension in x (complex tensors: never the trailing 2). */
  dim: number;
  /** Transform length. */
  n: number;
  norm: FftNorm;
  outShape: number[];
}

type FftOp = OpRecord<FftParams, [x: Tensor, opts?: FftOptions], Tensor>;

/** A bad n; when it came from the input's length (no n given), say how and to pass n instead. */
function badLength(kind: FftParams["kind"], given: unknown, n: number, len: number): ArgumentError {
  if (given !== undefined)
    return new ArgumentError(`${kind}: n must be a positive integer, got ${show(given)}`);
  const from =
    kind === "irfft" ? `2 * (${len} - 1) from the input length ${len}` : `the input length ${len}`;
  return new ArgumentError(
    `${kind}: n must be a positive integer, got ${n} (${from}); pass n, the ${kind === "irfft" ? "output" : "signal"} length, explicitly`,
  );
}

/**
 * torch.fft promotes integer and bool input to float32 (complex64 out); there is no implicit
 * promotion here, so name the cast that gives torch's result.
 */
function checkFftDtype(kind: FftParams["kind"], x: Tensor): void {
  if (isFloat(x.dtype)) return;
  throw new DTypeError(
    `${kind}: x has dtype ${x.dtype}; expected a floating dtype (float32, float64, float16, bfloat16). Cast it first, x.astype("float32"), for torch.fft's result (it promotes ${x.dtype} to float32)`,
  );
}

function define(kind: FftParams["kind"]): FftOp {
  const complexInput = kind !== "rfft";
  const prepare = (x: Tensor, opts?: FftOptions): FftParams => {
    checkTensor(kind, "x", x);
    checkFftDtype(kind, x);
    const o = checkOptions(kind, opts, ["n", "dim", "norm"]) as FftOptions;
    if (complexInput && (x.rank < 2 || x.shape[x.rank - 1] !== 2)) {
      throw new ShapeError(
        `${kind}: x must be complex, i.e. have a last dimension of 2 (re, im); got shape [${x.shape}]. For real input use rfft, or stack a zero imaginary part`,
      );
    }
    const signalRank = complexInput ? x.rank - 1 : x.rank;
    if (signalRank < 1)
      throw new ShapeError(
        `${kind}: x needs at least one signal dimension, got shape [${x.shape}]`,
      );
    // The rank in normalizeDim's message is the signal rank: say the (re, im) dim is not counted.
    const dimName = complexInput
      ? `${kind}: dim (not counting the trailing (re, im) dim)`
      : `${kind}: dim`;
    // Only a missing dim takes the default: torch refuses dim=None ("must be int, not
    // NoneType"); n and norm take null as torch's None (the default).
    if (o.dim === null)
      throw new ArgumentError(`${kind}: dim must be an integer, got null (leave it out for -1)`);
    const dim = normalizeDim(dimName, o.dim ?? -1, signalRank);
    const len = x.shape[dim];
    const dflt = kind === "irfft" ? 2 * (len - 1) : len;
    const n = o.n ?? dflt;
    if (!Number.isInteger(n) || n < 1) throw badLength(kind, o.n ?? undefined, n, len);
    const norm = o.norm ?? "backward";
    if (norm !== "backward" && norm !== "ortho" && norm !== "forward") {
      throw new ArgumentError(
        `${kind}: norm must be "backward", "ortho" or "forward", got ${show(norm)}`,
      );
    }
    const outShape = [...x.shape];
    if (kind === "rfft") {
      outShape[dim] = Math.floor(n / 2) + 1;
      outShape.push(2);
    } else if (kind === "irfft") {
      outShape.pop();
      outShape[dim] = n;
    } else outShape[dim] = n;
    return {
      x,
      kind,
      complexInput,
      dim,
      n,
      norm,
      outShape,
      deviceType: x.deviceType,
      dtype: x.dtype,
    };
  };
  return defineOp({
    name: kind,
    prepare,
    shapeKey: (p: FftParams) => `${p.x.shape.join("x")},n${p.n}@${p.dim}`,
    result: (p: FftParams) => ({ shape: p.outShape, dtype: p.dtype }),
  });
}

export const fftOp: FftOp = define("fft");
export const ifftOp: FftOp = define("ifft");
export const rfftOp: FftOp = define("rfft");
export const irfftOp: FftOp = define("irfft");

/** Discrete Fourier transform of a complex tensor [..., 2]. */
export function fft(x: Tensor, opts?: FftOptions): Tensor {
  return dispatch(fftOp, fftOp.prepare(x, opts));
}
export function ifft(x: Tensor, opts?: FftOptions): Tensor {
  return dispatch(ifftOp, ifftOp.prepare(x, opts));
}
/** Real input -> the n/2+1 non-negative frequency bins, complex [..., 2]. */
export function rfft(x: Tensor, opts?: FftOptions): Tensor {
  return dispatch(rfftOp, rfftOp.prepare(x, opts));
}
/** Inverse of rfft: n/2+1 complex bins [..., 2] -> n real samples. */
export function irfft(x: Tensor, opts?: FftOptions): Tensor {
  return dispatch(irfftOp, irfftOp.prepare(x, opts));
}
