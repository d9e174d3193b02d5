/**
 * What onnxruntime-web and onnxruntime-node share: a session per size over a one-node
 * MatMul model built in code (onnx-model.ts), timed as `await session.run(feeds)`.
 */
import type * as Ort from "onnxruntime-web";
import { matmulModel } from "./onnx-model.ts";
import type { GemmPeer } from "./types.ts";

/** The part of an onnxruntime package the peers use (web and node alike). */
export interface OrtModule {
  InferenceSession: typeof Ort.InferenceSession;
  Tensor: typeof Ort.Tensor;
}

export function ortGemmPeer(
  ort: OrtModule,
  info: string,
  options: Ort.InferenceSession.SessionOptions,
): GemmPeer {
  return {
    info,
    async prepare(n, a, b) {
      const session = await ort.InferenceSession.create(matmulModel(n, n, n), options);
      const feeds = {
        A: new ort.Tensor("float32", a, [n, n]),
        B: new ort.Tensor("float32", b, [n, n]),
      };
      const run = async () => {
        const out = await session.run(feeds);
        out.C.dispose();
      };
      return {
        run,
        result: async () => {
          const out = await session.run(feeds);
          const c = Float32Array.from(out.C.data as Float32Array);
          out.C.dispose();
          return c;
        },
        dispose: () => session.release(),
      };
    },
  };
}
