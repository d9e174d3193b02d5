/**
 * fft, ifft, rfft, irfft on cuFFT. A transform along `dim` of a tensor seen as
 * [outer, len, inner] (complex elements are (re, im) pairs, the trailing 2) becomes one
 * batched 1-D plan: batch = outer with unit stride when inner is 1, else batch = inner with
 * stride inner (executed once per outer slice). Plans come from the device's
 * cufftPlanCache. Inputs are gathered (and zero-padded or trimmed to n) into a contiguous
 * buffer when needed; C2R always gets a copy, since cuFFT may overwrite a C2R input.
 * Normalisation ("backward", "ortho", "forward") is a scale kernel on the output.
 */
import { bytesPerElement, empty, type Tensor } from "@backplane/core";
import { batchOffsets, type FftParams, type KernelDefinition } from "@backplane/core/backend";
import { launchCopy2d } from "../../copy2d.ts";
import { check } from "../../errors.ts";
import { LIBRARY_ENUMS as X } from "../../native/library-api.ts";
import { type CudaRuntime, type DeviceScratch, grid1d, planKey } from "../../runtime.ts";
import { currentRuntime } from "../../state.ts";
import { dataPtr, deviceOf, storagePtr } from "../../tensors.ts";

export interface FftLayout {
  outer: number;
  len: number;
  inner: number;
  /** Scalars per element: 2 for complex, 1 for real. */
  comps: number;
  /** Signal length the input is padded or trimmed to. */
  nIn: number;
  /** Signal length of the output. */
  nOut: number;
  type: number;
  /** CUFFT_FORWARD / CUFFT_INVERSE for C2C. */
  direction: number;
  scale: number;
}

const prod = (xs: readonly number[]) => xs.reduce((a, b) => a * b, 1);

/** The transform's geometry, cuFFT type and normalisation. */
export function fftLayout(p: FftParams): FftLayout {
  const x = p.x;
  const signalRank = p.complexInput ? x.rank - 1 : x.rank;
  const outer = prod(x.shape.slice(0, p.dim));
  const len = x.shape[p.dim]!;
  const inner = prod(x.shape.slice(p.dim + 1, signalRank));
  const half = Math.floor(p.n / 2) + 1;
  const f64 = p.dtype === "float64";
  const type =
    p.kind === "rfft"
      ? f64
        ? X.CUFFT_D2Z
        : X.CUFFT_R2C
      : p.kind === "irfft"
        ? f64
          ? X.CUFFT_Z2D
          : X.CUFFT_C2R
        : f64
          ? X.CUFFT_Z2Z
          : X.CUFFT_C2C;
  const inverse = p.kind === "ifft" || p.kind === "irfft";
  const scale =
    p.norm === "ortho" ? 1 / Math.sqrt(p.n) : (p.norm === "forward") !== inverse ? 1 / p.n : 1;
  return {
    outer,
    len,
    inner,
    comps: p.complexInput ? 2 : 1,
    nIn: p.kind === "irfft" ? half : p.n,
    nOut: p.kind === "rfft" ? half : p.n,
    type,
    direction: p.kind === "ifft" ? X.CUFFT_INVERSE : X.CUFFT_FORWARD,
    scale,
  };
}

/** True when the dims after `dim` (and the re/im pair) are contiguous, as the gather needs. */
export function trailingContiguous(p: FftParams): boolean {
  const x = p.x;
  let expect = 1;
  for (let d = x.rank - 1; d > p.dim; d--) {
    if (x.shape[d] !== 1 && x.strides[d] !== expect) return false;
    expect *= x.shape[d]!;
  }
  return true;
}

function supports(p: FftParams): true | string {
  const rt = currentRuntime();
  if (!rt.layer.libs.cufft)
    return `cuFFT is not loaded: ${rt.layer.info.cufft?.reason ?? "await backends.ready()"}`;
  if (!trailingContiguous(p))
    return `cuFFT needs the dims after dim ${p.dim} contiguous (strides [${p.x.strides}]); make the tensor contiguous first`;
  const l = fftLayout(p);
  if (l.outer * l.nIn * l.inner >= 2 ** 31 || l.outer * l.nOut * l.inner >= 2 ** 31)
    return "transform larger than 2^31 elements (cufftMakePlanMany takes int sizes)";
  return true;
}

/**
 * Zeroes the imaginary parts of the DC bin and (even n) the Nyquist bin of a gathered C2R
 * input [outer, nIn, inner, 2]: torch and the reference ignore them, while cuFFT's result
 * for a non-Hermitian input is undefined (it changed across CUDA versions).
 */
function zeroHermitianImag(
  rt: CudaRuntime,
  device: number,
  s: DeviceScratch,
  input: bigint,
  p: FftParams,
  l: FftLayout,
  scalar: number,
): void {
  const zero = s.upload(scalar === 8 ? new Float64Array(1) : new Float32Array(1));
  const bins = p.n % 2 === 0 ? [0, p.n / 2] : [0];
  for (const k of bins) {
    launchCopy2d(rt, device, scalar, {
      dst: input + BigInt((k * l.inner * 2 + 1) * scalar),
      src: zero,
      table: 0n,
      srcBatch: 0,
      batch: l.outer,
      rows: l.inner,
      cols: 1,
      srcRowStride: 0,
      srcColStride: 0,
      dstBatch: l.nIn * l.inner * 2,
      dstRowStride: 2,
      dstColStride: 1,
    });
  }
}

