/**
 * backends.mkldnn: oneDNN, as in torch. Its kernels run where libdnnl.so.2 loads (Bun,
 * Deno, Node with koffi); `mkldnn.enabled = false` sets them aside; `mkldnn.verbose(level)`
 * and ONEDNN_VERBOSE / DNNL_VERBOSE reach oneDNN's own verbose output; isAvailable() says
 * what to install when the library is missing.
 */
import { backends, getFlag, onFlagChange, runtime } from "@backplane/core";
import {
  type AnyKernelDefinition,
  type BackendDefinition,
  type Conv2dParams,
  defineBackend,
  getBackend,
  ops,
  statusOf,
} from "@backplane/core/backend";
import { allFinite, initFfi, inWasmMemory, readEnv } from "@backplane/core/cpu";
import { modules } from "../kernels/wasm.ts";
import { hasFfi } from "../native/backend.ts";
import { ffiFailure } from "../native/ffi-failure.ts";
import { limitNativeSpinning } from "../native/spin-env.ts";
import { type Algorithm, dnnlConv, dnnlWinogradConv, planFor, resetConvPlans } from "./conv.ts";
import { dnnlFlashKernel, resetOperandPlans } from "./flash.ts";
import { resetSoftmaxPlans } from "./flash-softmax.ts";
import { blocksOf, isOneBlock } from "./kernel-blocks.ts";
import { loadDnnl } from "./library.ts";
import { autoBlasOnly, dnnlMatmul, dnnlMatmulSupports, resetMatmulPlans } from "./matmul.ts";
import { resetMatmulSteps } from "./matmul-step.ts";
import { resetQConvPlans } from "./qconv.ts";
import { ONEDNN_ENGINE, resetQLinearPlans } from "./qlinear.ts";
import { dnnlQuantizedKernels } from "./quantized.ts";
import { dnnlState } from "./state.ts";

export const DNNL_BACKEND = "cpu-dnnl";
const PACKAGE = "@backplane/backend-cpu-mkl";

let searchPaths: readonly string[] | undefined;
const envPath = readEnv("BACKPLANE_DNNL_SEARCH_PATH");
if (envPath !== undefined) searchPaths = envPath.split(/[:;]/).filter(Boolean);

/** Where to look for libdnnl (tests: [] looks nowhere); takes effect at the next ready(). */
export function configureDnnlSearch(paths: readonly string[] | undefined): void {
  searchPaths = paths;
  forget();
}

/** Drops the library and everything made with its engine (plans, reordered weights). */
function forget(): void {
  dnnlState.lib = undefined;
  dnnlState.weightCache.clear();
  resetConvPlans();
  resetMatmulPlans();
  resetSoftmaxPlans();
  resetMatmulSteps();
  resetOperandPlans();
  resetQConvPlans();
  resetQLinearPlans();
}

function applyVerbose(): void {
  dnnlState.lib?.dnnl.dnnl_set_verbose(Number(getFlag("mkldnn.verbose") ?? 0));
}
onFlagChange("mkldnn.verbose", applyVerbose);

/** Why oneDNN's conv refuses these inputs, or true (the plan is made and cached here). */
/** bfloat16 runs where the CPU computes it natively (AVX-512 BF16 or AMX), as in torch. */
function bf16Native(): boolean {
  const f = backends.cpu.getCpuCapabilityInfo().features;
  return f.includes("avx512_bf16") || f.includes("amx_bf16");
}

