/**
 * The benchmark harness: medians of at least 5 samples, impls of a case measured in
 * interleaved rounds (so drift hits them alike) whose order rotates, each sample started
 * clean (a full GC, a quiet process) and warm (one untimed batch); a table or one JSON
 * object.
 */

import { runtime } from "@backplane/core";
import { builtinModule, host } from "@backplane/core/cpu";
import { cpuText } from "./cpu.ts";
import { untilQuiet } from "./quiet.ts";

export interface Result {
  case: string;
  impl: string;
  median_ms: number;
  gflops?: number;
  samples: number;
}

export interface Ratio {
  name: string;
  value: number;
}

export interface MeasureOptions {
  /** Floating-point operations per call, for GFLOP/s. */
  flops?: number;
  /** Samples per impl (default 15, at least 5). */
  samples?: number;
  /** Target duration of one sample in ms; calls are batched to reach it (default 20). */
  sampleMs?: number;
  /** Untimed calls before each sample, as a fraction of the sample's calls (default 1). */
  warmFraction?: number;
}

export type Fn = () => unknown;

/** An impl that times itself where it runs (a worker): ms per call over `count` calls. */
export interface SelfTimed {
  /**
   * `warmUp`: the untimed batch before a sample; a peer process answers it without
   * waiting for its threads to go quiet, so its timed batch starts with them awake, as
   * ours does.
   */
  timeBatch(count: number, warmUp?: boolean): Promise<number>;
}

export type Impl = Fn | SelfTimed;

const now = () => performance.now();

/** A call shorter than this is warmed by an untimed call before each sample (compare()). */
const WARM_CALL_MS = 100;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function timeBatch(impl: Impl, n: number, warmUp = false): Promise<number> {
  if (typeof impl !== "function") return impl.timeBatch(n, warmUp);
  const fn = impl;
  const t0 = now();
  for (let i = 0; i < n; i++) {
    const r = fn();
    if (r instanceof Promise) await r;
  }
  return (now() - t0) / n;
}

/** What a Harness reports while it measures (for a progress bar or log lines). */
export type ProgressEvent =
  /** A case starts: `total` samples (rounds x impls) follow, after warm-up. */
  | { kind: "case"; case: string; impls: string[]; total: number }
  /** One sample of `impl` is done: `done` of the case's `total`. */
  | { kind: "sample"; case: string; impl: string; done: number; total: number }
  /** An impl's median for the case. */
  | { kind: "result"; case: string; impl: string; ms: number };

/**
 * A full garbage collection, where the runtime lets a script ask for one (Bun.gc; Node and
 * Deno through V8's gc, exposed at run time): run before every sample, untimed, so an impl
 * never pays for garbage another impl left (tfjs and onnxruntime allocate per call).
 */
const collectGarbage: () => void = (() => {
  const bun = host.Bun;
  if (bun && typeof bun.gc === "function") return () => bun.gc(true);
  const v8gc = host.gc;
  if (typeof v8gc === "function") return () => v8gc();
  try {
    const v8 = builtinModule<typeof import("node:v8")>("node:v8");
    const vm = builtinModule<typeof import("node:vm")>("node:vm");
    v8?.setFlagsFromString("--expose-gc");
    const gc = vm?.runInNewContext("gc");
    if (typeof gc === "function") return () => gc();
  } catch {}
  return () => {};
})();

export class Harness {
  readonly results: Result[] = [];
  readonly ratios: Ratio[] = [];
  readonly notes: string[] = [];
  /** Per-round samples of the last compare(), by impl. */
  private lastSamples: Record<string, number[]> = {};
  constructor(private readonly onProgress: (event: ProgressEvent) => void = () => {}) {}

