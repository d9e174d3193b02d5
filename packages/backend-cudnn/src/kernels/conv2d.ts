/**
 * conv2d on "cuda" through cuDNN: the graph of graph/conv.ts (bias fused as a pointwise add),
 * a plan chosen under the cudnn flags and cached per problem, and one execution. NCHW and
 * channels-last inputs run as they are; the output takes the input's memory format.
 */
import { bytesPerElement, DeviceError, Tensor } from "@backplane/core";
import { allocateStorage, type Conv2dParams, type KernelDefinition } from "@backplane/core/backend";
import { buildConvGraph } from "../graph/conv.ts";
import { alignmentOf, type Layout, layoutOf, UID } from "../graph/tensors.ts";
import type { CachedPlan } from "../plan/cache.ts";
import type { SelectionFlags } from "../plan/select.ts";
import {
  capability,
  type Device,
  deviceFor,
  deviceKey,
  flagsKey,
  planTimer,
  selectionFlags,
} from "./common.ts";

/** Why cuDNN cannot take these inputs, or true. Static: no cuDNN call. */
export function convSupport(p: Conv2dParams, cc?: number): true | string {
  // cuDNN's finalize fails with BAD_PARAM on a zero channel dim (0 == xDimA[1]).
  if (p.c === 0)
    return `cuDNN conv2d takes no empty input-channel dimension; input is [${p.input.shape}]`;
  const layout = layoutOf(p.input);
  if (!layout)
    return `cuDNN conv2d takes packed NCHW or channels-last (NHWC) input; input has strides [${p.input.strides}] (make it contiguous)`;
  const wl = layoutOf(p.weight);
  if (wl !== layout && !(p.kh === 1 && p.kw === 1 && wl))
    return `cuDNN conv2d needs the weight in the input's memory format (${layout}); weight strides are [${p.weight.strides}]`;
  if (p.bias && p.bias.strides[0] !== 1 && p.outChannels > 1)
    return "cuDNN conv2d needs a contiguous bias";
  if (cc !== undefined && p.dtype === "bfloat16" && cc < 80)
    return `cuDNN computes bfloat16 convolutions on compute capability 8.0+; this device is ${Math.floor(cc / 10)}.${cc % 10}`;
  return true;
}

interface Alignments {
  x: number;
  w: number;
  bias?: number;
}

/** The plan key: the device (deviceKey) and everything that changes the graph or the choice. */
export function convKey(
  device: string,
  p: Conv2dParams,
  layout: Layout,
  align: Alignments,
  flags: SelectionFlags,
): string {
  // One template, no intermediate array: the key is built on every call. The output dims stand
  // for the post padding ("same" with an even kernel pads one more after than before).
  const w = p.weight;
  return `conv2d|${device}|${p.dtype}|${layout}|${p.n}x${p.c}x${p.h}x${p.w}|w${w.shape}:${w.strides}|s${p.strideH},${p.strideW}p${p.padTop},${p.padLeft}d${p.dilationH},${p.dilationW}g${p.groups}|o${p.outH}x${p.outW}|${p.bias ? "bias" : ""}|a${align.x},${align.w},${align.bias ?? ""}|${flagsKey(flags)}`;
}

/** The output [n, outC, outH, outW] in the input's memory format (one storage, one tensor). */
function output(p: Conv2dParams, layout: Layout): Tensor {
  const [n, c, h, w] = [p.n, p.outChannels, p.outH, p.outW];
  const storage = allocateStorage(p.input.device, n * c * h * w * bytesPerElement(p.dtype));
  const strides = layout === "NCHW" ? [c * h * w, h * w, w, 1] : [h * w * c, 1, w * c, c];
  return new Tensor(storage, p.dtype, [n, c, h, w], strides);
}

function pointers(d: Device, p: Conv2dParams, out: Tensor): Map<number, bigint> {
  const m = new Map<number, bigint>([
    [UID.X, d.ctx.address(p.input)],
    [UID.W, d.ctx.address(p.weight)],
    [UID.Y, d.ctx.address(out)],
  ]);
  if (p.bias) m.set(UID.BIAS, d.ctx.address(p.bias));
  return m;
}

/**
 * The plan for these inputs and the pointers to run it with. A cache hit costs the key and
 * one lookup; on a miss the graph is built and (benchmark) candidates are timed writing `out`.
 */
export function convPlan(
  d: Device,
  p: Conv2dParams,
  out: Tensor,
): { plan: CachedPlan; ptrs: Map<number, bigint> } {
  const layout = layoutOf(p.input)!;
  const flags = selectionFlags();
  const ptrs = pointers(d, p, out);
  const align: Alignments = {
    x: alignmentOf(p.input),
    w: alignmentOf(p.weight),
    bias: p.bias ? alignmentOf(p.bias) : undefined,
  };
  const key = convKey(deviceKey(d), p, layout, align, flags);
  const plan =
    d.rt.plans.get(key) ??
    d.rt.plan(
      key,
      (b) => buildConvGraph(b, p, layout, align),
      p.dtype,
      flags,
      d.rt.handle(d.ctx, d.index),
      planTimer(d, (pl) => d.rt.execute(d.ctx, d.index, pl, ptrs)),
    );
  return { plan, ptrs };
}

function run(p: Conv2dParams): Tensor {
  const d = deviceFor(p.input);
  if (typeof d === "string") throw new DeviceError(`cudnn-conv2d: ${d}`);
  const layout = layoutOf(p.input)!;
  const out = output(p, layout);
  if (out.numel === 0) return out;
  const { plan, ptrs } = convPlan(d, p, out);
  d.rt.execute(d.ctx, d.index, plan, ptrs);
  return out;
}

export function convKernels(): KernelDefinition<Conv2dParams>[] {
  return [
    {
      op: "conv2d",
      name: "cudnn-conv2d",
      device: "cuda",
      dtypes: ["float32", "float16", "bfloat16"],
      // Deterministic mode screens out the engines cuDNN notes as non-deterministic.
      deterministic: true,
      flags: ["cudnn.enabled"],
      precision: "highest",
      priority: 300,
      verboseFlags: [],
      supports: (p) => {
        const d = deviceFor(p.input);
        if (typeof d === "string") return d;
        return convSupport(p, capability(d));
      },
      run,
    },
  ];
}
