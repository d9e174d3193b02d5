/**
 * runBench(argv): one suite, printed as a table or (--json) one JSON object:
 * { suite, runtime, machine, cpu, results: [{ case, impl, median_ms, gflops? }], ratios, notes };
 * `all`: the suites with peers in turn, as { suite: "all", runtime, machine, cpu, suites }.
 * What `backplane bench` and the repository's `npm run bench` call. Returns an exit code:
 * 0 done, 2 bad arguments (an unknown suite, a bad option value).
 */
import { host } from "@backplane/core/backend";
import { cpuIdentity } from "./cpu.ts";
import { Harness, machine, runtimeName, table } from "./harness.ts";
import { type ProgressOutput, progressReporter } from "./progress.ts";
import { SUITES } from "./suites/index.ts";

export interface BenchIO {
  /** Where the table or the JSON goes (stdout). */
  out: (text: string) => void;
  /** Where progress and errors go (stderr). */
  err: ProgressOutput;
}

function defaultIO(): BenchIO {
  const p = host.process as (NodeJS.Process & typeof host.process) | undefined;
  return {
    out: (text) => console.log(text),
    err: {
      write: (text) => p?.stderr?.write(text),
      isTTY: Boolean(p?.stderr?.isTTY),
      columns: p?.stderr?.columns,
    },
  };
}

export function benchUsage(): string {
  const width = Math.max(...Object.keys(SUITES).map((s) => s.length));
  return [
    "Usage: backplane bench <suite> [--json] [suite options]",
    "",
    "Suites:",
    ...Object.entries(SUITES).map(([name, s]) => `  ${name.padEnd(width)}  ${s.summary}`),
    `  ${"all".padEnd(width)}  the suites with peers (${WITH_PEERS.join(", ")}) one after another, the CPU named`,
    "",
    "  --json           print one JSON object instead of the table (progress stays on stderr)",
    "  --sizes a,b      gemm only: these sizes instead of 256,512,1024,2048",
    "  --impls a,b      gemm only: these impls only",
    "",
    "Progress goes to stderr: a bar on a terminal, one line per result otherwise.",
    "OpenBLAS numbers need OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (the suites note it).",
    "Exit codes: 0 done, 2 bad arguments.",
  ].join("\n");
}

/** The suites that measure Backplane against other libraries: what `all` runs. */
export const WITH_PEERS = ["gemm", "conv2d", "sdpa", "quantized", "dispatch"];

interface SuiteRun {
  suite: string;
  h: Harness;
}

async function runSuite(name: string, args: string[], io: BenchIO): Promise<SuiteRun> {
  const progress = progressReporter(io.err);
  const h = new Harness(progress.onEvent);
  try {
    const suite = await SUITES[name]!.load();
    await suite.run(h, args);
  } finally {
    progress.finish();
  }
  return { suite: name, h };
}

function jsonOf({ suite, h }: SuiteRun) {
  return {
    suite,
    results: h.results.map(({ samples: _s, ...r }) => r),
    ratios: h.ratios,
    notes: h.notes,
  };
}

export async function runBench(
  argv: readonly string[],
  io: BenchIO = defaultIO(),
): Promise<number> {
  const args = [...argv];
  if (args.includes("--help") || args.includes("-h")) {
    io.out(benchUsage());
    return 0;
  }
  const json = args.includes("--json");
  const name = args.find((a) => !a.startsWith("-"));
  if (!name) {
    io.err.write(`bench: name a suite\n${benchUsage()}\n`);
    return 2;
  }
  if (name !== "all" && !Object.hasOwn(SUITES, name)) {
    io.err.write(
      `bench: unknown suite ${JSON.stringify(name)} (suites: ${Object.keys(SUITES).join(", ")}, all)\n`,
    );
    return 2;
  }
  const rest = args.filter((a) => a !== name && a !== "--json");
  const names = name === "all" ? WITH_PEERS : [name];
  const runs: SuiteRun[] = [];
  try {
    for (const n of names) runs.push(await runSuite(n, rest, io));
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // Option errors (--sizes, --impls) are the caller's; anything else is a real failure.
    if (/^--[a-z]+: /.test(msg)) {
      io.err.write(`bench ${name}: ${msg}\n`);
      return 2;
    }
    throw err;
  }
  const head = { runtime: runtimeName(), machine: machine(), cpu: cpuIdentity() };
  if (json)
    io.out(
      JSON.stringify(
        name === "all"
          ? { suite: "all", ...head, suites: runs.map(jsonOf) }
          : { ...jsonOf(runs[0]!), ...head },
        null,
        2,
      ),
    );
  else io.out(runs.map((r) => table(r.suite, r.h)).join("\n\n"));
  return 0;
}