// Long: plan, workspace and execution of one cuFFT call, released in one finally.
function run(p: FftParams): Tensor {
  const rt = currentRuntime();
  const device = deviceOf(p.x);
  const lib = rt.lib("cufft");
  const l = fftLayout(p);
  const out = empty(p.outShape, { dtype: p.dtype, device: p.x.device });
  if (out.numel === 0) return out;
  const scalar = bytesPerElement(p.dtype);
  const elemIn = scalar * l.comps;
  const elemOut = scalar * (p.kind === "irfft" ? 1 : 2);
  // Long: the body of the cuFFT call above.
  rt.scratch(device, (s) => {
    // The input, contiguous [outer, nIn, inner] (gathered, padded or trimmed as needed).
    let input: bigint;
    // cuFFT wants every input aligned to its complex type (CUFFT_INVALID_VALUE otherwise,
    // seen on an H200 for a view at an odd float offset): such views are gathered.
    const aligned = (p.x.offset * scalar) % (2 * scalar) === 0;
    const contiguous = p.x.isContiguous && aligned && l.len === l.nIn && p.kind !== "irfft";
    if (contiguous) {
      input = dataPtr(p.x);
    } else {
      const bytes = l.outer * l.nIn * l.inner * elemIn;
      input = s.alloc(bytes);
      if (l.len < l.nIn) rt.driver.memset(device, input, 0, bytes);
      const rows = Math.min(l.len, l.nIn);
      const cols = l.inner * l.comps;
      const outerStrides = p.x.strides.slice(0, p.dim);
      const [off] = batchOffsets(p.x.shape.slice(0, p.dim), [outerStrides]) as [Float64Array];
      const table = s.upload(BigInt64Array.from(off, (o) => BigInt(o + p.x.offset)));
      const kernel = scalar === 8 ? "copy2d_b8" : "copy2d_b4";
      rt.launch(device, kernel, grid1d(l.outer * rows * cols), [256, 1, 1], 0, [
        { type: "ptr", value: input },
        { type: "ptr", value: storagePtr(p.x) },
        { type: "ptr", value: table },
        { type: "i64", value: 0 },
        { type: "i64", value: l.outer },
        { type: "i64", value: rows },
        { type: "i64", value: cols },
        { type: "i64", value: p.x.strides[p.dim]! },
        { type: "i64", value: 1 },
        { type: "i64", value: l.nIn * cols },
        { type: "i64", value: cols },
        { type: "i64", value: 1 },
      ]);
      if (p.kind === "irfft") zeroHermitianImag(rt, device, s, input, p, l, scalar);
    }
    const output = dataPtr(out);
    const perOuter = l.inner === 1;
    const key = planKey({
      type: l.type,
      n: p.n,
      inembed: l.nIn,
      istride: perOuter ? 1 : l.inner,
      idist: perOuter ? l.nIn : 1,
      onembed: l.nOut,
      ostride: perOuter ? 1 : l.inner,
      odist: perOuter ? l.nOut : 1,
      batch: perOuter ? l.outer : l.inner,
    });
    rt.planCache(device).with(key, (plan) => {
      rt.driver.use(device);
      if (plan.workSize > 0) {
        const work = s.alloc(plan.workSize);
        check("cufft", "cufftSetWorkArea", lib.cufftSetWorkArea(plan.handle, work));
      }
      const execs = perOuter ? 1 : l.outer;
      for (let o = 0; o < execs; o++) {
        const i = input + BigInt(o * l.nIn * l.inner * elemIn);
        const w = output + BigInt(o * l.nOut * l.inner * elemOut);
        switch (l.type) {
          case X.CUFFT_C2C:
            check("cufft", "cufftExecC2C", lib.cufftExecC2C(plan.handle, i, w, l.direction));
            break;
          case X.CUFFT_Z2Z:
            check("cufft", "cufftExecZ2Z", lib.cufftExecZ2Z(plan.handle, i, w, l.direction));
            break;
          case X.CUFFT_R2C:
            check("cufft", "cufftExecR2C", lib.cufftExecR2C(plan.handle, i, w));
            break;
          case X.CUFFT_D2Z:
            check("cufft", "cufftExecD2Z", lib.cufftExecD2Z(plan.handle, i, w));
            break;
          case X.CUFFT_C2R:
            check("cufft", "cufftExecC2R", lib.cufftExecC2R(plan.handle, i, w));
            break;
          case X.CUFFT_Z2D:
            check("cufft", "cufftExecZ2D", lib.cufftExecZ2D(plan.handle, i, w));
            break;
        }
      }
    });
    if (l.scale !== 1) {
      const count = out.numel;
      rt.launch(device, scalar === 8 ? "scale_f64" : "scale_f32", grid1d(count), [256, 1, 1], 0, [
        { type: "ptr", value: output },
        { type: "i64", value: count },
        scalar === 8 ? { type: "f64", value: l.scale } : { type: "f32", value: l.scale },
      ]);
    }
  });
  return out;
}

export function fftKernels(): KernelDefinition<FftParams>[] {
  return (["fft", "ifft", "rfft", "irfft"] as const).map((op) => ({
    op,
    name: "cufft",
    device: "cuda",
    dtypes: ["float32", "float64"],
    deterministic: true,
    priority: 100,
    supports,
    run,
  }));
}
