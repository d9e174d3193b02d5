/**
 * The "qnnpack" quantized engine (backends.quantized.engine), as PyTorch names its
 * mobile int8 library: quantizedLinear (quantized-linear.ts) and quantizedConv2d
 * (quantized-conv.ts) in WASM SIMD128 (assembly/qgemm.ts), so they run in every runtime,
 * browsers included.
 */
import { type AnyKernelDefinition, quantizedEngineGate } from "@backplane/core/backend";
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
    {
      ...common,
      op: "quantizedLinear",
      name: "qnnpack-linear",
      supports: qnnpackLinearSupports as (p: never) => true | string,
      run: qnnpackLinear as (p: never) => unknown,
    },
    {
      ...common,
      op: "quantizedConv2d",
      name: "qnnpack-conv2d",
      supports: qnnpackConv2dSupports as (p: never) => true | string,
      run: qnnpackConv2d as (p: never) => unknown,
    },
  ];
}