function convSupports(p: Conv2dParams, algorithm: Algorithm = "direct"): true | string {
  if (!dnnlState.lib) return "oneDNN is not loaded";
  if (p.dtype === "bfloat16" && !bf16Native())
    return "bfloat16 needs a CPU with AVX-512 BF16 or AMX (oneDNN would emulate it slowly); this one has neither";
  for (const [name, t] of [
    ["input", p.input],
    ["weight", p.weight],
    ["bias", p.bias],
  ] as const) {
    if (t && !t.isContiguous)
      return `${name} is a strided view: cpu-dnnl takes contiguous NCHW tensors (contiguous() first)`;
  }
  // No channels in or out: nothing for oneDNN to compute (and a 1x1 layer's matmul plan
  // would end the process in oneDNN 2.6, which divides by zero making an empty product).
  if (p.c === 0 || p.outChannels === 0)
    return `${p.c === 0 ? "no input" : "no output"} channels: the local kernels give the empty or bias-only result`;
  // Padding wider than the kernel reaches (outputs that see no input at all): oneDNN 2.6
  // took 11 s on its first call of a 1x1 convolution padded by 4096 (Node; the fuzz suite).
  if (p.padTop > p.dilationH * (p.kh - 1) || p.padLeft > p.dilationW * (p.kw - 1))
    return "padding wider than the (dilated) kernel: oneDNN's first call of such a convolution is slow; the local kernels take it";
  // A NaN or infinite tap over the padding is NaN (0 * inf) in torch and every other kernel;
  // oneDNN 2.6 skips the padding in some kernels and multiplies it in others (the fuzz suite
  // found both). Checked every call, the answer remembered while the weight is unchanged.
  if (!dnnlState.weightCache.finite(p.weight, p))
    return "the weight holds NaN or infinity, and oneDNN's kernels disagree on it over the padding; the local kernels give the one answer";
  const plan = planFor(p, algorithm);
  return typeof plan === "string" ? plan : true;
}

/**
 * onednn-winograd takes float32 layers of stride 1, dilation 1 and one group with 3x3
 * kernels, or larger ones cut into 3x3 blocks (kernel-blocks.ts: stacked in the CPU
 * memory by a WASM kernel), with a finite input: a transform spreads a NaN or infinity
 * over its whole tile (as nnpack's Winograd refuses them), where the direct kernels keep
 * it at the outputs that see it.
 */
function winogradSupports(p: Conv2dParams): true | string {
  const blocks = blocksOf(p);
  if (typeof blocks === "string") return blocks;
  if (p.strideH !== 1 || p.strideW !== 1 || p.dilationH !== 1 || p.dilationW !== 1)
    return `Winograd needs stride 1 and dilation 1; this is stride ${p.strideH}x${p.strideW}, dilation ${p.dilationH}x${p.dilationW} (onednn-conv takes it)`;
  if (p.groups !== 1) return `Winograd takes one group; this has ${p.groups}`;
  if (p.dtype !== "float32") return `Winograd runs float32 here; this is ${p.dtype}`;
  if (!isOneBlock(blocks) && !(modules.kernels && inWasmMemory(p.input)))
    return "a kernel cut into 3x3 blocks needs the WASM kernels and the input in the CPU memory, to stack the shifted input";
  const ok = convSupports(p, "winograd");
  if (ok !== true) return ok;
  return allFinite(p.input)
    ? true
    : "the input holds NaN or infinity, which a Winograd transform spreads over its whole tile; onednn-conv keeps it local";
}

function dnnlKernels(): AnyKernelDefinition[] {
  return [
    ops.conv2d.kernel({
      name: "onednn-conv",
      device: "cpu",
      dtypes: ["float32", "bfloat16"],
      deterministic: true,
      flags: ["mkldnn.enabled"],
      verboseFlags: ["mkldnn.verbose"],
      priority: 70,
      supports: (p) => convSupports(p),
      run: (p) => dnnlConv(p),
    }),
    ops.conv2d.kernel({
      name: "onednn-winograd",
      device: "cpu",
      dtypes: ["float32"],
      deterministic: true,
      flags: ["mkldnn.enabled"],
      verboseFlags: ["mkldnn.verbose"],
      // Ahead of onednn-conv, which it defers to where oneDNN's direct plan measures faster
      // (conv.ts, fasterThanDirect): the per-shape ranking times the first kernel of each
      // backend against the other backends' (nnpack's Winograd and FFT among them).
      priority: 71,
      supports: winogradSupports,
      run: dnnlWinogradConv,
    }),
    ops.matmul.kernel({
      name: "onednn-matmul",
      device: "cpu",
      dtypes: ["float32"],
      // Its threads split the product's blocks the same way every run at a given count,
      // but oneDNN gives no guarantee across thread counts: deterministic mode sets it aside.
      deterministic: false,
      flags: ["mkldnn.enabled"],
      verboseFlags: ["mkldnn.verbose"],
      // Below the native BLAS and above the WASM GEMM; the calibration reorders by measurement.
      priority: 75,
      enabled: autoBlasOnly,
      supports: dnnlMatmulSupports,
      run: dnnlMatmul,
    }),
    dnnlFlashKernel(),
    ...dnnlQuantizedKernels(),
  ];
}

