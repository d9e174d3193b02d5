/**
 * runDeterminism(backend): with useDeterministicAlgorithms(true), every kernel of the
 * backend that claims determinism must give bit-identical outputs across thread counts
 * (1, 2 and the machine's count, each made ready first) and across repeated runs, on
 * every testkit case (issue 21: blas-gemm's bits depended on the BLAS thread count).
 * Works inside any test runner, on whichever runtime runs it.
 */
import {
  backends,
  type DType,
  explain,
  runtime,
  Tensor,
  withKernelPriority,
} from "@backplane/core";
import { dispatch, getBackend, getOp } from "@backplane/core/backend";
import { parallelService } from "@backplane/core/cpu";
import { hash, mapTensors, tensorsIn } from "./args.ts";
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
  status: "same" | "differs" | "refused";
  /** What differed, or why the kernel refused. */
  detail?: string;
}

export interface DeterminismReport {
  backend: string;
  threads: number[];
  results: DeterminismResult[];
  differs: DeterminismResult[];
  toString(): string;
  assertPassed(): void;
}

/** The output's bytes (every tensor, in a fixed order), or the error it threw. */
async function fingerprint(run: () => unknown): Promise<string> {
  let out: unknown;
  try {
    out = run();
  } catch (e) {
    return `threw ${(e as Error).name}: ${(e as Error).message}`;
  }
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
  const b = getBackend(backendName);
  if (!b)
    throw new Error(`runDeterminism: backend ${JSON.stringify(backendName)} is not registered`);
  const cores = runtime().hardwareConcurrency;
  const threads = opts.threads ?? [...new Set([1, 2, cores])];
  const repeats = opts.repeats ?? 2;
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
          for (const n of threads) {
            await parallelService()?.ready?.(n);
            for (let r = 0; r < repeats; r++) {
              const fp = await fingerprint(() =>
                backends.withFlags(
                  { core: { deterministic: true }, openmp: { numThreads: n } },
                  () =>
                    withKernelPriority(k.op, [k.name], () =>
                      dispatch(rec, rec.prepare(...devArgs)),
                    ),
                ),
              );
              seen.set(`${n} threads, run ${r + 1}`, fp);
            }
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
  const line = (r: DeterminismResult) => `${r.op} [${r.kernel}, ${r.dtype}] ${r.case}: ${r.detail}`;
  return {
    backend: backendName,
    threads,
    results,
    differs,
    toString: () =>
      `${backendName}: ${results.filter((r) => r.status === "same").length} bit-identical at ${threads.join("/")} threads x ${repeats} runs, ${results.filter((r) => r.status === "refused").length} refused, ${differs.length} differ${differs.length ? `\n${differs.map((r) => `  DIFFERS ${line(r)}`).join("\n")}` : ""}`,
    assertPassed() {
      if (differs.length)
        throw new Error(`determinism of ${backendName} failed:\n${differs.map(line).join("\n")}`);
    },
  };
}
