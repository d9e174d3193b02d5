/**
 * The "onednn" quantized engine's kernels (backends.quantized.engine): linear on oneDNN's
 * int8 GEMM (qlinear.ts), conv2d on its int8 convolution primitive (qconv.ts).
 */
import { type AnyKernelDefinition, ops, quantizedEngineGate } from "@backplane/core/backend";
import { dnnlQConv, dnnlQConvSupports } from "./qconv.ts";
import { dnnlQLinear, dnnlQLinearSupports, ONEDNN_ENGINE } from "./qlinear.ts";

export function dnnlQuantizedKernels(): AnyKernelDefinition[] {
  return [
    ops.quantizedLinear.kernel({
      name: "onednn-qlinear",
      device: "cpu",
      dtypes: ["uint8"],
      deterministic: true,
      flags: ["mkldnn.enabled"],
      verboseFlags: ["mkldnn.verbose"],
      priority: 50,
      enabled: quantizedEngineGate(ONEDNN_ENGINE),
      supports: dnnlQLinearSupports,
      run: dnnlQLinear,
    }),
    ops.quantizedConv2d.kernel({
      name: "onednn-qconv2d",
      device: "cpu",
      dtypes: ["uint8"],
      // Exact integer sums, then one requantization per output: the same bits on any
      // thread count.
      deterministic: true,
      flags: ["mkldnn.enabled"],
      verboseFlags: ["mkldnn.verbose"],
      priority: 50,
      enabled: quantizedEngineGate(ONEDNN_ENGINE),
      supports: dnnlQConvSupports,
      run: dnnlQConv,
    }),
  ];
}
