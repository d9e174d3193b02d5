/**
 * scaledDotProductAttention as torch's CUDNN_ATTENTION: the fused flash-attention graph of
 * graph/sdpa.ts on float16/bfloat16, with causal, additive and boolean masks and the scale.
 * supports() names the limit a call is outside of, so the dispatcher falls back to
 * backend-cuda's kernels with that reason in explain().
 */
import { bytesPerElement, DeviceError, empty, type Tensor } from "@backplane/core";
import type { KernelDefinition, SdpaParams } from "@backplane/core/backend";
import { as4d, buildSdpaGraph, sdpaScalars, sdpaStatsBytes } from "../graph/sdpa.ts";
import { alignmentOf, UID } from "../graph/tensors.ts";
import type { CachedPlan } from "../plan/cache.ts";
import type { SelectionFlags } from "../plan/select.ts";
import { libraryStatus } from "../state.ts";
import {
  capability,
  type Device,
  deviceFor,
  deviceKey,
  flagsKey,
  planTimer,
  selectionFlags,
} from "./common.ts";

/** cuDNN's fused attention: head dims up to 128, multiples of 8 (NVIDIA's support matrix). */
export const MAX_HEAD_DIM = 128;
/** Compute capability the fused attention engines need (Ampere and newer). */
export const MIN_CAPABILITY = 80;
/** The first cuDNN whose fused attention takes the graph this package builds (bf16, causal). */
export const MIN_ATTENTION_VERSION = 90000;

/** Why cuDNN's attention cannot take these inputs, or true. Static: no cuDNN call. */
export function sdpaSupport(
  p: SdpaParams,
  facts: { cc?: number; version?: number },
): true | string {
  if (facts.version !== undefined && facts.version < MIN_ATTENTION_VERSION)
    return `cuDNN attention needs cuDNN 9.0+; this is ${facts.version}`;
  if (facts.cc !== undefined && facts.cc < MIN_CAPABILITY)
    return `cuDNN attention needs compute capability 8.0+ (sm80); this device is ${Math.floor(facts.cc / 10)}.${facts.cc % 10}`;
  for (const [name, t] of [
    ["query", p.query],
    ["key", p.key],
    ["value", p.value],
  ] as const) {
    if (!as4d(t))
      return `cuDNN attention takes 2-D to 4-D ${name}; got ${t.rank}-D (fold the batch dims)`;
    if (t.strides[t.rank - 1] !== 1 && t.shape[t.rank - 1]! > 1)
      return `cuDNN attention needs ${name}'s last dim contiguous (stride 1); it is ${t.strides[t.rank - 1]}`;
  }
  const [q4, k4, v4] = [as4d(p.query)!, as4d(p.key)!, as4d(p.value)!];
  const out4 = [...Array(Math.max(0, 2 - p.batchShape.length)).fill(1), ...p.batchShape];
  if (q4.dims[0] !== out4[0] || q4.dims[1] !== out4[1])
    return `cuDNN attention does not broadcast the query: its batch dims [${q4.dims.slice(0, 2)}] must be the output's [${out4}]`;
  if (k4.dims[0] !== q4.dims[0] || v4.dims[0] !== q4.dims[0] || k4.dims[1] !== v4.dims[1])
    return "cuDNN attention needs key and value with the query's batch size and one head count between them";
  if (p.attnMask && p.attnMask.rank > 4) return "cuDNN attention takes masks of at most 4 dims";
  if (p.E > MAX_HEAD_DIM || p.Ev > MAX_HEAD_DIM)
    return `cuDNN attention supports head dims up to ${MAX_HEAD_DIM}; got E=${p.E}, Ev=${p.Ev}`;
  if (p.E % 8 !== 0 || p.Ev % 8 !== 0)
    return `cuDNN attention needs head dims that are multiples of 8; got E=${p.E}, Ev=${p.Ev}`;
  if (p.dropoutP > 0) return "cuDNN attention here runs without dropout (dropoutP must be 0)";
  if (p.L === 0 || p.S === 0) return "cuDNN attention needs non-empty query and key sequences";
  for (const [name, t] of [
    ["query", p.query],
    ["key", p.key],
    ["value", p.value],
  ] as const) {
    const misaligned = misalignment(t);
    if (misaligned) return `cuDNN attention needs ${name} ${misaligned}`;
  }
  // cuDNN 9.19 accepted a plan for these and computed garbage (an H200, the testkit's offset
  // view: 2-byte aligned inputs, error 11.8): refused here instead.
  if (p.attnMask && alignmentOf(p.attnMask) < 16)
    return `cuDNN attention needs the mask to start 16-byte aligned; it starts at byte ${p.attnMask.offset * bytesPerElement(p.attnMask.dtype)} of its storage (make it contiguous)`;
  // A boolean mask read from memory made cuDNN 9.19 raise SIGFPE (an H200, while its plan was
  // built or run): the process died. Refused until a graph cuDNN takes is found.
  if (p.maskKind === "bool")
    return "cuDNN attention here takes additive float masks, not boolean ones (cuDNN 9.19 crashed on a boolean mask read from memory); pass the mask as 0 / -inf in the query's dtype";
  return true;
}

