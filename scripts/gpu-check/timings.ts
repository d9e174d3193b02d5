/**
 * Timings of the cases in cases.json on backend-cuda / backend-cudnn, measured the way
 * torch-peers.py measures PyTorch: warm-up, then batches of back-to-back calls each ended by
 * one device synchronize, the median batch's time per call. A failing case is a row with its
 * error, not an abort.
 */
import { cudaApi } from "@backplane/backend-cuda";
import {
  backends,
  conv2d,
  type DType,
  empty,
  explain,
  matmul,
  nn,
  randn,
  SDPBackend,
  scaledDotProductAttention,
  setFloat32MatmulPrecision,
  type Tensor,
} from "@backplane/core";
import { cases } from "./io.ts";

export interface TimingRow {
  suite: string;
  case: string;
  impl: string;
  /** Milliseconds per call (median batch). */
  ms?: number;
  tflops?: number;
  /** The kernel dispatch chose (explain), where it says. */
  kernel?: string;
  error?: string;
}

const PRECISIONS: Record<string, [DType, "highest" | "high"]> = {
  fp32: ["float32", "highest"],
  tf32: ["float32", "high"],
  fp16: ["float16", "highest"],
  bf16: ["bfloat16", "highest"],
};

const sync = () => cudaApi.synchronize();

/** ms per call: batches of back-to-back calls, each closed by a synchronize; the median. */
async function timeCalls(fn: () => Tensor, quick: boolean): Promise<number> {
  const { batchMs, batches, maxCalls } = cases().timing;
  fn().dispose();
  fn().dispose();
  await sync();
  let t = performance.now();
  fn().dispose();
  await sync();
  const one = performance.now() - t;
  const calls = Math.max(1, Math.min(maxCalls, Math.ceil((quick ? batchMs / 4 : batchMs) / one)));
  const perCall: number[] = [];
  for (let b = 0; b < (quick ? 2 : batches); b++) {
    t = performance.now();
    for (let i = 0; i < calls; i++) fn().dispose();
    await sync();
    perCall.push((performance.now() - t) / calls);
  }
  perCall.sort((x, y) => x - y);
  return perCall[perCall.length >> 1]!;
}

async function row(
  base: Omit<TimingRow, "ms" | "tflops">,
  flop: number,
  fn: () => Tensor,
  quick: boolean,
): Promise<TimingRow> {
  let r: TimingRow;
  try {
    const ms = await timeCalls(fn, quick);
    r = { ...base, ms, tflops: flop / (ms * 1e9) };
  } catch (e) {
    r = { ...base, error: (e as Error).message.split("\n")[0] };
  }
  onRow(r);
  return r;
}

/** Called with each row as soon as it is measured (the log line, the JSON kept current). */
let onRow: (r: TimingRow) => void = () => {};

function line(r: TimingRow): string {
  const figures = r.error
    ? `ERROR ${r.error}`
    : `${(r.ms! * 1000).toFixed(1).padStart(10)} us ${r.tflops ? `${r.tflops.toFixed(1).padStart(7)} TFLOP/s` : ""} ${r.kernel ?? ""}`;
  return `${r.suite.padEnd(8)} ${r.case.padEnd(42)} ${r.impl.padEnd(20)} ${figures}`;
}

/**
 * A device tensor of random values: a 2^20-element random block repeated (timings need
 * realistic values, not 200 million fresh ones generated in JS).
 */
function onDevice(shape: number[], dtype: DType, seed: number): Tensor {
  const count = shape.reduce((a, b) => a * b, 1);
  const block = randn([Math.min(count, 1 << 20)], { seed, dtype });
  const host = empty(shape, { dtype });
  const src = block.hostData() as Float32Array;
  const dst = host.hostData() as Float32Array;
  for (let at = 0; at < count; at += src.length)
    dst.set(src.subarray(0, Math.min(src.length, count - at)), at);
  const t = host.to("cuda");
  host.dispose();
  block.dispose();
  return t;
}

async function gemm(quick: boolean): Promise<void> {
  const { n: full, precisions } = cases().gemm;
  const n = quick ? 1024 : full;
  for (const p of precisions) {
    const [dtype, precision] = PRECISIONS[p]!;
    const a = onDevice([n, n], dtype, 1);
    const b = onDevice([n, n], dtype, 2);
    setFloat32MatmulPrecision(precision);
    for (const lib of ["cublas", "cublaslt"] as const) {
      backends.cuda.preferredBlasLibrary(lib);
      const kernel = explain("matmul", a, b).selected;
      await row(
        { suite: "gemm", case: `${n} ${p}`, impl: lib, kernel },
        2 * n ** 3,
        () => matmul(a, b),
        quick,
      );
    }
    backends.cuda.preferredBlasLibrary("cublas");
    setFloat32MatmulPrecision("highest");
    a.dispose();
    b.dispose();
  }
}

