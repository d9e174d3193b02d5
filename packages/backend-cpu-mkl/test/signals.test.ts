/**
 * oneDNN's kernels under a storm of signals. oneDNN 2.x's float32 JIT GEMM points the
 * stack register into the heap while it runs, so a signal landing then corrupts the heap
 * (oneDNN issue 4845): under `node --cpu-prof` a NCHW convolution (its GEMM-based kernel)
 * or a dnnl_sgemm killed the process within a few calls (SIGABRT "corrupted size vs.
 * prev_size", SIGSEGV or SIGFPE). The backend refuses that implementation (call.ts,
 * SIGNAL_UNSAFE); here every oneDNN path of the package runs in a child process whose V8
 * profiler interrupts it every 50 µs, and the child must finish cleanly.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { itDnnl, nodeChildProcess } from "./dnnl-helpers.ts";

const src = (file: string) => fileURLToPath(new URL(`../src/${file}`, import.meta.url));

/** Every oneDNN path: conv2d in each layout, matmul, both attention paths, strided inputs. */
const script = `
import "${src("index.ts")}";
import { backends, conv2d, kernelPriority, matmul, mul, randn, ready, scaledDotProductAttention, tensor } from "@backplane/core";
import { setDnnlLayouts } from "${src("dnnl/conv.ts")}";
await ready();
const x = randn([1, 32, 28, 28]), w3 = randn([32, 32, 3, 3]), w1 = randn([24, 32, 1, 1]);
{
  const only = kernelPriority("conv2d", ["onednn-conv"]);
  for (const layout of ["auto", "plain", "blocked", "matmul"]) {
    setDnnlLayouts(layout);
    for (let i = 0; i < 15; i++) {
      if (layout !== "matmul") conv2d(x, w3, { padding: 1 }).dispose();
      conv2d(x, w1).dispose();
      conv2d(x, w1, { bias: randn([24]) }).dispose();
      if (layout !== "matmul") conv2d(x, randn([12, 8, 3, 3]), { groups: 4, padding: 2, dilation: 2 }).dispose();
    }
  }
  only.restore();
}
{
  const only = kernelPriority("matmul", ["onednn-matmul"]);
  const a = randn([192, 160]), b = randn([96, 160]), c = randn([3, 64, 48]);
  for (let i = 0; i < 30; i++) {
    matmul(a, b.transpose(0, 1)).dispose();
    matmul(c, c.transpose(1, 2)).dispose();
  }
  only.restore();
}
{
  const only = kernelPriority("scaledDotProductAttention", ["flash-cpu-dnnl"]);
  const q = randn([1, 2, 300, 64]), k = randn([1, 2, 300, 64]), v = randn([1, 2, 300, 64]);
  const big = tensor([40]);
  const qBig = mul(q, big); // scores far past the bound's reach: the exact tiles
  const qs = randn([1, 300, 2, 64]).permute([0, 2, 1, 3]); // strided rows: copies
  for (let i = 0; i < 10; i++) {
    scaledDotProductAttention(q, k, v).dispose();
    scaledDotProductAttention(q, k, v, { isCausal: true }).dispose();
    scaledDotProductAttention(qBig, k, v).dispose();
    scaledDotProductAttention(qs, qs, qs).dispose();
  }
  only.restore();
}
console.log("signals: ok");
`;

itDnnl(
  "every oneDNN path survives a signal every 50 µs (node --cpu-prof)",
  () => {
    const cp = nodeChildProcess();
    if (!cp) return; // V8's sampling profiler is Node's flag; the hazard is the library's, not the runtime's
    const dir = mkdtempSync(join(tmpdir(), "bp-signals-"));
    try {
      const r = cp.spawnSync(
        process.execPath,
        [
          "--cpu-prof",
          `--cpu-prof-dir=${dir}`,
          "--cpu-prof-interval=50",
          "--import",
          "tsx",
          "--input-type=module",
          "-e",
          script,
        ],
        {
          encoding: "utf8",
          env: { ...process.env, BACKPLANE_CALIBRATE: "0", OMP_NUM_THREADS: "2" },
          timeout: 100_000,
        },
      );
      expect(
        { status: r.status, signal: r.signal, stderr: r.stderr.slice(-600) },
        r.stdout,
      ).toEqual({ status: 0, signal: null, stderr: "" });
      expect(r.stdout).toContain("signals: ok");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  120_000,
);
