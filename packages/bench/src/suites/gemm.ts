/**
 * gemm: single-precision C = A x B, square n = 256, 512, 1024, 2048, ONE thread in every
 * implementation but the two "-2t" ones, random inputs (uniform in [-1, 1), never zeros):
 * - backplane-native: matmul() on the native kernel "blas-gemm" (backend-cpu-mkl's BLAS over
 *   FFI), after backends.openmp.setNumThreads(1) and await backends.ready(); the dispatcher
 *   picks it by itself (checked with explain()), so calls are plain matmul() calls (an impl
 *   the dispatcher would not pick is forced with a kernelPriority scope per call);
 * - backplane-dispatch: matmul() on whatever the dispatcher picks per shape (its ranking measures
 *   blas-gemm, onednn-matmul and wasm-gemm on the machine), the kernel it ran noted per size;
 * - backplane-wasm: matmul() forced to "wasm-gemm" (backend-cpu-mkl's WASM SIMD kernel),
 *   noted as not available when explain() says the dispatcher would not run it;
 * - openblas-direct: the same OpenBLAS through @backplane/core/ffi only, cblas_sgemm on plain
 *   Float32Arrays (what the dispatcher and the tensors cost is native / this);
 * - tfjs-wasm: tfjs-core + tfjs-backend-wasm (XNNPACK, SIMD binary), one thread;
 * - ort-web: onnxruntime-web's wasm EP (SIMD), numThreads 1, a MatMul model built in code;
 * - ort-node: onnxruntime-node's CPU EP (MLAS), intra- and inter-op threads 1, same model;
 * - backplane-wasm-2t: backplane-wasm in a backends.openmp thread scope of 2 (the pool of
 *   @backplane/backend-openmp, its workers started before timing);
 * - ort-web-2t: onnxruntime-web with numThreads 2, in a worker_thread of its own (its thread
 *   count is fixed per module instance), timed inside that worker.
 * A peer that cannot be installed or loaded is a note, never a crash. Before timing, each
 * output is checked once: against float64 dot products at sampled entries, and in full
 * against another impl (max |C - C_other| / max |C_other| < 1e-3); a wrong impl posts no
 * number. Ratios are speed ratios, other_ms / ours_ms: > 1 means Backplane is faster.
 *
 * OpenBLAS reads OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which this environment sets and
 * which halve its speed here; run the suite without them:
 *
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE npm run bench -- gemm
 *
 * (the suite notes it when they are set). `--sizes 256,1024` runs only those sizes,
 * `--impls backplane-wasm,tfjs-wasm` only those impls.
 * Under Bun: ./node_modules/.bin/bun bench/run.ts gemm
 */
import {
  backends,
  explain,
  kernelPriority,
  matmul,
  runtime,
  seededRandom,
  type Tensor,
  tensor,
} from "@backplane/core";
import { forgetCalibration, getBackend } from "@backplane/core/backend";
import { readEnv, relaxedSimdEnabled } from "@backplane/core/cpu";
import { type Harness, type Impl, listArg, sizesArg } from "../harness.ts";
import { type GemmCase, type GemmPeer, reason } from "../peers/types.ts";

const SIZES = [256, 512, 1024, 2048] as const;
/** Samples per impl and target sample length: few, single-call samples for the big sizes. */
const PLAN: Record<number, { samples: number; sampleMs: number }> = {
  256: { samples: 15, sampleMs: 20 },
  512: { samples: 11, sampleMs: 20 },
  1024: { samples: 7, sampleMs: 10 },
  2048: { samples: 5, sampleMs: 0 },
};
const planFor = (n: number) =>
  PLAN[n] ?? (n < 512 ? PLAN[256] : n < 1024 ? PLAN[512] : n < 2048 ? PLAN[1024] : PLAN[2048]);
const THREADS = 1;
const TOLERANCE = 1e-3;
/** The impl whose output the others are compared with first, in this order of preference. */
const REFERENCE_ORDER = [
  "openblas-direct",
  "backplane-native",
  "backplane-dispatch",
  "ort-node",
  "tfjs-wasm",
  "ort-web",
  "backplane-wasm",
  "backplane-wasm-2t",
  "ort-web-2t",
  "backplane-webgpu",
];