async function sdpa(quick: boolean): Promise<void> {
  const { batch, heads, grid, families } = cases().sdpa;
  for (const g of grid) {
    for (const seq of quick ? g.seq.slice(0, 1) : g.seq) {
      for (const d of g.headDim) {
        const shape = [batch, heads, seq, d];
        const [q, k, v] = [1, 2, 3].map((s) => onDevice(shape, g.dtype as DType, s));
        for (const causal of g.causal) {
          const flop = (4 * batch * heads * seq * seq * d) / (causal ? 2 : 1);
          const name = `B${batch} H${heads} N${seq} d${d} ${g.dtype}${causal ? " causal" : ""}`;
          for (const family of families) {
            const fam = SDPBackend[family as keyof typeof SDPBackend] as SDPBackend;
            const call = () =>
              nn.attention.withSdpaKernel([fam], () =>
                scaledDotProductAttention(q!, k!, v!, { isCausal: causal }),
              );
            const kernel = nn.attention.withSdpaKernel([fam], () =>
              explain("scaledDotProductAttention", q, k, v, { isCausal: causal }),
            ).selected;
            await row({ suite: "sdpa", case: name, impl: family, kernel }, flop, call, quick);
          }
        }
        for (const t of [q, k, v]) t!.dispose();
      }
    }
  }
}

async function conv(quick: boolean): Promise<void> {
  const { batch, dtypes, layers } = cases().conv2d;
  for (const dtype of dtypes as DType[]) {
    for (const l of quick ? layers.slice(0, 2) : layers) {
      // Channels-last: NHWC storage seen as NCHW, as torch's channels_last.
      const x = onDevice([batch, l.hw, l.hw, l.c], dtype, 1).permute([0, 3, 1, 2]);
      const w = onDevice([l.k, l.r, l.r, l.c], dtype, 2).permute([0, 3, 1, 2]);
      const opts = { stride: l.stride, padding: l.pad };
      const oh = Math.floor((l.hw + 2 * l.pad - l.r) / l.stride) + 1;
      const flop = 2 * batch * l.k * oh * oh * l.c * l.r * l.r;
      const kernel = explain("conv2d", x, w, opts).selected;
      await row(
        { suite: "conv2d", case: `${l.name} ${dtype} NHWC`, impl: "cudnn", kernel },
        flop,
        () => conv2d(x, w, opts),
        quick,
      );
      x.dispose();
      w.dispose();
    }
  }
}

/** A 1x1 product: the dispatcher's and the launch's cost, enqueued back to back and one at a time. */
async function overhead(): Promise<void> {
  const { calls } = cases().overhead;
  const a = onDevice([1, 1], "float32", 1);
  const kernel = explain("matmul", a, a).selected;
  for (let i = 0; i < 100; i++) matmul(a, a).dispose();
  await sync();
  const enqueue: number[] = [];
  for (let b = 0; b < 3; b++) {
    const t = performance.now();
    for (let i = 0; i < calls; i++) matmul(a, a).dispose();
    await sync();
    enqueue.push(((performance.now() - t) / calls) * 1000);
  }
  const latency: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    matmul(a, a).dispose();
    await sync();
    latency.push((performance.now() - t) * 1000);
  }
  const median = (x: number[]) => x.sort((p, q) => p - q)[x.length >> 1]!;
  onRow({
    suite: "overhead",
    case: "matmul 1x1 fp32, back to back (us/call)",
    impl: "backplane",
    kernel,
    ms: median(enqueue) / 1000,
  });
  onRow({
    suite: "overhead",
    case: "matmul 1x1 fp32, call + synchronize (us)",
    impl: "backplane",
    kernel,
    ms: median(latency) / 1000,
  });
  a.dispose();
}

export async function runTimings(opts: {
  quick: boolean;
  log: (line: string) => void;
  progress?: (rows: TimingRow[]) => void;
}): Promise<TimingRow[]> {
  const rows: TimingRow[] = [];
  onRow = (r) => {
    rows.push(r);
    opts.log(line(r));
    opts.progress?.(rows);
  };
  const t0 = performance.now();
  for (const [name, suite] of [
    ["overhead", () => overhead()],
    ["gemm", () => gemm(opts.quick)],
    ["conv2d", () => conv(opts.quick)],
    ["sdpa", () => sdpa(opts.quick)],
  ] as const) {
    try {
      await suite();
    } catch (e) {
      onRow({
        suite: name,
        case: "(suite)",
        impl: "-",
        error: (e as Error).stack?.split("\n").slice(0, 3).join(" | "),
      });
    }
  }
  opts.log(`timings: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return rows;
}
