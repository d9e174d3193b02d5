/**
 * ort-web: onnxruntime-web's WebAssembly execution provider (the SIMD build; the package
 * ships no other since 1.19) in Node, one thread.
 */
import { type OrtModule, ortGemmPeer } from "./ort-gemm.ts";
import { type GemmPeer, reason } from "./types.ts";

export async function openOrtWeb(threads = 1): Promise<GemmPeer | string> {
  try {
    const ort = (await import("onnxruntime-web")) as OrtModule & typeof import("onnxruntime-web");
    ort.env.wasm.numThreads = threads;
    ort.env.wasm.proxy = false;
    // SIMD is required (session creation fails without it) unless simd is set to false.
    ort.env.wasm.simd = true;
    ort.env.logLevel = "error";
    const peer = ortGemmPeer(ort, "", {
      executionProviders: ["wasm"],
      graphOptimizationLevel: "all",
    });
    return {
      ...peer,
      info: `onnxruntime-web ${ort.env.versions.web ?? "?"}, ort-wasm-simd-threaded.wasm, numThreads ${threads}; run() copies A and B into the wasm heap and C out`,
    };
  } catch (err) {
    return reason(err);
  }
}
