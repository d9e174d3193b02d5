/**
 * The core's quantized tensors and its reference quantized ops against PyTorch's numbers
 * (data/quantized-torch.json): bit-exact where PyTorch's engines agree, matmul within 1 LSB.
 */
import { describe, expect, it } from "vitest";
import { QUANTIZED_DATA, runQuantizedConformance } from "../src/index.ts";

describe("quantized conformance against PyTorch (the core's reference)", () => {
  it("quantize, dequantize and the reference ops give PyTorch's integers", () => {
    const report = runQuantizedConformance({
      kernels: {
        quantizedLinear: "reference",
        quantizedConv2d: "reference",
        quantizedRelu: "reference",
        quantizedAdd: "reference",
        quantizedMatmul: "reference",
      },
    });
    expect(QUANTIZED_DATA.torch).toMatch(/^2\.13/);
    console.log(`[testkit] ${report}`);
    report.assertPassed();
    const count = (what: string) => report.results.filter((r) => r.what === what).length;
    expect(count("linear")).toBeGreaterThanOrEqual(7);
    expect(count("conv2d")).toBeGreaterThanOrEqual(8);
    expect([count("relu"), count("add"), count("matmul")]).toEqual([3, 12, 11]);
    // The exact sums meet PyTorch's float matmul bit for bit on these cases.
    expect(report.results.filter((r) => r.what === "matmul" && r.worst !== 0)).toEqual([]);
  });
});