/** Why the dispatcher would not run `kernel` for matmul(a, b) under kernelPriority([kernel]). */
function refusal(kernel: string, a: Tensor, b: Tensor): string | undefined {
  try {
    using _ = kernelPriority("matmul", [kernel]);
    const e = explain("matmul", a, b);
    if (e.selected === kernel) return undefined;
    const c = e.candidates.find((x) => x.kernel === kernel);
    if (!c) return `no ${kernel} among matmul's candidates (${e.selected ?? "none"} would run)`;
    return `${c.kernel} (${c.backend}): ${c.reason}`;
  } catch (err) {
    return reason(err); // e.g. "matmul has no kernel named wasm-gemm; it has: ..."
  }
}

/** A timed case over the operands: `call` computes their product (in its own scopes). */
function matmulCase(ta: Tensor, tb: Tensor, call: () => Tensor): GemmCase {
  return {
    run: () => call().dispose(),
    result: async () => {
      const c = call();
      const out = Float32Array.from(c.dataSync() as Float32Array);
      c.dispose();
      return out;
    },
    dispose: () => {
      ta.dispose();
      tb.dispose();
    },
  };
}

/** matmul() as a user calls it: the dispatcher's pick, named per size in a note. */
function dispatchPeer(h: Harness): GemmPeer {
  return {
    info: `the dispatcher's pick, openmp.numThreads ${backends.openmp.getNumThreads()}`,
    async prepare(n, a, b) {
      const ta = tensor(a, { shape: [n, n] });
      const tb = tensor(b, { shape: [n, n] });
      // The first call of a shape ranks the kernels on it; the one that runs after is the pick.
      matmul(ta, tb).dispose();
      const picked = backends
        .record(() => matmul(ta, tb).dispose())
        .calls.find((c) => c.op === "matmul")?.kernel;
      h.note(`backplane-dispatch: n=${n}: the dispatcher runs ${picked}`);
      return matmulCase(ta, tb, () => matmul(ta, tb));
    },
  };
}

/**
 * matmul() through the dispatcher, forced to one kernel of backend-cpu-mkl; with `threads`,
 * each call runs in a backends.openmp thread-count scope (the suite's setting is 1).
 */

function backplanePeer(kernel: "blas-gemm" | "wasm-gemm", threads?: number): GemmPeer | string {
  const probe = [
    tensor(randomMatrix(64, 1), { shape: [64, 64] }),
    tensor(randomMatrix(64, 2), { shape: [64, 64] }),
  ];
  try {
    const why = refusal(kernel, probe[0], probe[1]);
    if (why) return why;
  } finally {
    for (const t of probe) t.dispose();
  }
  const native = getBackend("cpu-blas")?.def.capability?.() as Record<string, unknown> | undefined;
  return {
    info:
      kernel === "blas-gemm" && native
        ? `${native.library} ${native.version} (${native.path}), openmp.numThreads ${backends.openmp.getNumThreads()}`
        : `openmp.numThreads ${threads ?? backends.openmp.getNumThreads()}`,
    async prepare(n, a, b) {
      const ta = tensor(a, { shape: [n, n] });
      const tb = tensor(b, { shape: [n, n] });
      const why = refusal(kernel, ta, tb);
      if (why) {
        ta.dispose();
        tb.dispose();
        throw new Error(why);
      }
      const scope = () =>
        threads === undefined ? undefined : backends.flags({ openmp: { numThreads: threads } });
      // Where the dispatcher picks this kernel by itself, call matmul() as a user does;
      // else force it with a priority scope around each call.
      const byDefault = (() => {
        using _t = scope();
        return explain("matmul", ta, tb).selected === kernel;
      })();
      const force = () => (byDefault ? undefined : kernelPriority("matmul", [kernel]));
      return matmulCase(ta, tb, () => {
        using _t = scope();
        using _ = force();
        return matmul(ta, tb);
      });
    },
  };
}

/**
 * matmul() on device "webgpu" (backend-webgpu's tiled WGSL kernel), forced to
 * "wgsl-matmul-tiled"; a call is timed until the queue has finished it. On software
 * drivers (lavapipe, SwiftShader) the numbers show trends only.
 */
