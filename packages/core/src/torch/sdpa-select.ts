/**
 * Choosing the attention kernel (torch.nn.attention.sdpa_kernel and the
 * torch.backends.cuda SDP switches). Each SDPA kernel declares a family; the four
 * switches gate the families; sdpaKernel() enables only the listed ones inside a scope
 * and, with setPriority, makes their order win. Reasons come from the kernel table, so
 * a refusal always says which kernel refused and why.
 */

import { explain } from "../dispatch/explain.ts";
import { ArgumentError } from "../errors.ts";
import { SDP_FAMILY_FLAGS } from "../flags/builtin.ts";
import {
  changeOf,
  type FlagScope,
  getFlag,
  openChangeScope,
  runWithState,
  type ScopeChanges,
  setFlag,
} from "../flags/state.ts";
import { checkBool, checkOptions } from "../ops/validate.ts";
import { availabilityOf, getBackend } from "../registry/backends.ts";
import { getOp } from "../registry/kernels.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { warnOnce } from "../util/log.ts";

export const SDPBackend = {
  ERROR: "ERROR",
  MATH: "MATH",
  FLASH_ATTENTION: "FLASH_ATTENTION",
  EFFICIENT_ATTENTION: "EFFICIENT_ATTENTION",
  CUDNN_ATTENTION: "CUDNN_ATTENTION",
  OVERRIDEABLE: "OVERRIDEABLE",
} as const;
export type SDPBackend = Exclude<(typeof SDPBackend)[keyof typeof SDPBackend], "ERROR">;

/** Each family's switch: the registry gates every attention kernel of a family by it. */
const FLAG: Record<SDPBackend, string> = SDP_FAMILY_FLAGS;
const ALL = Object.keys(FLAG) as SDPBackend[];
const OP = "scaledDotProductAttention";

/** The inputs of one attention call, as torch's SDPAParams holds them. */
export class SDPAParams {
  constructor(
    readonly query: Tensor,
    readonly key: Tensor,
    readonly value: Tensor,
    readonly attnMask: Tensor | null = null,
    readonly dropout = 0,
    readonly isCausal = false,
    readonly enableGqa = false,
  ) {}
}

/**
 * The backends named, each once in its first place (as torch's dict.fromkeys). An empty
 * list is taken, as torch takes it: every backend off, so SDPA says no kernel may run.
 */
function checkBackends(list: unknown): SDPBackend[] {
  const arr = [...new Set(Array.isArray(list) ? list : [list])];
  for (const b of arr) {
    if (!ALL.includes(b as SDPBackend)) {
      throw new ArgumentError(
        `sdpaKernel: unknown backend ${show(b)}; use SDPBackend.${ALL.join(", SDPBackend.")}`,
      );
    }
  }
  return arr as SDPBackend[];
}

function exclusive(list: SDPBackend[], setPriority: boolean): ScopeChanges {
  const values = Object.fromEntries(ALL.map((b) => [FLAG[b], list.includes(b)]));
  return setPriority ? { values, priorities: { [OP]: list } } : { values };
}

/** `{ setPriority?: boolean }`, checked: a typo or a non-boolean is an ArgumentError. */
function checkSdpaOptions(fn: string, opts: unknown): boolean {
  return checkBool(fn, "setPriority", checkOptions(fn, opts, ["setPriority"]).setPriority, false);
}

/**
 * Inside the scope only the listed backends may run SDPA; with setPriority their order
 * wins over the kernels' own priorities. `using _ = sdpaKernel([SDPBackend.MATH])`.
 */
export function sdpaKernel(
  backends: SDPBackend | SDPBackend[],
  opts?: { setPriority?: boolean },
): FlagScope {
  const setPriority = checkSdpaOptions("sdpaKernel", opts);
  return openChangeScope(exclusive(checkBackends(backends), setPriority));
}

/** The async-safe form: holds across awaits inside fn, for this task only. */
export function withSdpaKernel<R>(
  backends: SDPBackend | SDPBackend[],
  fn: () => R,
  opts?: { setPriority?: boolean },
): R {
  const setPriority = checkSdpaOptions("withSdpaKernel", opts);
  if (typeof fn !== "function") throw new ArgumentError("withSdpaKernel: fn must be a function");
  return runWithState(changeOf(exclusive(checkBackends(backends), setPriority)), fn);
}

const SDP_KERNEL_OPTIONS = {
  enableFlash: "cuda.flashSdp",
  enableMath: "cuda.mathSdp",
  enableMemEfficient: "cuda.memEfficientSdp",
  enableCudnn: "cuda.cudnnSdp",
} as const;
const BACKEND_OF: Record<keyof typeof SDP_KERNEL_OPTIONS, SDPBackend> = {
  enableFlash: "FLASH_ATTENTION",
  enableMath: "MATH",
  enableMemEfficient: "EFFICIENT_ATTENTION",
  enableCudnn: "CUDNN_ATTENTION",
};

/**
 * Deprecated (as in torch): select by switching backends off. Prefer sdpaKernel().
 */