  /** Measures several implementations of one case, interleaved; returns median ms per impl. */
  async compare(
    caseName: string,
    impls: Record<string, Impl>,
    opts: MeasureOptions = {},
  ): Promise<Record<string, number>> {
    const samples = Math.max(5, opts.samples ?? 15);
    const warmFraction = opts.warmFraction ?? 1;
    const target = opts.sampleMs ?? 20;
    const names = Object.keys(impls);
    const total = samples * names.length;
    this.onProgress({ kind: "case", case: caseName, impls: names, total });
    const batch: Record<string, number> = {};
    const callMs: Record<string, number> = {};
    for (const [name, fn] of Object.entries(impls)) {
      // Warm-up (JIT, caches), then size the batch so one sample takes about `target` ms,
      // from the fastest call time seen: a sizing batch can hold a kernel's one-off work (a
      // recheck of its choices) and sized a depthwise layer's batches at 7 calls, too few to
      // get past a pool's wake-up after the quiet pause (410 us a call against 85, Zen 5).
      let n = 1;
      let t = await timeBatch(fn, n);
      let fastest = t;
      while (t * n < target / 4 && n < 1e7) {
        n *= 4;
        t = await timeBatch(fn, n);
        fastest = Math.min(fastest, t);
      }
      // Again at that size until it holds (three times at most): the first calls of a case
      // run the kernels' own measurements (one call took 30 ms and made a 0.1 ms layer's
      // batch a single call), and a first case's sizing runs in a process still starting up.
      const sizeFor = (ms: number) => Math.max(1, Math.round(target / Math.max(ms, 1e-6)));
      for (let again = 0; again < 3; again++) {
        const sized = sizeFor(fastest);
        fastest = Math.min(fastest, await timeBatch(fn, sized));
        if (sizeFor(fastest) < 2 * sized) break;
      }
      batch[name] = sizeFor(fastest);
      callMs[name] = fastest;
    }
    const times: Record<string, number[]> = Object.fromEntries(
      Object.keys(impls).map((k) => [k, []]),
    );
    // Each round starts one impl further on, so no impl always runs after the same one
    // (a neighbour that evicts the caches or heats the core would bias it).
    const order = Object.entries(impls);
    for (let s = 0; s < samples; s++) {
      for (let j = 0; j < order.length; j++) {
        const [name, fn] = order[(s + j) % order.length];
        // Every sample starts clean: no garbage of another impl, no thread still busy
        // (V8's sweepers after that collection, a BLAS or onnxruntime pool still spinning).
        collectGarbage();
        await untilQuiet();
        // ...and warm: after that pause caches are cold and a pool's workers asleep (a
        // worker woken after an idle spell may share the caller's core for a while), so
        // an untimed batch as long as the sample runs first and the sample measures the
        // steady state, as the peers' timing loops do (PyTorch's runs its calls back to
        // back after one untimed call). A call under WARM_CALL_MS is a sample on its own
        // and is warmed by one call too; calls of 100 ms and more dwarf that transient.
        if (warmFraction > 0 && (batch[name] > 1 || callMs[name] < WARM_CALL_MS))
          await timeBatch(fn, Math.ceil(batch[name] * warmFraction), true);
        times[name].push(await timeBatch(fn, batch[name]));
        const done = s * order.length + j + 1;
        this.onProgress({ kind: "sample", case: caseName, impl: name, done, total });
      }
    }
    this.lastSamples = times;
    const out: Record<string, number> = {};
    for (const name of Object.keys(impls)) {
      const ms = median(times[name]);
      out[name] = ms;
      const r: Result = { case: caseName, impl: name, median_ms: ms, samples };
      if (opts.flops) r.gflops = opts.flops / (ms * 1e6);
      this.results.push(r);
      this.onProgress({ kind: "result", case: caseName, impl: name, ms });
    }
    return out;
  }

  /**
   * Median over rounds of (b - a) from the last compare(): a paired difference, so drift
   * and garbage-collection pauses that hit both impls of a round cancel.
   */
  pairedDifferenceMs(a: string, b: string): number {
    const xs = this.lastSamples[a];
    const ys = this.lastSamples[b];
    return median(xs.map((x, i) => ys[i] - x));
  }

  ratio(name: string, value: number): void {
    this.ratios.push({ name, value });
  }

  note(text: string): void {
    this.notes.push(text);
  }
}

export function formatMs(ms: number): string {
  return ms < 0.01
    ? `${(ms * 1e6).toFixed(1)} ns`
    : ms < 1
      ? `${(ms * 1e3).toFixed(2)} us`
      : `${ms.toFixed(3)} ms`;
}

export function machine(): string {
  const os = builtinModule<typeof import("node:os")>("node:os");
  const mem = os ? `${Math.round(os.totalmem() / 2 ** 30)} GiB` : "";
  return `${cpuText()}${mem ? `, ${mem}` : ""}, ${runtime().platform}/${runtime().arch}`;
}

export function runtimeName(): string {
  const r = runtime();
  return `${r.name} ${r.version}`;
}

/** A suite's figures as a table (from its Harness, or the JSON of a suite run apart). */
export function table(
  suite: string,
  h: {
    results: readonly Omit<Result, "samples">[];
    ratios: readonly Ratio[];
    notes: readonly string[];
  },
): string {
  const rows = h.results.map((r) => [
    r.case,
    r.impl,
    formatMs(r.median_ms),
    r.gflops === undefined ? "" : r.gflops.toFixed(2),
  ]);
  const head = ["case", "impl", "median", "GFLOP/s"];
  const w = head.map((x, i) => Math.max(x.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i >= 2 ? c.padStart(w[i]) : c.padEnd(w[i]))).join("  ");
  const out = [
    `${suite} — ${runtimeName()} — ${machine()}`,
    "",
    line(head),
    line(w.map((n) => "-".repeat(n))),
    ...rows.map(line),
  ];
  if (h.ratios.length) {
    out.push("", "ratios:");
    for (const r of h.ratios) out.push(`  ${r.name} = ${r.value.toFixed(3)}`);
  }
  for (const n of h.notes) out.push(`note: ${n}`);
  return out.join("\n");
}

/** The comma-separated values of `--name a,b` or `--name=a,b` in a suite's arguments. */
export function listArg(args: readonly string[], name: string): string[] | undefined {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  const text = args[i].includes("=") ? args[i].slice(name.length + 1) : (args[i + 1] ?? "");
  if (text === "" || text.startsWith("--"))
    throw new Error(`${name}: expected a comma-separated list, got nothing`);
  return text.split(",");
}

/** `--sizes 256,1024` (or `--sizes=256,1024`) from a suite's arguments, else the defaults. */
export function sizesArg(args: readonly string[], defaults: readonly number[]): number[] {
  const list = listArg(args, "--sizes");
  if (!list) return [...defaults];
  const sizes = list.map(Number);
  if (!sizes.every((n) => Number.isInteger(n) && n > 0))
    throw new Error(`--sizes: expected positive integers like 256,1024, got ${list.join(",")}`);
  return sizes;
}