async function openWebgpu(): Promise<GemmPeer | string> {
  const wg = await import("@backplane/backend-webgpu");
  const avail = await wg.webgpuAvailability();
  if (!avail.available) return avail.reason ?? "no WebGPU adapter";
  const cap = wg.webgpuCapability()!;
  const kernel = "wgsl-matmul-tiled";
  const sync = () => wg.webgpuMemory.sync("webgpu");
  return {
    info: `${cap.adapter.description || cap.adapter.vendor || "adapter"} via ${cap.source}${cap.adapter.isFallbackAdapter ? " (software/fallback adapter: trend only)" : ""}`,
    async prepare(n, a, b) {
      // A software adapter (lavapipe, SwiftShader) takes minutes per call beyond this.
      if (cap.adapter.isFallbackAdapter && n > 512)
        throw new Error(`n=${n} skipped on a software adapter (${cap.adapter.description})`);
      const ta = tensor(a, { shape: [n, n], device: "webgpu" });
      const tb = tensor(b, { shape: [n, n], device: "webgpu" });
      const why = refusal(kernel, ta, tb);
      if (why) {
        ta.dispose();
        tb.dispose();
        throw new Error(why);
      }
      const mm = () => {
        using _ = kernelPriority("matmul", [kernel]);
        return matmul(ta, tb);
      };
      await sync();
      return {
        run: async () => {
          const c = mm();
          await sync();
          c.dispose();
        },
        result: async () => {
          const c = mm();
          const out = Float32Array.from((await c.data()) as Float32Array);
          c.dispose();
          return out;
        },
        dispose: () => {
          ta.dispose();
          tb.dispose();
        },
      };
    },
  };
}

function randomMatrix(n: number, seed: number): Float32Array {
  const r = seededRandom(seed);
  const x = new Float32Array(n * n);
  for (let i = 0; i < x.length; i++) x[i] = r() * 2 - 1;
  return x;
}

/** Entries (i, j) checked in float64: the corners and pseudo-random ones. */
function spotEntries(n: number, count: number): [number, number][] {
  const r = seededRandom(n * 7919);
  const out: [number, number][] = [
    [0, 0],
    [0, n - 1],
    [n - 1, 0],
    [n - 1, n - 1],
  ];
  while (out.length < count) out.push([Math.floor(r() * n), Math.floor(r() * n)]);
  return out;
}

/** max |c - exact| / max |exact| over the sampled entries, exact in float64. */
function spotError(c: Float32Array, a: Float32Array, b: Float32Array, n: number): number {
  let maxDiff = 0;
  let maxRef = 0;
  for (const [i, j] of spotEntries(n, 256)) {
    let s = 0;
    for (let p = 0; p < n; p++) s += a[i * n + p] * b[p * n + j];
    maxDiff = Math.max(maxDiff, Math.abs(c[i * n + j] - s));
    maxRef = Math.max(maxRef, Math.abs(s));
    if (Number.isNaN(c[i * n + j])) return Number.POSITIVE_INFINITY;
  }
  return maxDiff / maxRef;
}

/** max |c - ref| / max |ref| over every entry (NaN anywhere: infinite). */
function fullError(c: Float32Array, ref: Float32Array): number {
  if (c.length !== ref.length) return Number.POSITIVE_INFINITY;
  let maxDiff = 0;
  let maxRef = 0;
  for (let i = 0; i < c.length; i++) {
    const d = Math.abs(c[i] - ref[i]);
    if (!(d <= maxDiff)) {
      if (Number.isNaN(d)) return Number.POSITIVE_INFINITY;
      maxDiff = d;
    }
    maxRef = Math.max(maxRef, Math.abs(ref[i]));
  }
  return maxDiff / maxRef;
}

/**
 * Loads backend-openmp and starts the pool's second thread (workers start in later event
 * loop turns, so a call right after setNumThreads(2) would still run on one); true, or why
 * two threads cannot be measured. The suite's own setting stays 1.
 */
async function readyTwoThreads(): Promise<true | string> {
  if (runtime().hardwareConcurrency < 2)
    return `this machine has ${runtime().hardwareConcurrency} core`;
  let openmp: typeof import("@backplane/backend-openmp");
  try {
    openmp = await import("@backplane/backend-openmp");
    await backends.ready();
  } catch (err) {
    return `@backplane/backend-openmp did not load: ${reason(err)}`;
  }
  if (!backends.openmp.isEnabled()) return backends.openmp.status().reason ?? "openmp disabled";
  const got = (await openmp.openmpPool()?.ready(2)) ?? 1;
  return got >= 2 ? true : `the pool started ${got} thread(s), not 2`;
}

/** Loads a peer module and opens it; a module that does not load is a reason too. */
async function open(load: () => Promise<GemmPeer | string>): Promise<GemmPeer | string> {
  try {
    return await load();
  } catch (err) {
    return reason(err);
  }
}

/**
 * The calibration that ranks the CPU kernels (issue 22): a cold one (measured now, what a
 * first start on a machine costs) and a warm one (a new start that reads the cache), as
 * rows of the table, and the figures the ranking uses as a note.
 */
