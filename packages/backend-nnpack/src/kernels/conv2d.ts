/**
 * The conv2d kernels of backend-nnpack, one per algorithm so explain() lists each and
 * exhaustive ranking (core.ranking "exhaustive" / cudnn.benchmark) can time them, plus "auto", which
 * picks among them by NNPACK's rules. Every supports() names what it leaves to others.
 */
import type { DType, Tensor } from "@backplane/core";
import type { Conv2dParams, KernelDefinition, NnpackAlgorithm } from "@backplane/core/backend";
import { allFinite, inWasmMemory } from "@backplane/core/cpu";
import { DEPTHWISE_WORK_LIMIT, depthwise, depthwiseWorkBytes } from "../algorithms/depthwise.ts";
import { implicitGemm, pointwise } from "../algorithms/gemm.ts";
import { type TransformAlgorithm, transformConv } from "../algorithms/transform.ts";

/** The algorithms (the core's NnpackAlgorithm: backends.nnpack.algorithmFor's answers). */
export type Algorithm = NnpackAlgorithm;

const F32: readonly DType[] = ["float32"];
const F32_F64: readonly DType[] = ["float32", "float64"];

const kernelSize = (p: Conv2dParams) => `${p.kh}x${p.kw}`;
const effective = (p: Conv2dParams) => [(p.kh - 1) * p.dilationH + 1, (p.kw - 1) * p.dilationW + 1];

/** Inputs the WASM modules can read at all. */
function inMemory(p: Conv2dParams): true | string {
  const ts = [p.input, p.weight, ...(p.bias ? [p.bias] : [])];
  return ts.every(inWasmMemory)
    ? true
    : "a tensor is not in the CPU memory the WASM kernels share (created before the WASM memory existed?)";
}

const isPointwise = (p: Conv2dParams) =>
  p.kh === 1 &&
  p.kw === 1 &&
  p.strideH === 1 &&
  p.strideW === 1 &&
  p.padTop === 0 &&
  p.padLeft === 0 &&
  p.outH === p.h &&
  p.outW === p.w;
const isDepthwise = (p: Conv2dParams) => p.c / p.groups === 1;

export function supportsWinograd(p: Conv2dParams, variant = "F(6x6,3x3)"): true | string {
  if (p.kh !== 3 || p.kw !== 3)
    return `Winograd ${variant} takes 3x3 kernels; this one is ${kernelSize(p)}`;
  if (p.strideH !== 1 || p.strideW !== 1)
    return `Winograd needs stride 1; stride is ${p.strideH}x${p.strideW}`;
  if (p.dilationH !== 1 || p.dilationW !== 1)
    return `Winograd needs dilation 1; dilation is ${p.dilationH}x${p.dilationW}`;
  return true;
}

export function supportsFft(p: Conv2dParams, tile: 8 | 16): true | string {
  if (p.strideH !== 1 || p.strideW !== 1)
    return `FFT convolution needs stride 1; stride is ${p.strideH}x${p.strideW}`;
  const [eh, ew] = effective(p);
  if (Math.max(eh, ew) < 2) return "FFT convolution takes kernels of 2 to 16; 1x1 goes to direct";
  if (eh > tile || ew > tile) {
    const dil = p.dilationH > 1 || p.dilationW > 1 ? ` (dilated to ${eh}x${ew})` : "";
    return `the ${kernelSize(p)} kernel${dil} does not fit a ${tile}x${tile} tile`;
  }
  return true;
}

export function supportsDirect(p: Conv2dParams): true | string {
  if (isPointwise(p)) return true;
  if (isDepthwise(p)) return depthwiseFits(p);
  return `direct takes 1x1 kernels with stride 1 and no padding, and depthwise convolutions (groups = input channels); this is ${kernelSize(p)}, stride ${p.strideH}x${p.strideW}, padding ${p.padTop}x${p.padLeft}, ${p.c / p.groups} input channels per group`;
}

