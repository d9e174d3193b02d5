/**
 * ort-node: onnxruntime-node's native CPU execution provider (MLAS), one intra-op and one
 * inter-op thread. Installed with ONNXRUNTIME_NODE_INSTALL=skip: the CPU binaries ship in
 * the package; the install script would only fetch CUDA/TensorRT add-ons.
 */
import { type OrtModule, ortGemmPeer } from "./ort-gemm.ts";
import { type GemmPeer, reason } from "./types.ts";

type Ort = OrtModule & typeof import("onnxruntime-node");

/** onnxruntime-node's API (CommonJS under ESM: the namespace, or its default export). */
export async function loadOrtNode(): Promise<Ort> {
  const mod = (await import("onnxruntime-node")) as unknown as Ort & { default?: Ort };
  const ort = (mod.InferenceSession ? mod : mod.default) as Ort;
  ort.env.logLevel = "error";
  return ort;
}

/** Session options of every ort-node peer: the CPU EP on `threads` intra- and inter-op threads. */
export const ortNodeSessionOptions = (threads = 1) =>
  ({
    executionProviders: ["cpu"],
    intraOpNumThreads: threads,
    interOpNumThreads: threads,
    graphOptimizationLevel: "all",
  }) as const;

export async function openOrtNode(threads = 1): Promise<GemmPeer | string> {
  try {
    const ort = await loadOrtNode();
    return ortGemmPeer(
      ort,
      `onnxruntime-node ${ort.env.versions.node ?? "?"}, cpu EP, intra-op ${threads} / inter-op ${threads} threads`,
      ortNodeSessionOptions(threads),
    );
  } catch (err) {
    return reason(err);
  }
}