async function reportCalibration(h: Harness): Promise<void> {
  const cold = await backends.cpu.calibrate();
  // New starts: the first ones may measure what the budget left pending, or confirm an
  // order against the authors' (up to 3 runs); then a start only reads the cache.
  let warm = cold;
  let starts = 0;
  for (; starts < 5 && warm.source !== "cache"; starts++) {
    forgetCalibration();
    await backends.ready();
    warm = backends.cpu.calibration() ?? warm;
  }
  if (starts > 1)
    h.note(
      `calibration: ${starts - 1} start(s) measured pending or unconfirmed cases before the cache sufficed`,
    );
  h.results.push({
    case: "calibration",
    impl: "cold (measured)",
    median_ms: cold.costMs,
    samples: 1,
  });
  if (warm?.source === "cache")
    h.results.push({
      case: "calibration",
      impl: "warm (cache)",
      median_ms: warm.costMs,
      samples: 1,
    });
  else
    h.note(
      `calibration: the warm start did not read a cache (${warm?.source}: ${warm?.cacheFile ?? "no cache directory"})`,
    );
  const figures = cold.measurements
    .map(
      (m) =>
        `${m.op} ${m.case} ${m.dtype}: ${m.figures.map((f) => `${f.kernel} ${f.ms.toFixed(3)} ms`).join(", ")}`,
    )
    .join("; ");
  h.note(
    `calibration (budget ${cold.budgetMs} ms${cold.pending.length ? `, pending ${cold.pending.join(", ")}` : ""}): ${figures}`,
  );
}