/** Depthwise runs on a padded copy of each plane: refused where that copy would be huge. */
function depthwiseFits(p: Conv2dParams): true | string {
  const bytes = depthwiseWorkBytes(p);
  if (bytes <= DEPTHWISE_WORK_LIMIT) return true;
  return `direct depthwise would pad each plane to ${Math.round(bytes / 2 ** 20)} MiB of scratch per thread (padding ${p.padTop}x${p.padLeft}, stride ${p.strideH}x${p.strideW}, dilation ${p.dilationH}x${p.dilationW}), above its ${DEPTHWISE_WORK_LIMIT / 2 ** 20} MiB; implicit-gemm takes it`;
}

export function runDirect(p: Conv2dParams): Tensor {
  return isPointwise(p) ? pointwise(p) : depthwise(p);
}

/**
 * Which Winograd variant: F(6x6) (NNPACK's wt8x8) on large outputs, F(4x4) below about
 * 80x80 output pixels per image. Measured on one thread (README): F(4x4) is faster at
 * 56x56 and below -- 36 instead of 64 transformed weights per (in, out) channel pair to
 * stream through the tuple GEMMs, tiles that fit small outputs (14x14: 16 tiles of 4x4
 * against 9 tiles of 6x6 covering 18x18), cheaper transforms -- and F(6x6) from 112x112
 * up, where its 2.25x fewer tiles win. F(4x4) is also about 2x more accurate in float32.
 */
export function winogradVariant(p: Conv2dParams): "wt8x8" | "wt6x6" {
  return p.outH * p.outW >= 6400 ? "wt8x8" : "wt6x6";
}

/**
 * Which FFT tile, by tile count (NNPACK's rule): 8x8 unless it needs more than K times
 * the 16x16 tiles. NNPACK uses K = 4; here the crossover was measured at 6 to 7 (a 16x16
 * tile has 130 transform points against 34, so its tuple GEMMs are more, smaller calls
 * and stream 3.8x the transformed weights): 27x27 outputs of a 5x5 kernel (49 vs 9
 * tiles) ran 1.4x faster on 8x8 tiles, 52x52 (196 vs 25) 1.6x faster on 16x16 (README).
 */
export function fftTile(p: Conv2dParams): "ft8x8" | "ft16x16" {
  const [eh, ew] = effective(p);
  if (Math.max(eh, ew) > 8) return "ft16x16";
  const tiles = (t: number) => Math.ceil(p.outH / (t - eh + 1)) * Math.ceil(p.outW / (t - ew + 1));
  return tiles(8) <= 6 * tiles(16) ? "ft8x8" : "ft16x16";
}

/**
 * NNPACK's choice: depthwise (unless its padded planes would be huge) and 1x1 -> direct;
 * stride or dilation Winograd/FFT cannot take, or float64 -> implicit GEMM; 3x3 -> Winograd (F(6x6), or F(4x4) on outputs
 * below 80x80); other kernels up to 8 -> 8x8 or 16x16 FFT by tile count; up to 16 ->
 * 16x16 FFT; larger -> implicit GEMM.
 */
export function chooseAlgorithm(p: Conv2dParams): Algorithm {
  if (isPointwise(p)) return "direct";
  if (isDepthwise(p)) return depthwiseFits(p) === true ? "direct" : "implicit-gemm";
  if (p.dtype !== "float32") return "implicit-gemm";
  if (supportsWinograd(p) === true) return winogradVariant(p);
  if (supportsFft(p, 16) !== true) return "implicit-gemm";
  return fftTile(p);
}

/** Winograd and FFT mix every input of a tile (and every tap of a kernel) into each output. */
const SPREADS_NON_FINITE = new Set<Algorithm>(["wt8x8", "wt6x6", "ft8x8", "ft16x16"]);

