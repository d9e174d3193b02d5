/**
 * The core's own backend, "reference": one plain-TypeScript kernel per op on cpu, for
 * every float dtype. It is the float64 yardstick the testkit measures every backend
 * against, and what runs when no faster backend is installed.
 */

import { quantizedConv2dReference } from "../quantized/conv.ts";
import { quantizedAddReference, quantizedReluReference } from "../quantized/elementwise.ts";
import { quantizedLinearReference } from "../quantized/linear.ts";
import { quantizedMatmulReference } from "../quantized/matmul.ts";
import type { AnyKernelDefinition, OpParams } from "../registry/kernels.ts";
import { registerBackend } from "../registry/register.ts";
import type { DType } from "../tensor/dtype.ts";
import { version } from "../version.ts";
import { sdpaReference } from "./attention.ts";
import {
  addReference,
  geluReference,
  matmulReference,
  mulReference,
  reluReference,
  softmaxReference,
} from "./basic.ts";
import { conv2dReference } from "./conv.ts";
import { einsumReference } from "./einsum.ts";
import { fftReference } from "./fft.ts";
import {
  choleskyReference,
  eighReference,
  invReference,
  luFactorReference,
  qrReference,
  solveReference,
  svdReference,
} from "./linalg.ts";
import { mhaCompositions } from "./mha.ts";

const FLOATS: readonly DType[] = ["float32", "float64", "float16", "bfloat16"];
const NUMERIC: readonly DType[] = [...FLOATS, "int32"];

function ref<P extends OpParams>(
  op: string,
  run: (p: P) => unknown,
  dtypes = FLOATS,
): AnyKernelDefinition {
  return { op, name: "reference", device: "cpu", dtypes, deterministic: true, priority: 0, run };
}

export const referenceKernels: AnyKernelDefinition[] = [
  ref("matmul", matmulReference),
  ref("add", addReference, NUMERIC),
  ref("mul", mulReference, NUMERIC),
  ref("relu", reluReference, NUMERIC),
  ref("gelu", geluReference),
  ref("softmax", softmaxReference),
  ref("logSoftmax", softmaxReference),
  ref("conv2d", conv2dReference),
  ref("quantizedLinear", quantizedLinearReference, ["uint8"]),
  ref("quantizedConv2d", quantizedConv2dReference, ["uint8"]),
  ref("quantizedMatmul", quantizedMatmulReference, ["uint8", "int8"]),
  ref("quantizedAdd", quantizedAddReference, ["uint8", "int8", "int32"]),
  ref("quantizedRelu", quantizedReluReference, ["uint8", "int8", "int32"]),
  ref("einsum", einsumReference),
  ref("cholesky", choleskyReference),
  ref("inv", invReference),
  ref("solve", solveReference),
  ref("luFactor", luFactorReference),
  ref("qr", qrReference),
  ref("eigh", eighReference),
  ref("svd", svdReference),
  ref("fft", fftReference),
  ref("ifft", fftReference),
  ref("rfft", fftReference),
  ref("irfft", fftReference),
  {
    op: "scaledDotProductAttention",
    name: "math",
    family: "MATH",
    device: "cpu",
    dtypes: FLOATS,
    deterministic: true,
    flags: ["cuda.mathSdp"],
    priority: 0,
    run: sdpaReference,
  },
  ...(mhaCompositions("cpu", FLOATS) as AnyKernelDefinition[]),
];

registerBackend({
  name: "reference",
  namespaces: ["core", "cpu", "mha", "nn"],
  packageName: "@backplane/core",
  devices: ["cpu"],
  version: () => version,
  isAvailable: () => ({ available: true }),
  kernels: referenceKernels,
});
