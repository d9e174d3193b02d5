/**
 * sdpa: scaled dot-product attention, float32, B = 1, H = 8, d = 64, L = S = N for
 * N = 512, 1024, 2048, 4096, on one and two threads (backends.openmp.setNumThreads(n);
 * two only when @backplane/backend-openmp imports and its pool is available):
 * - math: PyTorch's math path through the dispatcher, matmul(q, k^T) * scale -> softmax ->
 *   matmul(., v), each step on the kernel the dispatcher picks (the fast GEMM: native BLAS
 *   when backend-cpu-mkl finds one, else its WASM GEMM). The core's pure-TypeScript "math"
 *   SDPA kernel is the accuracy reference, never timed;
 * - fused: scaledDotProductAttention() on the FLASH_ATTENTION kernel the dispatcher ranks
 *   first: flash-cpu-blas (backend-cpu-mkl's flash tiles on the native BLAS) when a native
 *   BLAS is loaded, else flash-cpu; checked with explain() first;
 * - fused-wasm: flash-cpu forced (the flash-style kernel in WASM SIMD alone, as in a browser);
 * - math-wasm (N = 2048 only): the math path with cpu.preferredBlasLibrary = "wasm", the
 *   same instruction set as the fused kernel.
 * Before timing, each fused impl is compared in full with math (max |a - b| / max |b| < 1e-4).
 * Peak EXTRA memory of one call: resetPeakMemory("cpu"), the call, then
 * memoryStats("cpu").peakBytes minus what was allocated before and minus the output (the
 * fused kernel's workspace is a tensor, so it is counted; GEMM packing scratch is not).
 * PyTorch's CPU attention, when `python3 -c "import torch"` works: its SDPA
 * (F.scaled_dot_product_attention, or torch 1.13's F._scaled_dot_product_attention) and
 * its matmul-softmax-matmul, same shapes and thread counts, in a python3 server timed in
 * the same rounds as ours (peers/torch-server.ts).
 * Ratios: speedups are other_ms / fused_ms (> 1: fused faster); memory ratios are
 * math_bytes / fused_bytes.
 *
 *   npm run bench -- sdpa           (about 3 to 5 minutes)
 */

import {
  backends,
  explain,
  kernelPriority,
  matmul,
  memoryStats,
  mul,
  randn,
  resetPeakMemory,
  scaledDotProductAttention,
  softmax,
  type Tensor,
  tensor,
} from "@backplane/core";
import { getKernel } from "@backplane/core/backend";
import { readEnv } from "@backplane/core/cpu";
import type { Harness, Impl } from "../harness.ts";
import { NO_TORCH, torchPythons } from "../peers/torch-python.ts";
import { startTorchServer, type TorchServer } from "../peers/torch-server.ts";
import { reason } from "../peers/types.ts";

const SIZES = [512, 1024, 2048, 4096] as const;
const B = 1;
const H = 8;
const D = 64;
const TOLERANCE = 1e-4;
/** Few, single-call samples for the big sizes (a math call at N = 4096 takes seconds). */
const PLAN: Record<number, { samples: number; sampleMs: number }> = {
  512: { samples: 9, sampleMs: 20 },
  1024: { samples: 7, sampleMs: 0 },
  2048: { samples: 5, sampleMs: 0 },
  4096: { samples: 5, sampleMs: 0 },
};

/**
 * matmul(q, k^T) * scale -> softmax -> matmul(., v), freeing each step's input as it
 * goes; `steps` (when given) receives each step's milliseconds.
 */
function mathPath(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  scale: Tensor,
  steps?: Record<string, number>,
): Tensor {
  const t0 = performance.now();
  const kt = k.transpose(-2, -1);
  const s = matmul(q, kt);
  kt.dispose();
  const t1 = performance.now();
  const scaled = mul(s, scale);
  s.dispose();
  const t2 = performance.now();
  const p = softmax(scaled, -1);
  scaled.dispose();
  const t3 = performance.now();
  const out = matmul(p, v);
  p.dispose();
  if (steps) {
    const t4 = performance.now();
    Object.assign(steps, {
      "q k^T": t1 - t0,
      "* scale": t2 - t1,
      softmax: t3 - t2,
      "p v": t4 - t3,
    });
  }
  return out;
}

/** The fused kernels: the family's first (the dispatcher's choice) and the WASM one. */
const FUSED = { fused: "FLASH_ATTENTION", "fused-wasm": "flash-cpu" } as const;

function fusedCall(which: keyof typeof FUSED, q: Tensor, k: Tensor, v: Tensor): Tensor {
  using _ = kernelPriority("scaledDotProductAttention", [FUSED[which]]);
  return scaledDotProductAttention(q, k, v);
}
const fused = (q: Tensor, k: Tensor, v: Tensor) => fusedCall("fused", q, k, v);
const fusedWasm = (q: Tensor, k: Tensor, v: Tensor) => fusedCall("fused-wasm", q, k, v);

