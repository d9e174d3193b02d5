/**
 * dispatch: what the dispatcher costs. A 1x1 float32 matmul through the public op
 * (validation + kernel selection + kernel) against the same kernel called directly with
 * prepared params, and tfjs-core's engine running matMul on its cpu backend against
 * tfjs's own BatchMatMul kernel function, in the same run.
 */
import { matmul, type Tensor, tensor } from "@backplane/core";
import { getKernel, ops } from "@backplane/core/backend";
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-cpu";
import type { Harness } from "../harness.ts";

export default {
  description:
    "dispatch overhead of a 1x1 matmul, against a direct kernel call and tfjs-core's engine",
  async run(h: Harness) {
    const a = tensor([[1.5]]);
    const b = tensor([[2]]);
    const kernel = getKernel("matmul", "reference")!;
    const params = ops.matmul.prepare(a, b);

    await tf.setBackend("cpu");
    await tf.ready();
    tf.env().set("DEBUG", false);
    const ta = tf.tensor3d([[[1.5]]]);
    const tb = tf.tensor3d([[[2]]]);
    const tfBackend = tf.backend();
    const tfKernel = tf.getKernel("BatchMatMul", "cpu")!;
    const attrs = { transposeA: false, transposeB: false };

    const ms = await h.compare(
      "1x1x1",
      {
        "backplane-direct": () => (kernel.run(params) as Tensor).dispose(),
        "backplane-dispatch": () => matmul(a, b).dispose(),
        "tfjs-direct": () => {
          const out = tfKernel.kernelFunc({
            inputs: { a: ta, b: tb },
            backend: tfBackend,
            attrs,
          }) as tf.TensorInfo;
          tfBackend.disposeData(out.dataId);
        },
        "tfjs-engine": () => tf.matMul(ta, tb).dispose(),
      },
      { samples: 41, sampleMs: 10 },
    );
    const ours = h.pairedDifferenceMs("backplane-direct", "backplane-dispatch") * 1e3;
    const theirs = h.pairedDifferenceMs("tfjs-direct", "tfjs-engine") * 1e3;
    h.ratio("backplane_dispatch_overhead_us", ours);
    h.ratio("tfjs_engine_overhead_us", theirs);
    h.ratio("overhead_tfjs_over_backplane", theirs / Math.max(ours, 1e-3));
    h.ratio("call_time_tfjs_over_backplane", ms["tfjs-engine"] / ms["backplane-dispatch"]);
    h.note(
      "overhead = median over rounds of (through the op) - (the same kernel, params prepared); outputs disposed in both",
    );
  },
};
