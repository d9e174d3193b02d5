/**
 * matmul on CUDA: four kernels over one GEMM path.
 * - "cublas-gemm" (float32/float64/float16/bfloat16): cublasGemmEx and its batched forms;
 *   float32 uses TF32 when cuda.matmul.allowTf32 is set (torch's allow_tf32).
 * - "cublas-gemm-tf32" (float32, precision "high"): CUBLAS_COMPUTE_32F_FAST_TF32; considered
 *   when setFloat32MatmulPrecision is "high" or "medium".
 * - "cublaslt-gemm", "cublaslt-gemm-tf32": the same through cuBLASLt, enabled when
 *   cuda.preferredBlasLibrary is "cublaslt" (strided batches only; otherwise cuBLAS runs).
 */
import { bytesPerElement, empty, type Tensor } from "@backplane/core";
import {
  batchOffsets,
  type KernelDefinition,
  leadingBroadcastStrides,
  type MatmulParams,
  sizeOf,
} from "@backplane/core/backend";
import { currentRuntime } from "../../state.ts";
import {
  dataPtr,
  deviceOf,
  enforceCublasDeterminism,
  gemmFlags,
  storagePtr,
} from "../../tensors.ts";
import {
  cublasSizeProblem,
  type GemmProblem,
  readyProblem,
  runCublas,
  runCublasLt,
  uniformStride,
} from "./gemm.ts";
import { DATA_TYPE, type GemmDtype, gemmMode } from "./modes.ts";

/** The row-major GEMM problem of a matmul: operands with per-batch element offsets. */
export function matmulProblem(p: MatmulParams, out: Tensor): GemmProblem {
  const bs = p.batchShape;
  const aB = leadingBroadcastStrides(p.aShape.slice(0, -2), p.aStrides.slice(0, -2), bs);
  const bB = leadingBroadcastStrides(p.bShape.slice(0, -2), p.bStrides.slice(0, -2), bs);
  const [aOff, bOff] = batchOffsets(bs, [aB, bB]) as [Float64Array, Float64Array];
  const batch = sizeOf(bs);
  const shift = (o: Float64Array, by: number) => Array.from(o, (x) => x + by);
  const bytes = bytesPerElement(p.dtype);
  return {
    m: p.m,
    n: p.n,
    k: p.k,
    batch,
    a: {
      ptr: storagePtr(p.a),
      offsets: shift(aOff, p.a.offset),
      rs: p.aStrides[p.aStrides.length - 2]!,
      cs: p.aStrides[p.aStrides.length - 1]!,
    },
    b: {
      ptr: storagePtr(p.b),
      offsets: shift(bOff, p.b.offset),
      rs: p.bStrides[p.bStrides.length - 2]!,
      cs: p.bStrides[p.bStrides.length - 1]!,
    },
    c: {
      ptr: dataPtr(out),
      offsets: Array.from({ length: batch }, (_, i) => i * p.m * p.n),
      ldc: Math.max(1, p.n),
    },
    abBytes: bytes,
    cBytes: bytes,
  };
}

function capability(p: MatmulParams): number {
  const d = currentRuntime().driver.device(deviceOf(p.a));
  return d.major * 10 + d.minor;
}

function baseSupport(p: MatmulParams, tf32: boolean): true | string {
  const size = cublasSizeProblem(p.m, p.n, p.k, sizeOf(p.batchShape));
  if (size) return size;
  const cc = capability(p);
  if (p.dtype === "bfloat16" && cc < 80)
    return `bfloat16 GEMM needs compute capability 8.0+, ${p.a.device} is ${Math.floor(cc / 10)}.${cc % 10}`;
  if (tf32 && cc < 80)
    return `TF32 needs compute capability 8.0+ (Ampere), ${p.a.device} is ${Math.floor(cc / 10)}.${cc % 10}`;
  return true;
}

function ltSupport(p: MatmulParams, tf32: boolean): true | string {
  const rt = currentRuntime();
  if (!rt.layer.libs.cublasLt)
    return `cuBLASLt is not loaded: ${rt.layer.info.cublasLt?.reason ?? "await backends.ready()"}`;
  const base = baseSupport(p, tf32);
  if (base !== true) return base;
  const bs = p.batchShape;
  if (sizeOf(bs) > 1) {
    const aB = leadingBroadcastStrides(p.aShape.slice(0, -2), p.aStrides.slice(0, -2), bs);
    const bB = leadingBroadcastStrides(p.bShape.slice(0, -2), p.bStrides.slice(0, -2), bs);
    const [aOff, bOff] = batchOffsets(bs, [aB, bB]);
    for (const [name, off] of [
      ["a", aOff],
      ["b", bOff],
    ] as const) {
      if (uniformStride(off!) === null)
        return `${name}'s batch offsets are not evenly spaced (broadcast batch dims [${bs}]); cuBLASLt takes strided batches only`;
    }
  }
  return true;
}

function runMatmul(p: MatmulParams, lt: boolean, forceTf32: boolean): Tensor {
  const rt = currentRuntime();
  const device = deviceOf(p.a);
  enforceCublasDeterminism("matmul");
  const dtype = p.dtype as GemmDtype;
  const mode = gemmMode(dtype, gemmFlags(), forceTf32);
  const out = empty(p.outShape, { dtype, device: p.a.device });
  if (out.numel === 0) return out;
  if (p.k === 0) {
    rt.driver.memset(device, dataPtr(out), 0, out.numel * bytesPerElement(dtype));
    return out;
  }
  const problem = matmulProblem(p, out);
  rt.scratch(device, (s) => {
    const plan = readyProblem(rt, s, problem);
    if (lt) runCublasLt(rt, s, plan, problem, mode, DATA_TYPE[dtype]);
    else runCublas(rt, s, plan, problem, mode, DATA_TYPE[dtype]);
  });
  return out;
}

const preferLt = (flag: (key: string) => unknown): true | string =>
  flag("cuda.preferredBlasLibrary") === "cublaslt"
    ? true
    : `cuda.preferredBlasLibrary is "${String(flag("cuda.preferredBlasLibrary"))}"`;

export function matmulKernels(): KernelDefinition<MatmulParams>[] {
  const common = { op: "matmul", device: "cuda", deterministic: true } as const;
  return [
    {
      ...common,
      name: "cublaslt-gemm-tf32",
      dtypes: ["float32"],
      precision: "high",
      priority: 140,
      enabled: preferLt,
      supports: (p) => ltSupport(p, true),
      run: (p) => runMatmul(p, true, true),
    },
    {
      ...common,
      name: "cublaslt-gemm",
      dtypes: ["float32", "float64", "float16", "bfloat16"],
      priority: 130,
      enabled: preferLt,
      supports: (p) => ltSupport(p, false),
      run: (p) => runMatmul(p, true, false),
    },
    {
      ...common,
      name: "cublas-gemm-tf32",
      dtypes: ["float32"],
      precision: "high",
      priority: 120,
      supports: (p) => baseSupport(p, true),
      run: (p) => runMatmul(p, false, true),
    },
    {
      ...common,
      name: "cublas-gemm",
      dtypes: ["float32", "float64", "float16", "bfloat16"],
      priority: 110,
      supports: (p) => baseSupport(p, false),
      run: (p) => runMatmul(p, false, false),
    },
  ];
}
