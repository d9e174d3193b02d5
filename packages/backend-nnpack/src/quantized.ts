/**
 * The "qnnpack" quantized engine (backends.quantized.engine), as PyTorch names its
 * mobile int8 library: quantizedLinear (quantized-linear.ts) and quantizedConv2d
 * (quantized-conv.ts) in WASM SIMD128 (assembly/qgemm.ts), so they run in every runtime,
 * browsers included.
 */
import { type AnyKernelDefinition, ops, quantizedEngineGate } from "@backplane/core/backend";
import { QNNPACK_ENGINE } from "./qgemm.ts";
import { qnnpackConv2d, qnnpackConv2dSupports } from "./quantized-conv.ts";
import { qnnpackLinear, qnnpackLinearSupports } from "./quantized-linear.ts";

export function qnnpackKernels(): AnyKernelDefinition[] {
  const common = {
    device: "cpu",
    dtypes: ["uint8"],
    // Exact integer sums, each output from one tile: the same bits on any thread count.
    deterministic: true,
    priority: 40,
    enabled: quantizedEngineGate(QNNPACK_ENGINE),
  } as const;
  return [
    ops.quantizedLinear.kernel({
      ...common,
      name: "qnnpack-linear",
      supports: qnnpackLinearSupports,
      run: qnnpackLinear,
    }),
    ops.quantizedConv2d.kernel({
      ...common,
      name: "qnnpack-conv2d",
      supports: qnnpackConv2dSupports,
      run: qnnpackConv2d,
    }),
  ];
}