export function sdpKernel(
  opts: {
    enableFlash?: boolean;
    enableMath?: boolean;
    enableMemEfficient?: boolean;
    enableCudnn?: boolean;
  } = {},
): FlagScope {
  const o = checkOptions("sdpKernel", opts, Object.keys(SDP_KERNEL_OPTIONS));
  // As torch's, an sdpaKernel() of the enabled ones: every other backend is off in the
  // scope, OVERRIDEABLE (which sdp_kernel cannot name) included.
  const enabled = (Object.keys(SDP_KERNEL_OPTIONS) as (keyof typeof SDP_KERNEL_OPTIONS)[])
    .filter((k) => checkBool("sdpKernel", k, o[k], true))
    .map((k) => BACKEND_OF[k]);
  warnOnce(
    "deprecated:sdpKernel",
    "backends.cuda.sdpKernel() is deprecated; use nn.attention.sdpaKernel([SDPBackend...]) instead",
  );
  return openChangeScope(exclusive(enabled, false));
}

/** torch.backends.cuda's SDP switches: a getter and a setter per family. */
export interface SdpSwitches {
  flashSdpEnabled(): boolean;
  enableFlashSdp(b: boolean): void;
  memEfficientSdpEnabled(): boolean;
  enableMemEfficientSdp(b: boolean): void;
  mathSdpEnabled(): boolean;
  enableMathSdp(b: boolean): void;
  cudnnSdpEnabled(): boolean;
  enableCudnnSdp(b: boolean): void;
}

export const sdpSwitches: SdpSwitches = {
  flashSdpEnabled: () => getFlag(FLAG.FLASH_ATTENTION) as boolean,
  enableFlashSdp: (b: boolean) => setFlag(FLAG.FLASH_ATTENTION, b),
  memEfficientSdpEnabled: () => getFlag(FLAG.EFFICIENT_ATTENTION) as boolean,
  enableMemEfficientSdp: (b: boolean) => setFlag(FLAG.EFFICIENT_ATTENTION, b),
  mathSdpEnabled: () => getFlag(FLAG.MATH) as boolean,
  enableMathSdp: (b: boolean) => setFlag(FLAG.MATH, b),
  cudnnSdpEnabled: () => getFlag(FLAG.CUDNN_ATTENTION) as boolean,
  enableCudnnSdp: (b: boolean) => setFlag(FLAG.CUDNN_ATTENTION, b),
};

/** Why each kernel of `family` refuses `params` (empty when one accepts). */
export function sdpaRefusals(family: SDPBackend, params: SDPAParams): string[] {
  return refusalsOf(family, params, "sdpaRefusals");
}

/** sdpaRefusals, its argument errors named after the function the user called (`fn`). */
function refusalsOf(family: SDPBackend, params: SDPAParams, fn: string): string[] {
  if (!ALL.includes(family))
    throw new ArgumentError(
      `${fn}: unknown backend ${show(family)}; use SDPBackend.${ALL.join(", SDPBackend.")}`,
    );
  // The tensors themselves are checked by explain(), as a call would check them.
  if (params === null || typeof params !== "object")
    throw new ArgumentError(
      `${fn}: params must be an SDPAParams (new SDPAParams(query, key, value, ...)), got ${show(params)}`,
    );
  const report = explain(OP, params.query, params.key, params.value, {
    attnMask: params.attnMask,
    dropoutP: params.dropout,
    isCausal: params.isCausal,
    enableGqa: params.enableGqa,
  });
  const famKernels = new Set(
    getOp(OP)
      ?.kernels.filter((k) => k.family === family)
      .map((k) => k.name),
  );
  const mine = report.candidates.filter((c) => famKernels.has(c.kernel));
  if (mine.some((c) => c.accepted)) return [];
  if (mine.length === 0)
    return [`no ${family} kernel is registered (for any device); a backend package provides it`];
  return mine.map((c) => `${c.kernel} (${c.backend}): ${c.reason}`);
}

/** torch.backends.cuda.can_use_*_attention(params, debug). */
export type CanUse = (params: SDPAParams, opts?: { debug?: boolean }) => boolean;

function canUse(family: SDPBackend, fn: string): CanUse {
  return (params: SDPAParams, opts?: { debug?: boolean }): boolean => {
    const debug = checkBool(fn, "debug", checkOptions(fn, opts, ["debug"]).debug, false);
    const reasons = refusalsOf(family, params, fn);
    if (debug && reasons.length > 0)
      for (const r of reasons) console.warn(`[backplane] ${family} refused: ${r}`);
    return reasons.length === 0;
  };
}

export const canUseFlashAttention: CanUse = canUse("FLASH_ATTENTION", "canUseFlashAttention");
export const canUseEfficientAttention: CanUse = canUse(
  "EFFICIENT_ATTENTION",
  "canUseEfficientAttention",
);
export const canUseCudnnAttention: CanUse = canUse("CUDNN_ATTENTION", "canUseCudnnAttention");

/** True when some available backend registered a FLASH_ATTENTION kernel. */
export function isFlashAttentionAvailable(): boolean {
  return (getOp(OP)?.kernels ?? []).some((k) => {
    const b = getBackend(k.backend);
    return k.family === "FLASH_ATTENTION" && b !== undefined && availabilityOf(b).available;
  });
}