/** Bytes allocated by one call beyond its inputs and its output, at the peak. */
function peakExtra(fn: () => Tensor): number {
  const before = memoryStats("cpu").allocatedBytes;
  resetPeakMemory("cpu");
  const out = fn();
  const peak = memoryStats("cpu").peakBytes - before - out.numel * 4;
  out.dispose();
  return peak;
}

function relDiff(a: Tensor, b: Tensor): number {
  const x = a.hostData() as Float32Array;
  const y = b.hostData() as Float32Array;
  let d = 0;
  let m = 0;
  for (let i = 0; i < a.numel; i++) {
    const e = Math.abs(x[i] - y[i]);
    if (!(e <= d)) d = Number.isNaN(e) ? Number.POSITIVE_INFINITY : e;
    m = Math.max(m, Math.abs(y[i]));
  }
  return d / m;
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(2)} MiB`;

/** A torch's Python server with every size's inputs made: "sdpa|N" and "math|N" cases. */
const TORCH_SETUP = `
import json, sys, time
import torch
import torch.nn.functional as F
sdpa = getattr(F, "scaled_dot_product_attention", None)
name = "F.scaled_dot_product_attention"
if sdpa is None:
    name = "F._scaled_dot_product_attention (torch 1.13)"
    sdpa = lambda q, k, v: F._scaled_dot_product_attention(q, k, v, None, 0.0, False, False)[0]
INFO = {"text": "torch %s, %s, %s" % (torch.__version__, name, torch.__config__.parallel_info().splitlines()[-1].strip())}
CASES = {}
torch.manual_seed(0)
def add(n):
    q, k, v = (torch.randn(${B}, ${H}, n, ${D}) for _ in range(3))
    CASES["sdpa|%d" % n] = lambda: sdpa(q, k, v)
    CASES["math|%d" % n] = lambda: torch.softmax((q @ k.transpose(-2, -1)) * ${1 / Math.sqrt(D)}, -1) @ v
for n in ${JSON.stringify(SIZES)}:
    add(n)
`;

interface Torch {
  /** "torch" for the newest torch found, "torch1.13" for an older one beside it. */
  label: string;
  server: TorchServer;
}

/** A server for each torch found (newest first), or why there is none. */
async function startTorches(h: Harness): Promise<Torch[]> {
  const out: Torch[] = [];
  for (const [i, { python, version }] of torchPythons().entries()) {
    const label = i === 0 ? "torch" : `torch${version.split(".").slice(0, 2).join(".")}`;
    const server = await startTorchServer(TORCH_SETUP, { python }).catch(reason);
    if (typeof server === "string") h.note(`pytorch: ${label} = ${python}: not started: ${server}`);
    else {
      out.push({ label, server });
      h.note(
        `pytorch: ${label} = ${python}: ${server.info.text}; timed in the same rounds as ours`,
      );
    }
  }
  if (out.length === 0) h.note(`pytorch: not available: ${NO_TORCH}`);
  return out;
}

export default {
  description:
    "float32 attention B=1 H=8 d=64 N=512..4096, 1 and 2 threads: math (matmul-softmax-matmul) against the fused flash-cpu kernel, time and peak extra memory; PyTorch when available",
  // Long: the suite's script: open every peer, time every size, print the ratios.
  async run(h: Harness) {
    for (const v of ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]) {
      const value = readEnv(v);
      if (value !== undefined)
        h.note(`${v}=${value} is set: the math path's OpenBLAS GEMM is slowed by it`);
    }
    backends.openmp.setNumThreads(1);
    await import("@backplane/backend-cpu-mkl");
    await backends.ready();
    const threads = [1];
    try {
      await import("@backplane/backend-openmp");
      await backends.ready();
      if (backends.openmp.isEnabled()) threads.push(2);
      else h.note(`2 threads: not measured: ${backends.openmp.status().reason}`);
    } catch (err) {
      h.note(`2 threads: not measured: @backplane/backend-openmp did not import: ${reason(err)}`);
    }
    const torches = await startTorches(h);
    try {
      await timeSizes(h, threads, torches);
    } finally {
      for (const { server } of torches) server.close();
    }
  },
};