/** Why a query/key/value's rows are not 16-byte aligned (the fused kernels load 16 bytes at a time), or undefined. */
function misalignment(t: Tensor): string | undefined {
  const bytes = bytesPerElement(t.dtype);
  if (alignmentOf(t) < 16)
    return `to start 16-byte aligned; it starts at byte ${t.offset * bytes} of its storage (make it contiguous)`;
  for (let d = 0; d < t.rank - 1; d++)
    if (t.shape[d]! > 1 && t.strides[d] !== 0 && (t.strides[d]! * bytes) % 16 !== 0)
      return `rows 16-byte aligned; dim ${d} has a stride of ${t.strides[d]} elements (make it contiguous)`;
  return undefined;
}

/** The plan key: the device (deviceKey) and everything that changes the graph or the choice. */
export function sdpaKey(device: string, p: SdpaParams, flags: SelectionFlags): string {
  const ts = [p.query, p.key, p.value, ...(p.attnMask ? [p.attnMask] : [])];
  return [
    "sdpa",
    device,
    p.dtype,
    ...ts.map((t) => `${t.shape.join("x")}:${t.strides.join(",")}@${alignmentOf(t)}`),
    p.maskKind,
    p.attnMask?.dtype ?? "",
    p.isCausal ? "causal" : "",
    flagsKey(flags),
  ].join("|");
}

function pointers(
  d: Device,
  p: SdpaParams,
  out: Tensor,
  stats: bigint,
  scalars: Float32Array,
  uids: number[],
): Map<number, bigint> {
  const m = new Map<number, bigint>([
    [UID.Q, d.ctx.address(p.query)],
    [UID.K, d.ctx.address(p.key)],
    [UID.V, d.ctx.address(p.value)],
    [UID.O, d.ctx.address(out)],
    [UID.STATS, stats],
  ]);
  if (p.attnMask) m.set(UID.MASK, d.ctx.address(p.attnMask));
  // By-value scalars are read from host memory when the plan is enqueued.
  for (const [i, uid] of uids.entries())
    m.set(uid, d.rt.layer.addressOf(scalars.subarray(i, i + 1)));
  return m;
}

/** `stats`: the device address of sdpaStatsBytes(p) bytes for the softmax statistics. */
export function sdpaPlan(
  d: Device,
  p: SdpaParams,
  out: Tensor,
  stats: bigint,
): { plan: CachedPlan; ptrs: Map<number, bigint> } {
  const values = sdpaScalars(p);
  const uids = [...values.keys()];
  const scalars = Float32Array.from(values.values());
  const ptrs = pointers(d, p, out, stats, scalars, uids);
  const flags = selectionFlags();
  const key = sdpaKey(deviceKey(d), p, flags);
  // A cache hit costs the key and one lookup; the graph is built on a miss only.
  const plan =
    d.rt.plans.get(key) ??
    d.rt.plan(
      key,
      (b) => buildSdpaGraph(b, p),
      p.dtype,
      flags,
      d.rt.handle(d.ctx, d.index),
      planTimer(d, (pl) => d.rt.execute(d.ctx, d.index, pl, ptrs)),
    );
  return { plan, ptrs };
}

/**
 * Whether cuDNN makes a plan for this problem: undefined when it does (the plan is cached for
 * run()), else cuDNN's reason (the runtime remembers it). The static checks cannot say it all:
 * on an H200 with cuDNN 9.19 every engine refused graphs the support matrix allows, and a
 * kernel that accepts and then throws leaves the dispatcher no fallback. Plans are probed
 * without benchmark timing: which engines cuDNN accepts does not depend on it.
 */
export function planRefusal(d: Device, p: SdpaParams): string | undefined {
  const flags = { ...selectionFlags(), benchmark: false };
  try {
    const handle = d.rt.handle(d.ctx, d.index);
    d.rt.plan(sdpaKey(deviceKey(d), p, flags), (b) => buildSdpaGraph(b, p), p.dtype, flags, handle);
    return undefined;
  } catch (e) {
    return `cuDNN makes no plan for this attention: ${(e as Error).message}`;
  }
}

function run(p: SdpaParams): Tensor {
  const d = deviceFor(p.query);
  if (typeof d === "string") throw new DeviceError(`cudnn-attention: ${d}`);
  const out = empty([...p.batchShape, p.L, p.Ev], { dtype: p.dtype, device: p.query.device });
  if (out.numel === 0) return out;
  const stats = d.ctx.allocate(d.index, sdpaStatsBytes(p));
  try {
    const { plan, ptrs } = sdpaPlan(d, p, out, stats.ptr);
    d.rt.execute(d.ctx, d.index, plan, ptrs);
  } finally {
    // Stream-ordered: the memory is reused only by work queued after this.
    stats.free();
  }
  return out;
}

export function sdpaKernels(): KernelDefinition<SdpaParams>[] {
  return [
    {
      op: "scaledDotProductAttention",
      name: "cudnn-attention",
      family: "CUDNN_ATTENTION",
      device: "cuda",
      dtypes: ["float16", "bfloat16"],
      deterministic: true,
      flags: ["cuda.cudnnSdp", "cudnn.enabled"],
      // First (backend-cuda's math kernel is 350): on an H200 it ran at 0.91-1.00x PyTorch's
      // CUDNN_ATTENTION, 6x-15x faster than cuda-math (B=4 H=16 N=1024..8192, float16).
      priority: 400,
      supports: (p) => {
        const d = deviceFor(p.query);
        if (typeof d === "string") return d;
        const ok = sdpaSupport(p, { cc: capability(d), version: libraryStatus().version });
        return ok === true ? (planRefusal(d, p) ?? true) : ok;
      },
      run,
    },
  ];
}
