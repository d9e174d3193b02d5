/**
 * ort-node: onnxruntime-node's native CPU execution provider (MLAS), one intra-op and one
 * inter-op thread. Installed with ONNXRUNTIME_NODE_INSTALL=skip: the CPU binaries ship in
 * the package; the install script would only fetch CUDA/TensorRT add-ons.
 */
import { type OrtModule, ortGemmPeer } from "./ort-gemm.ts";
import { type GemmPeer, reason } from "./types.ts";

export async function openOrtNode(threads = 1): Promise<GemmPeer | string> {
  try {
    type Ort = OrtModule & typeof import("onnxruntime-node");
    // CommonJS under ESM: the namespace, or its default export, holds the API.
    const mod = (await import("onnxruntime-node")) as unknown as Ort & { default?: Ort };
    const ort = (mod.InferenceSession ? mod : mod.default) as Ort;
    ort.env.logLevel = "error";
    return ortGemmPeer(
      ort,
      `onnxruntime-node ${ort.env.versions.node ?? "?"}, cpu EP, intra-op ${threads} / inter-op ${threads} threads`,
      {
        executionProviders: ["cpu"],
        intraOpNumThreads: threads,
        interOpNumThreads: threads,
        graphOptimizationLevel: "all",
      },
    );
  } catch (err) {
    return reason(err);
  }
}
