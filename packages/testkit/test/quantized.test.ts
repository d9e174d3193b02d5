/**
 * The core's quantized tensors and its reference quantized linear against PyTorch's
 * numbers (data/quantized-torch.json): every case bit-exact.
 */
import { describe, expect, it } from "vitest";
import { QUANTIZED_DATA, runQuantizedConformance } from "../src/index.ts";

describe("quantized conformance against PyTorch (the core's reference)", () => {
  it("quantize, dequantize and the reference linear give PyTorch's integers", () => {
    const report = runQuantizedConformance({ kernel: "reference" });
    expect(QUANTIZED_DATA.torch).toMatch(/^2\.13/);
    console.log(`[testkit] ${report}`);
    report.assertPassed();
    expect(report.results.filter((r) => r.what === "linear").length).toBeGreaterThanOrEqual(7);
  });
});
