/**
 * ort-node: onnxruntime-node's native CPU execution provider (MLAS), one intra-op and one
 * inter-op thread. Installed with ONNXRUNTIME_NODE_INSTALL=skip: the CPU binaries ship in
 * the package; the install script would only fetch CUDA/TensorRT add-ons.
 */
import { type OrtModule, ortGemmPeer } from "./ort-gemm.ts";
import { type GemmPeer, reason } from "./types.ts";

export async function openOrtNode(threads = 1): Promise<GemmPeer | string> {
  try {
    const mod = (await import("onnxruntime-node")) as any;
    const ort = (mod.InferenceSession ? mod : mod.default) as OrtModule &
      typeof import("onnxruntime-node");
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