export default {
  description:
    "float32 C = A x B, n = 256..2048, one thread: Backplane native and WASM against OpenBLAS direct, tfjs-wasm, onnxruntime web and node",
  // Long: the suite's script: open every peer, time every size, print the ratios.
  async run(h: Harness, args: string[] = []) {
    const sizes = sizesArg(args, SIZES);
    for (const v of ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]) {
      const value = readEnv(v);
      if (value !== undefined)
        h.note(
          `${v}=${value} is set: OpenBLAS numbers are not representative; run env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE npm run bench -- gemm`,
        );
    }

    const only = listArg(args, "--impls");
    const wanted = (impl: string) => !only || only.includes(impl);
    // One thread for the native backend: the flag first, then load and initialise.
    backends.openmp.setNumThreads(THREADS);
    const peers = new Map<string, GemmPeer>();
    const unavailable = (impl: string, why: string) => h.note(`${impl}: unavailable: ${why}`);
    let mkl: string | undefined;
    try {
      await import("@backplane/backend-cpu-mkl");
      await backends.ready();
    } catch (err) {
      mkl = `@backplane/backend-cpu-mkl did not load: ${reason(err)}`;
    }
    if (!mkl) await reportCalibration(h);
    h.note(
      `backplane-wasm: ${relaxedSimdEnabled() ? "relaxed-SIMD build (gemm.relaxed.wasm: f32x4.relaxed_madd)" : "SIMD128 build (relaxed SIMD does not validate here)"}`,
    );
    const native = mkl ?? backplanePeer("blas-gemm");
    if (typeof native === "string") unavailable("backplane-native", native);
    else peers.set("backplane-native", native);
    if (!mkl) peers.set("backplane-dispatch", dispatchPeer(h));
    const wasm = mkl ?? backplanePeer("wasm-gemm");
    if (typeof wasm === "string") h.note(`backplane-wasm: not available: ${wasm}`);
    else peers.set("backplane-wasm", wasm);

    const twoThreads = mkl ?? (await readyTwoThreads());
    if (typeof twoThreads === "string") {
      h.note(`backplane-wasm-2t, ort-web-2t: not measured: ${twoThreads}`);
    } else {
      const wasm2 = backplanePeer("wasm-gemm", 2);
      if (typeof wasm2 === "string") h.note(`backplane-wasm-2t: not available: ${wasm2}`);
      else peers.set("backplane-wasm-2t", wasm2);
    }

    const loaders: [string, () => Promise<GemmPeer | string>][] = [
      ["openblas-direct", async () => (await import("../peers/openblas.ts")).openOpenblas(THREADS)],
      ["tfjs-wasm", async () => (await import("../peers/tfjs-wasm.ts")).openTfjsWasm(THREADS)],
      ["ort-web", async () => (await import("../peers/ort-web.ts")).openOrtWeb(THREADS)],
      ["ort-node", async () => (await import("../peers/ort-node.ts")).openOrtNode(THREADS)],
      ["backplane-webgpu", openWebgpu],
    ];
    if (twoThreads === true && wanted("ort-web-2t"))
      // onnxruntime-web fixes its thread count once per instance: a second one, in a worker.
      loaders.push([
        "ort-web-2t",
        async () =>
          (await import("../peers/in-worker.ts")).openInWorker("./ort-web", "openOrtWeb", [2]),
      ]);
    for (const impl of [...peers.keys()]) if (!wanted(impl)) peers.delete(impl);
    for (const [impl, load] of loaders) {
      if (!wanted(impl)) continue;
      const p = await open(load);
      if (typeof p === "string") unavailable(impl, p);
      else peers.set(impl, p);
    }
    for (const [impl, p] of peers) h.note(`${impl}: ${p.info}`);

    for (const n of sizes) {
      const a = randomMatrix(n, 2 * n + 1);
      const b = randomMatrix(n, 2 * n + 2);
      const cases = new Map<string, GemmCase>();
      const outputs = new Map<string, Float32Array>();
      try {
        for (const [impl, p] of peers) {
          try {
            const c = await p.prepare(n, a, b);
            cases.set(impl, c);
            outputs.set(impl, await c.result());
          } catch (err) {
            if (impl === "backplane-wasm")
              h.note(`backplane-wasm: not available: n=${n}: ${reason(err)}`);
            else unavailable(impl, `n=${n}: ${reason(err)}`);
          }
        }
        // Correctness: sampled entries against float64, then in full against another impl.
        const spot = new Map<string, number>();
        for (const [impl, c] of outputs) spot.set(impl, spotError(c, a, b, n));
        const trusted = [...outputs.keys()]
          .filter((impl) => spot.get(impl)! < TOLERANCE)
          .sort((x, y) => REFERENCE_ORDER.indexOf(x) - REFERENCE_ORDER.indexOf(y));
        const impls: Record<string, Impl> = {};
        for (const [impl, c] of outputs) {
          const other = trusted.find((t) => t !== impl);
          const full = other ? fullError(c, outputs.get(other)!) : undefined;
          const spotErr = spot.get(impl)!;
          if (spotErr >= TOLERANCE || (full !== undefined && full >= TOLERANCE)) {
            h.note(
              `${impl}: WRONG at n=${n}, not timed: max rel error ${spotErr.toExponential(2)} against float64 at sampled entries` +
                (other ? `, ${full!.toExponential(2)} against ${other}` : ""),
            );
            continue;
          }
          if (!other)
            h.note(`${impl}: n=${n} checked against float64 entries only (no other impl)`);
          const gc = cases.get(impl)!;
          impls[impl] = gc.timeBatch ? { timeBatch: gc.timeBatch } : gc.run;
        }
        outputs.clear();
        if (Object.keys(impls).length === 0) continue;

        let ms: Record<string, number>;
        try {
          ms = await h.compare(`${n}x${n}x${n}`, impls, { flops: 2 * n ** 3, ...planFor(n) });
        } catch (err) {
          h.note(`n=${n}: measurement failed: ${reason(err)}`);
          continue;
        }
        const ratio = (name: string, ours: string, other: string) => {
          if (ms[ours] !== undefined && ms[other] !== undefined)
            h.ratio(`${name}_${n}`, ms[other] / ms[ours]);
        };
        ratio("wasm_over_tfjs_wasm", "backplane-wasm", "tfjs-wasm");
        ratio("wasm_over_ort_web", "backplane-wasm", "ort-web");
        ratio("native_over_openblas_direct", "backplane-native", "openblas-direct");
        ratio("native_over_ort_node", "backplane-native", "ort-node");
        ratio("dispatch_over_ort_node", "backplane-dispatch", "ort-node");
        ratio("wasm_2t_over_wasm_1t", "backplane-wasm-2t", "backplane-wasm");
        ratio("wasm_2t_over_ort_web_2t", "backplane-wasm-2t", "ort-web-2t");
      } finally {
        for (const c of cases.values()) await c.dispose();
      }
    }
    for (const p of peers.values()) await p.close?.();
    h.note(
      `correctness: each output vs float64 at 256 sampled entries and in full vs another impl, max |C - C_ref| / max |C_ref| < ${TOLERANCE}; ratios are other_ms / ours_ms (> 1: Backplane faster)`,
    );
  },
};