/** Every size: correctness and peak memory on one thread, then the timings on each count. */
// Long: per size, the checks, the peaks, and one round-robin comparison per thread count.
async function timeSizes(h: Harness, threads: number[], torches: Torch[]): Promise<void> {
  const scale = tensor([1 / Math.sqrt(D)]);
  const ms: Record<string, number> = {};
  const peaks: Record<string, number> = {};
  for (const n of SIZES) {
    const shape = [B, H, n, D];
    const q = randn(shape, { seed: 1 });
    const k = randn(shape, { seed: 2 });
    const v = randn(shape, { seed: 3 });
    try {
      const chosen = (() => {
        using _ = kernelPriority("scaledDotProductAttention", ["FLASH_ATTENTION"]);
        return explain("scaledDotProductAttention", q, k, v);
      })();
      const why = (() => {
        using _ = kernelPriority("scaledDotProductAttention", ["flash-cpu"]);
        const e = explain("scaledDotProductAttention", q, k, v);
        return e.selected === "flash-cpu"
          ? undefined
          : (e.candidates.find((c) => c.kernel === "flash-cpu")?.reason ?? "not registered");
      })();
      const family = chosen.selected
        ? getKernel("scaledDotProductAttention", chosen.selected)?.family
        : undefined;
      if (why || family !== "FLASH_ATTENTION") {
        h.note(
          `fused: not available at N=${n}: ${why ?? `${chosen.selected} is not a FLASH_ATTENTION kernel`}`,
        );
        continue;
      }
      if (n === SIZES[0]) h.note(`fused runs ${chosen.selected}; fused-wasm runs flash-cpu`);
      const kt = k.transpose(-2, -1);
      const gemm = explain("matmul", q, kt).selected;
      kt.dispose();
      if (n === SIZES[0]) h.note(`math: matmul runs ${gemm}; softmax and mul as dispatched`);
      // Correctness, and peak extra memory (one thread).
      backends.openmp.setNumThreads(1);
      const steps: Record<string, number> = {};
      const b = mathPath(q, k, v, scale, steps);
      const a = fused(q, k, v);
      const aw = fusedWasm(q, k, v);
      const err = relDiff(a, b);
      const errWasm = relDiff(aw, b);
      a.dispose();
      aw.dispose();
      b.dispose();
      if (!(err < TOLERANCE) || !(errWasm < TOLERANCE)) {
        h.note(
          `fused: WRONG at N=${n} (max rel diff to math ${err.toExponential(2)}, fused-wasm ${errWasm.toExponential(2)}), not timed`,
        );
        continue;
      }
      peaks[`math_${n}`] = peakExtra(() => mathPath(q, k, v, scale));
      peaks[`fused_${n}`] = peakExtra(() => fused(q, k, v));
      peaks[`fusedWasm_${n}`] = peakExtra(() => fusedWasm(q, k, v));
      const split = Object.entries(steps)
        .map(([step, t]) => `${step} ${t.toFixed(1)}`)
        .join(", ");
      h.note(
        `N=${n}: max rel diff to math: fused ${err.toExponential(2)}, fused-wasm ${errWasm.toExponential(2)}; peak extra memory math ${mib(peaks[`math_${n}`])}, fused ${mib(peaks[`fused_${n}`])}, fused-wasm ${mib(peaks[`fusedWasm_${n}`])}; one math call on 1 thread, ms: ${split}`,
      );
      for (const t of threads) {
        backends.openmp.setNumThreads(t);
        const impls: Record<string, Impl> = {
          math: () => mathPath(q, k, v, scale).dispose(),
          fused: () => fused(q, k, v).dispose(),
          "fused-wasm": () => fusedWasm(q, k, v).dispose(),
        };
        for (const { label, server } of torches) {
          impls[`${label}-sdpa`] = server.impl(`sdpa|${n}`, t);
          impls[`${label}-math`] = server.impl(`math|${n}`, t);
        }
        if (n === 2048)
          impls["math-wasm"] = () => {
            using _ = backends.cpu.flags({ preferredBlasLibrary: "wasm" });
            mathPath(q, k, v, scale).dispose();
          };
        const r = await h.compare(`N=${n} ${t}T`, impls, {
          flops: 4 * B * H * n * n * D,
          ...PLAN[n],
        });
        for (const [impl, x] of Object.entries(r)) ms[`${impl}|${t}|${n}`] = x;
        h.ratio(`fused_speedup_over_math_N${n}_${t}T`, r.math / r.fused);
        h.ratio(`fused_wasm_speedup_over_math_N${n}_${t}T`, r.math / r["fused-wasm"]);
        if (r["math-wasm"] !== undefined)
          h.ratio(`fused_speedup_over_math_wasm_N${n}_${t}T`, r["math-wasm"] / r.fused);
        for (const { label } of torches)
          for (const impl of ["sdpa", "math"])
            h.ratio(
              `fused_speedup_over_${label}_${impl}_N${n}_${t}T`,
              r[`${label}-${impl}`] / r.fused,
            );
      }
    } finally {
      q.dispose();
      k.dispose();
      v.dispose();
      backends.openmp.setNumThreads(1);
    }
  }
  for (const n of SIZES)
    if (peaks[`fused_${n}`] > 0)
      h.ratio(`peak_extra_math_over_fused_N${n}`, peaks[`math_${n}`] / peaks[`fused_${n}`]);
  for (const n of SIZES)
    if (peaks[`fusedWasm_${n}`] > 0)
      h.ratio(
        `peak_extra_math_over_fused_wasm_N${n}`,
        peaks[`math_${n}`] / peaks[`fusedWasm_${n}`],
      );
  const s2048 = ms["math|1|2048"] / ms["fused|1|2048"];
  const s2048t2 = ms["math|2|2048"] / ms["fused|2|2048"];
  const m4096 = peaks.math_4096 / peaks.fused_4096;
  h.note(
    `targets: fused >= 2x math at N=2048: ${s2048.toFixed(2)}x on 1 thread${Number.isFinite(s2048t2) ? `, ${s2048t2.toFixed(2)}x on 2` : ""}; fused peak extra <= 1/8 of math at N=4096: 1/${m4096.toFixed(0)}`,
  );

  scale.dispose();
}