export const dnnlBackend: BackendDefinition = defineBackend({
  name: DNNL_BACKEND,
  namespaces: ["mkldnn"],
  packageName: PACKAGE,
  devices: ["cpu"],
  // backends.quantized.engine = "onednn" (offered while oneDNN loads)
  provides: { "quantized.engine": [ONEDNN_ENGINE] },
  reads: ["quantized.engine"],
  version: () => {
    const v = dnnlState.lib?.version;
    return v ? `${v.major}.${v.minor}.${v.patch}` : undefined;
  },
  versionNumber: () => {
    const v = dnnlState.lib?.version;
    return v ? v.major * 10000 + v.minor * 100 + v.patch : undefined;
  },
  isAvailable: () =>
    hasFfi()
      ? { available: true }
      : {
          available: false,
          reason: `no FFI in ${runtime().name} (oneDNN needs Bun, Deno or Node)`,
        },
  async init() {
    forget();
    const ffi = await initFfi();
    if (!ffi.ok) throw ffiFailure(ffi);
    await limitNativeSpinning(); // before libgomp starts
    const r = await loadDnnl(searchPaths);
    if (r instanceof Error) throw r;
    if (typeof r === "string") throw new Error(r);
    const d = r.dnnl;
    const engine = new BigUint64Array(1);
    if (d.dnnl_engine_create(engine, 1, 0) !== 0) throw new Error("dnnl_engine_create failed");
    const stream = new BigUint64Array(1);
    if (d.dnnl_stream_create(stream, engine[0], 1) !== 0)
      throw new Error("dnnl_stream_create failed");
    await dnnlState.openLibc();
    dnnlState.lib = { ...r, engine: engine[0], stream: stream[0] };
    applyVerbose();
  },
  performanceKey: () =>
    dnnlState.lib
      ? `${dnnlState.lib.path} ${dnnlState.lib.version.major}.${dnnlState.lib.version.minor}`
      : "not loaded",
  capability: () =>
    dnnlState.lib && {
      library: "oneDNN",
      path: dnnlState.lib.path,
      threads: dnnlState.lib.setThreads ? "OpenMP (follows openmp.numThreads)" : "oneDNN's default",
      weightCache: {
        entries: dnnlState.weightCache.size,
        hits: dnnlState.weightCache.hits,
        misses: dnnlState.weightCache.misses,
      },
    },
  kernels: dnnlKernels(),
  api: {
    mkldnn: {
      /** oneDNN's version as torch gives it: major * 10000 + minor * 100 + patch (20603). */
      version: () => {
        const v = dnnlState.lib?.version;
        return v ? v.major * 10000 + v.minor * 100 + v.patch : undefined;
      },
      isAvailable: () => mkldnnStatus().available,
      status: () => mkldnnStatus(),
    },
  },
});

function mkldnnStatus(): ReturnType<typeof statusOf> {
  const s = statusOf("mkldnn");
  if (!s.available) return s;
  const b = getBackend(DNNL_BACKEND);
  if (b?.initState === "failed") return { ...s, available: false, reason: b.initError };
  if (!dnnlState.lib)
    return { ...s, available: false, reason: "oneDNN has not loaded yet (await backends.ready())" };
  return s;
}
