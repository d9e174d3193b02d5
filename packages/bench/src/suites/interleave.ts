/**
 * interleave: two native libraries' kernels called one after the other on 2 threads, as a
 * network calls a convolution (oneDNN, OpenMP threads) and then a linear layer (OpenBLAS,
 * its own pthreads). Each library's idle threads spin before they sleep; when they spin
 * for milliseconds (the libraries' defaults), the next kernel shares a core with them.
 * backend-cpu-mkl sets the spin limits (OPENBLAS_THREAD_TIMEOUT, GOMP_SPINCOUNT,
 * KMP_BLOCKTIME) to about 0.1 ms unless the user set them; running this suite with the
 * libraries' defaults set by hand shows the difference:
 *
 *   npm run bench -- interleave
 *   OPENBLAS_THREAD_TIMEOUT=28 GOMP_SPINCOUNT=300000 npm run bench -- interleave
 *
 * Impls: conv (onednn-conv, alexnet conv2 5x5 64>192 @27), matmul (blas-gemm, 512^3), and
 * matmul+conv (one of each per call). Ratio: (conv + matmul) / (matmul+conv), 1.0 when
 * neither slows the other.
 */
import { backends, conv2d, kernelPriority, matmul, randn } from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { readEnv } from "@backplane/core/cpu";
import type { Harness } from "../harness.ts";
import { reason } from "../peers/types.ts";

const THREADS = 2;

export default {
  description:
    "a oneDNN conv2d and an OpenBLAS matmul called alternately on 2 threads, against each alone",
  async run(h: Harness) {
    // As the process started: backend-cpu-mkl sets the unset ones when it loads.
    const env = ["OPENBLAS_THREAD_TIMEOUT", "GOMP_SPINCOUNT", "KMP_BLOCKTIME"]
      .map((v) => `${v}=${readEnv(v) ?? "(unset)"}`)
      .join(", ");
    try {
      await import("@backplane/backend-cpu-mkl");
      backends.openmp.setNumThreads(THREADS);
      await backends.ready();
    } catch (err) {
      h.note(`backend-cpu-mkl did not load: ${reason(err)}`);
      return;
    }
    const blas = getBackend("cpu-blas");
    if (!backends.mkldnn.isAvailable() || blas?.initState !== "ready") {
      h.note(
        `needs oneDNN and a native BLAS: oneDNN ${backends.mkldnn.status().reason ?? "loaded"}; BLAS ${blas?.initError ?? "loaded"}`,
      );
      return;
    }
    const x = randn([1, 64, 27, 27], { seed: 1 });
    const w = randn([192, 64, 5, 5], { seed: 2 });
    const a = randn([512, 512], { seed: 3 });
    const opts = { padding: 2 };
    using _c = kernelPriority("conv2d", ["onednn-conv"]);
    using _m = kernelPriority("matmul", ["blas-gemm"]);
    const conv = () => conv2d(x, w, opts).dispose();
    const mm = () => matmul(a, a).dispose();
    const ms = await h.compare(
      "alexnet conv2 + matmul 512, 2 threads",
      {
        conv,
        matmul: mm,
        "matmul+conv": () => {
          mm();
          conv();
        },
      },
      { samples: 11 },
    );
    h.ratio("alone_over_alternating", (ms.conv + ms.matmul) / ms["matmul+conv"]);
    h.note(`spin settings as the process started: ${env} (unset: backend-cpu-mkl's limits apply)`);
    h.note(`openmp.numThreads ${backends.openmp.getNumThreads()}`);
  },
};
