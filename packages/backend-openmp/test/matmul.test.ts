import "@backplane/backend-cpu-mkl";
import {
  backends,
  conv2d,
  explain,
  kernelPriority,
  matmul,
  randn,
  ready,
  scaledDotProductAttention,
  withKernelPriority,
} from "@backplane/core";
import { getBackend } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { openmpPool } from "../src/index.ts";
import { withHelperWait } from "./helpers.ts";

describe("with @backplane/backend-cpu-mkl", () => {
  it("a 256x256 float32 matmul on 2 threads equals the 1-thread result bit for bit", async () => {
    await ready();
    const pool = openmpPool()!;
    using _p = kernelPriority("matmul", ["wasm-gemm"]);
    const a = randn([256, 256], { seed: 11 });
    const b = randn([256, 256], { seed: 12 });
    expect(explain("matmul", a, b).selected).toBe("wasm-gemm");
    let one: Float32Array;
    {
      using _ = backends.openmp.numThreadsScope(1);
      const c = matmul(a, b);
      one = new Float32Array(c.hostData() as Float32Array);
      c.dispose();
    }
    const saved = backends.openmp.numThreads; // the flag (0: the cores available)
    backends.openmp.setNumThreads(2);
    try {
      await pool.ready(2);
      expect(backends.openmp.getNumThreads()).toBe(2);
      // A worker surely takes one of the two row blocks.
      const before = pool.stats().workerChunks;
      const c = withHelperWait(pool, () => matmul(a, b));
      const two = c.hostData() as Float32Array;
      const u1 = new Uint32Array(one.buffer, one.byteOffset, one.length);
      const u2 = new Uint32Array(two.buffer, two.byteOffset, two.length);
      let same = true;
      for (let i = 0; i < u1.length; i++) if (u1[i] !== u2[i]) same = false;
      c.dispose();
      expect(same).toBe(true);
      expect(pool.stats().workerChunks).toBeGreaterThan(before);
    } finally {
      backends.openmp.numThreads = saved;
      a.dispose();
      b.dispose();
    }
  });

  it("flash-cpu-blas splits its softmax rows over the pool, its products over the BLAS's threads", async () => {
    await ready();
    const pool = openmpPool()!;
    const blas = getBackend("cpu-blas");
    if (blas?.initState !== "ready") {
      console.log(
        `[backend-openmp] flash-cpu-blas thread test skipped: ${blas?.initError ?? "no cpu-blas"}`,
      );
      return;
    }
    const threads = () => (blas.def.capability?.() as { threads?: number } | undefined)?.threads;
    using _t = backends.openmp.numThreadsScope(2);
    await pool.ready(2);
    using _p = kernelPriority("scaledDotProductAttention", ["flash-cpu-blas"]);
    const q = randn([1, 2, 300, 64], { seed: 21 });
    expect(explain("scaledDotProductAttention", q, q, q).selected).toBe("flash-cpu-blas");
    const before = pool.stats().parallelRuns;
    const out = scaledDotProductAttention(q, q, q);
    // One softmax step per (head, query block): 2 heads x 2 blocks of 256 rows.
    expect(pool.stats().parallelRuns - before).toBe(4);
    expect(threads()).toBe(2);
    // Deterministic mode: the products on one BLAS thread, the count restored after.
    {
      using _d = backends.core.flags({ deterministic: true });
      scaledDotProductAttention(q, q, q).dispose();
    }
    expect(threads()).toBe(2);
    out.dispose();
    q.dispose();
  });

  it("oneDNN's depthwise convolution on the pool's two threads matches the reference", async () => {
    await ready();
    const pool = openmpPool()!;
    const dnnl = getBackend("cpu-dnnl");
    if (dnnl?.initState !== "ready") {
      console.log(
        `[backend-openmp] oneDNN transpose test skipped: ${dnnl?.initError ?? "no cpu-dnnl"}`,
      );
      return;
    }
    using _t = backends.openmp.numThreadsScope(2);
    await pool.ready(2);
    using _p = kernelPriority("conv2d", ["onednn-conv"]);
    // Depthwise, a batch of two with odd sizes: its activations channels-last, moved by the
    // WASM transposes on the pool or by oneDNN's reorders, whichever its plan timed faster.
    const x = randn([2, 37, 47, 53], { seed: 31 }); // 92k elements an image: above the one-thread size
    const w = randn([37, 1, 3, 3], { seed: 32 });
    const opts = { groups: 37, padding: 1 };
    expect(explain("conv2d", x, w, opts).selected).toBe("onednn-conv");
    const y = conv2d(x, w, opts);
    const ref = withKernelPriority("conv2d", ["reference"], () => conv2d(x, w, opts));
    const a = y.toFloat64();
    const b = ref.toFloat64();
    let worst = 0;
    let scale = 0;
    for (let i = 0; i < a.length; i++) {
      worst = Math.max(worst, Math.abs(a[i] - b[i]));
      scale = Math.max(scale, Math.abs(b[i]));
    }
    expect(worst / scale).toBeLessThan(2e-5);
    for (const t of [x, w, y, ref]) t.dispose();
  });
});