/**
 * What "auto" runs: chooseAlgorithm's pick, unless that is a transform algorithm and the
 * input or weight holds NaN or infinity. A transform spreads one such value over its tile
 * (one NaN pixel made 64 outputs NaN; 1,500 of 1,600 on ft16x16), so then the local
 * implicit GEMM runs, which keeps it where a direct convolution puts it. The scan is one
 * pass over input and weight, a small fraction of a transform convolution's time.
 */
export function autoAlgorithm(p: Conv2dParams): Algorithm {
  const alg = chooseAlgorithm(p);
  if (!SPREADS_NON_FINITE.has(alg)) return alg;
  return finiteOperands(p) ? alg : "implicit-gemm";
}

const finiteOperands = (p: Conv2dParams) => allFinite(p.input) && allFinite(p.weight);

/** A transform kernel's answer: refused, with the reason, for non-finite input or weight. */
function finite(p: Conv2dParams, ok: true | string): true | string {
  if (ok !== true) return ok;
  return finiteOperands(p)
    ? true
    : "a Winograd or FFT transform would spread the NaN or infinity in the input or weight over its whole tile; implicit-gemm and direct keep it local";
}

/**
 * A transform convolution, run again on the implicit GEMM when its output is not finite.
 * Inputs are finite here (supports() and autoAlgorithm see to it), but the transforms
 * scale a tile up before the products: at magnitudes near 1e18 (|x| and |w|) wt8x8 made
 * 133 of 3,200 outputs infinite whose true values were below 3e37. The scan is one pass
 * over the output; the second run happens only where float32 nearly overflowed.
 */
function transformOrExact(p: Conv2dParams, alg: TransformAlgorithm): Tensor {
  const out = transformConv(p, alg);
  if (allFinite(out)) return out;
  out.dispose();
  return implicitGemm(p);
}

const RUN: Record<Algorithm, (p: Conv2dParams) => Tensor> = {
  wt8x8: (p) => transformOrExact(p, "wt8x8"),
  wt6x6: (p) => transformOrExact(p, "wt6x6"),
  ft8x8: (p) => transformOrExact(p, "ft8x8"),
  ft16x16: (p) => transformOrExact(p, "ft16x16"),
  "implicit-gemm": implicitGemm,
  direct: runDirect,
};

export function runAlgorithm(name: Algorithm, p: Conv2dParams): Tensor {
  return RUN[name](p);
}

function kernel(
  name: string,
  dtypes: readonly DType[],
  priority: number,
  supports: (p: Conv2dParams) => true | string,
  run: (p: Conv2dParams) => Tensor,
): KernelDefinition<Conv2dParams> {
  return {
    op: "conv2d",
    name,
    device: "cpu",
    dtypes,
    // Every algorithm splits its work by output (tiles, planes, GEMM rows): no sum is
    // reordered between runs or thread counts, given a deterministic matmul.
    deterministic: true,
    flags: ["nnpack.enabled"],
    priority,
    supports: (p) => {
      const ok = inMemory(p);
      return ok === true ? supports(p) : ok;
    },
    run,
  };
}

export function nnpackKernels(): KernelDefinition<Conv2dParams>[] {
  return [
    kernel(
      "auto",
      F32_F64,
      60,
      () => true,
      (p) => runAlgorithm(autoAlgorithm(p), p),
    ),
    kernel("wt8x8", F32, 56, (p) => finite(p, supportsWinograd(p)), RUN.wt8x8),
    kernel("wt6x6", F32, 55, (p) => finite(p, supportsWinograd(p, "F(4x4,3x3)")), RUN.wt6x6),
    kernel("ft8x8", F32, 54, (p) => finite(p, supportsFft(p, 8)), RUN.ft8x8),
    kernel("ft16x16", F32, 53, (p) => finite(p, supportsFft(p, 16)), RUN.ft16x16),
    kernel("direct", F32_F64, 52, supportsDirect, runDirect),
    kernel("implicit-gemm", F32_F64, 51, () => true, implicitGemm),
  ];
}
