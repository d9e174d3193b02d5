/**
 * conv2d as a cuDNN operation graph: y = conv(x, w) [+ bias] [-> relu], the pattern cuDNN's
 * runtime-fusion and precompiled engines take (ConvBiasAct). Inputs are described with their
 * real strides, so NCHW and channels-last (NHWC) tensors are both passed as they are.
 */
import type { Conv2dParams } from "@backplane/core/backend";
import type { DataType, GraphBuilder } from "./builder.ts";
import type { Descriptor } from "./descriptor.ts";
import { dataTypeOf, type Layout, UID } from "./tensors.ts";

export interface ConvGraphOptions {
  /** Fuse a ReLU after the (biased) convolution. */
  relu?: boolean;
}

/** Padding after the input: "same" may pad one more at the bottom/right than at the top/left. */
export function postPadding(p: Conv2dParams): [number, number] {
  const need = (out: number, stride: number, dil: number, k: number, size: number, pre: number) =>
    Math.max(pre, (out - 1) * stride + dil * (k - 1) + 1 - size - pre);
  return [
    need(p.outH, p.strideH, p.dilationH, p.kh, p.h, p.padTop),
    need(p.outW, p.strideW, p.dilationW, p.kw, p.w, p.padLeft),
  ];
}

/** The output's strides in the input's memory format. */
export function outputStrides(p: Conv2dParams, layout: Layout): number[] {
  const { outChannels: k, outH: h, outW: w } = p;
  return layout === "NHWC" ? [h * w * k, 1, w * k, k] : [k * h * w, h * w, w, 1];
}

/** Adds the convolution (and its fused epilogue) to `b`; returns the graph's output uid. */
export function buildConvGraph(
  b: GraphBuilder,
  p: Conv2dParams,
  layout: Layout,
  alignments: { x: number; w: number; bias?: number },
  opts: ConvGraphOptions = {},
): Descriptor {
  const dtype: DataType = dataTypeOf(p.dtype);
  const x = b.tensor({
    uid: UID.X,
    dtype,
    dims: p.input.shape,
    strides: p.input.strides,
    alignment: alignments.x,
  });
  const w = b.tensor({
    uid: UID.W,
    dtype,
    dims: p.weight.shape,
    strides: p.weight.strides,
    alignment: alignments.w,
  });
  const yDims = [p.n, p.outChannels, p.outH, p.outW];
  const yStrides = outputStrides(p, layout);
  const epilogue = p.bias !== null || opts.relu === true;
  const y = b.tensor({ uid: UID.Y, dtype, dims: yDims, strides: yStrides });
  // With an epilogue the convolution writes a float32 intermediate that never reaches memory.
  const convOut = epilogue
    ? b.tensor({
        uid: UID.CONV_OUT,
        dtype: "CUDNN_DATA_FLOAT",
        dims: yDims,
        strides: yStrides,
        virtual: true,
      })
    : y;
  b.convolution(x, w, convOut, {
    prePadding: [p.padTop, p.padLeft],
    postPadding: postPadding(p),
    stride: [p.strideH, p.strideW],
    dilation: [p.dilationH, p.dilationW],
    compute: "CUDNN_DATA_FLOAT",
  });
  let last = convOut;
  if (p.bias) {
    const bias = b.tensor({
      uid: UID.BIAS,
      dtype,
      dims: [1, p.outChannels, 1, 1],
      strides: [p.outChannels, 1, 1, 1],
      alignment: alignments.bias,
    });
    const biased = opts.relu
      ? b.tensor({
          uid: UID.BIAS_OUT,
          dtype: "CUDNN_DATA_FLOAT",
          dims: yDims,
          strides: yStrides,
          virtual: true,
        })
      : y;
    b.pointwise("CUDNN_POINTWISE_ADD", { x: last, b: bias, y: biased });
    last = biased;
  }
  if (opts.relu) b.pointwise("CUDNN_POINTWISE_RELU_FWD", { x: last, y });
  return b.graph();
}
