/**
 * runDeterminism(backend): with useDeterministicAlgorithms(true), every kernel of the
 * backend that claims determinism must give bit-identical outputs across thread counts
 * (1, 2 and the machine's count, each made ready first) and across repeated runs, on
 * every testkit case (issue 21: blas-gemm's bits depended on the BLAS thread count).
 * Works inside any test runner, on whichever runtime runs it.
 */
import {
  ArgumentError,
  backends,
  type DType,
  explain,
  runtime,
  Tensor,
  withKernelPriority,
} from "@backplane/core";
import { dispatch, getOp } from "@backplane/core/backend";
import { parallelService } from "@backplane/core/cpu";
import { checkFilters, checkOptions, hash, mapTensors, resolveBackend, tensorsIn } from "./args.ts";
import { CASES } from "./cases.ts";
import { makeRng } from "./random.ts";

export interface DeterminismOptions {
  ops?: string[];
  kernels?: string[];
  /** Thread counts to compare (default 1, 2 and the machine's count). */
  threads?: number[];
  /** Runs per thread count (default 2). */
  repeats?: number;
  /** Dtypes (default float32 and float64, where the kernel takes them). */
  dtypes?: DType[];
  seed?: number;
}

export interface DeterminismResult {
  op: string;
  kernel: string;
  dtype: DType;
  case: string;
  /** "threw": a run failed (a failure, like "differs"; its error is in `error`). */
  status: "same" | "differs" | "refused" | "threw";
  /** What differed, why the kernel refused, or which run threw what. */
  detail?: string;
  /** The error of the first run that threw. */
  error?: unknown;
}

export interface DeterminismReport {
  backend: string;
  threads: number[];
  results: DeterminismResult[];
  differs: DeterminismResult[];
  /** Every failure: the results that differ and those whose runs threw. */
  failed: DeterminismResult[];
  toString(): string;
  assertPassed(): void;
}

/**
 * The output's bytes (every tensor, in a fixed order). An error propagates: comparing error
 * texts let a kernel that always throws (or every run of a bad setting) pass as identical.
 */
async function fingerprint(run: () => unknown): Promise<string> {
  const out = run();
  const parts: string[] = [];
  const ts =
    out instanceof Tensor
      ? [out]
      : Object.entries(out as Record<string, Tensor>)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([, t]) => t);
  for (const t of ts) {
    const d = await t.data();
    const bytes = new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
    parts.push(`${t.shape}:${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`);
    t.dispose();
  }
  return parts.join("|");
}

/** Runs the determinism check for one registered backend. */
// Long: one loop nest over kernels, dtypes, cases, thread counts and repeats, reading as the check it is.
export async function runDeterminism(
  backendName: string,
  opts: DeterminismOptions = {},
): Promise<DeterminismReport> {
  const who = "runDeterminism";
  checkOptions(who, opts);
  const b = resolveBackend(who, backendName);
  backendName = b.def.name;
  const cores = runtime().hardwareConcurrency;
  const threads = opts.threads ?? [...new Set([1, 2, cores])];
  if (
    !Array.isArray(threads) ||
    threads.length === 0 ||
    !threads.every((n) => Number.isInteger(n) && n >= 1)
  )
    throw new ArgumentError(
      `${who}: threads must be a non-empty array of integers >= 1, got ${JSON.stringify(opts.threads)}`,
    );
  const repeats = opts.repeats ?? 2;
  // (0 runs compared nothing and was reported as "differs")
  if (!Number.isInteger(repeats) || repeats < 1)
    throw new ArgumentError(`${who}: repeats must be an integer >= 1, got ${String(repeats)}`);
  checkFilters(who, backendName, b.def.kernels ?? [], opts);
  const kernels = (b.def.kernels ?? []).filter(
    (k) =>
      k.deterministic &&
      CASES[k.op] &&
      (!opts.ops || opts.ops.includes(k.op)) &&
      (!opts.kernels || opts.kernels.includes(k.name)),
  );
  const results: DeterminismResult[] = [];
  for (const k of kernels) {
    const rec = getOp(k.op)!;
    const dtypes = (opts.dtypes ?? ["float32", "float64"]).filter((d) => k.dtypes.includes(d));
    for (const dtype of dtypes) {
      for (const c of CASES[k.op]) {
        const base = { op: k.op, kernel: k.name, dtype, case: c.name };
        const seed = (opts.seed ?? 1234) ^ hash(`${k.op}/${c.name}/${dtype}`);
        const args = c.make(dtype, makeRng(seed));
        const devArgs = k.device === "cpu" ? args : mapTensors(args, (t) => t.to(k.device));
        const owned = [...tensorsIn(args), ...(devArgs === args ? [] : tensorsIn(devArgs))];
        try {
          const selected = withKernelPriority(k.op, [k.name], () =>
            explain(k.op, ...devArgs),
          ).selected;
          if (selected !== k.name) {
            results.push({
              ...base,
              status: "refused",
              detail: `${selected ?? "nothing"} was selected`,
            });
            continue;
          }
          const seen = new Map<string, string>();
          let threw: { where: string; error: unknown } | undefined;
          for (const n of threads) {
            if (threw) break;
            await parallelService()?.ready?.(n);
            for (let r = 0; r < repeats; r++) {
              const where = `${n} threads, run ${r + 1}`;
              let fp: string;
              try {
                fp = await fingerprint(() =>
                  backends.withFlags(
                    { core: { deterministic: true }, openmp: { numThreads: n } },
                    () =>
                      withKernelPriority(k.op, [k.name], () =>
                        dispatch(rec, rec.prepare(...devArgs)),
                      ),
                  ),
                );
              } catch (error) {
                threw = { where, error };
                break;
              }
              seen.set(where, fp);
            }
          }
          if (threw) {
            const e = threw.error as Error;
            results.push({
              ...base,
              status: "threw",
              detail: `${threw.where} threw ${e?.name ?? "an error"}: ${e?.message ?? String(e)}`,
              error: threw.error,
            });
            continue;
          }
          const distinct = new Set(seen.values());
          if (distinct.size === 1) results.push({ ...base, status: "same" });
          else {
            const first = [...seen.values()][0];
            const odd = [...seen].filter(([, v]) => v !== first).map(([w]) => w);
            results.push({
              ...base,
              status: "differs",
              detail: `${[...seen.keys()][0]} differs from ${odd.join(", ")}`,
            });
          }
        } finally {
          for (const t of owned) t.dispose();
        }
      }
    }
  }
  const differs = results.filter((r) => r.status === "differs");
  const failed = results.filter((r) => r.status === "differs" || r.status === "threw");
  const line = (r: DeterminismResult) => `${r.op} [${r.kernel}, ${r.dtype}] ${r.case}: ${r.detail}`;
  return {
    backend: backendName,
    threads,
    results,
    differs,
    failed,
    toString: () =>
      `${backendName}: ${results.filter((r) => r.status === "same").length} bit-identical at ${threads.join("/")} threads x ${repeats} runs, ${results.filter((r) => r.status === "refused").length} refused, ${differs.length} differ, ${failed.length - differs.length} threw${failed.length ? `\n${failed.map((r) => `  ${r.status === "threw" ? "THREW" : "DIFFERS"} ${line(r)}`).join("\n")}` : ""}`,
    assertPassed() {
      if (failed.length)
        throw new Error(`determinism of ${backendName} failed:\n${failed.map(line).join("\n")}`);
    },
  };
}
