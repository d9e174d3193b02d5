/**
 * runBench(argv): one suite, printed as a table or (--json) one JSON object:
 * { suite, runtime, machine, cpu, results: [{ case, impl, median_ms, gflops? }], ratios, notes };
 * `all`: the suites with peers in turn, as { suite: "all", runtime, machine, cpu, suites }.
 * What `backplane bench` and the repository's `npm run bench` call. Returns an exit code:
 * 0 done, 2 bad arguments (an unknown suite, a bad option value).
 */
import { builtinModule, host } from "@backplane/core/cpu";
import { cpuIdentity } from "./cpu.ts";
import { Harness, machine, runtimeName, table } from "./harness.ts";
import { checkOption, OptionError, optionArgs, optionLines, readOptions } from "./options.ts";
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
  const withOptions = Object.entries(SUITES).filter(([, s]) => s.options.length > 0);
  return [
    "Usage: backplane bench <suite> [--json] [suite options]",
    "",
    "Suites:",
    ...Object.entries(SUITES).map(([name, s]) => `  ${name.padEnd(width)}  ${s.summary}`),
    `  ${"all".padEnd(width)}  the suites with peers (${WITH_PEERS.join(", ")}) one after another, the CPU named`,
    "",
    "  --json           print one JSON object instead of the table (progress stays on stderr)",
    "",
    "Suite options (backplane bench <suite> --help says what each does):",
    ...withOptions.map(
      ([name, s]) =>
        `  ${name.padEnd(width)}  ${s.options.map((o) => (o.value ? `${o.name}=${o.value}` : o.name)).join(" ")}`,
    ),
    "",
    "Progress goes to stderr: a bar on a terminal, one line per result otherwise.",
    "OpenBLAS numbers need OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (the suites note it).",
    "Exit codes: 0 done, 2 bad arguments.",
  ].join("\n");
}

/** `bench <suite> --help`: what the suite measures and every option it reads. */
export function suiteUsage(name: string): string {
  const suite = SUITES[name]!;
  return [
    `Usage: backplane bench ${name} [--json]${suite.options.length ? " [options]" : ""}`,
    "",
    suite.summary,
    "",
    "Options:",
    ...optionLines(suite.options),
    "",
    "Exit codes: 0 done, 2 bad arguments.",
  ].join("\n");
}

/** `bench all --help`: the suites it runs, and each option with the suites that read it. */
function allUsage(): string {
  const options = WITH_PEERS.flatMap((n) =>
    SUITES[n]!.options.map((o) => ({ ...o, help: `${n}: ${o.help}` })),
  );
  return [
    `Usage: backplane bench all [--json] [options]`,
    "",
    `${WITH_PEERS.join(", ")} one after another, each in a process of its own; an option goes to the suites that read it.`,
    "",
    "Options:",
    ...optionLines(options),
    "",
    "Exit codes: 0 done, 2 bad arguments.",
  ].join("\n");
}

/**
 * The arguments each suite of `names` gets (`all`: each suite only the options it reads),
 * every option checked against the suites that read it: one that none of them reads, or a
 * bad value, is an OptionError.
 */
export function suiteArgs(
  names: readonly string[],
  args: readonly string[],
): Map<string, string[]> {
  const given = readOptions(
    args,
    names.flatMap((n) => SUITES[n]!.options),
  );
  const out = new Map<string, string[]>();
  for (const n of names) {
    const mine = given.filter((g) => SUITES[n]!.options.some((o) => o.name === g.name));
    for (const g of mine) {
      try {
        checkOption(g, SUITES[n]!.options.find((o) => o.name === g.name)!);
      } catch (e) {
        throw names.length > 1 ? new OptionError(`${n}: ${(e as Error).message}`) : e;
      }
    }
    out.set(n, optionArgs(mine));
  }
  return out;
}

/** The suites that measure Backplane against other libraries: what `all` runs. */
export const WITH_PEERS = ["gemm", "conv2d", "sdpa", "quantized", "dispatch"];

interface SuiteRun {
  suite: string;
  h: Harness;
}

/**
 * How to run this same program again with other arguments (Node with its loader flags,
 * Bun, Deno), or undefined where there is no process to start (a browser).
 */
function selfCommand(): string[] | undefined {
  // The arguments before "all" (the CLI's "bench", say) are part of the command.
  const before = (args: readonly string[]) => args.slice(0, Math.max(0, args.indexOf("all")));
  const deno = host.Deno as
    | { execPath(): string; mainModule: string; args: readonly string[] }
    | undefined;
  if (deno) return [deno.execPath(), "run", "-A", deno.mainModule, ...before(deno.args)];
  const p = host.process as (NodeJS.Process & typeof host.process) | undefined;
  if (!p?.argv?.[1]) return undefined;
  return [p.execPath, ...p.execArgv, p.argv[1], ...before(p.argv.slice(2))];
}

/**
 * Each suite of `all` in a process of its own, as if run alone: the libraries, thread pools
 * and flags one suite leaves behind would otherwise slow the next (conv2d after gemm and
 * sdpa in one process measured 0.78x PyTorch's geomean against 1.2x alone).
 */
async function runSuiteAlone(name: string, args: string[], io: BenchIO): Promise<object> {
  const cmd = selfCommand();
  const cp = builtinModule<typeof import("node:child_process")>("node:child_process");
  if (!cmd || !cp) throw new Error(`bench all: cannot start a process here to run ${name} alone`);
  const [exe, ...pre] = cmd;
  const r = cp.spawnSync(exe!, [...pre, name, "--json", ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    maxBuffer: 64 * 2 ** 20,
  });
  if (r.stderr) io.err.write(r.stderr);
  if (r.status !== 0) throw new Error(`bench ${name} exited with ${r.status}`);
  return JSON.parse(r.stdout) as object;
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
  const at = args.findIndex((a) => !a.startsWith("-"));
  const name = at < 0 ? undefined : args[at];
  const known = name === "all" || (name !== undefined && Object.hasOwn(SUITES, name));
  if (args.includes("--help") || args.includes("-h")) {
    io.out(!known ? benchUsage() : name === "all" ? allUsage() : suiteUsage(name!));
    return 0;
  }
  const json = args.includes("--json");
  if (!name) {
    io.err.write(`bench: name a suite\n${benchUsage()}\n`);
    return 2;
  }
  if (!known) {
    io.err.write(
      `bench: unknown suite ${JSON.stringify(name)} (suites: ${Object.keys(SUITES).join(", ")}, all)\n`,
    );
    return 2;
  }
  const rest = args.filter((a, i) => i !== at && a !== "--json");
  let perSuite: Map<string, string[]>;
  try {
    perSuite = suiteArgs(name === "all" ? WITH_PEERS : [name], rest);
  } catch (err) {
    if (!(err instanceof OptionError)) throw err;
    io.err.write(`bench ${name}: ${err.message}\n`);
    return 2;
  }
  const head = { runtime: runtimeName(), machine: machine(), cpu: cpuIdentity() };
  if (name === "all") {
    const suites: object[] = [];
    for (const n of WITH_PEERS) suites.push(await runSuiteAlone(n, perSuite.get(n)!, io));
    if (json) io.out(JSON.stringify({ suite: "all", ...head, suites }, null, 2));
    else {
      const runs = suites as ReturnType<typeof jsonOf>[];
      io.out(runs.map((x) => table(x.suite, x)).join("\n\n"));
    }
    return 0;
  }
  let run: SuiteRun;
  try {
    run = await runSuite(name, perSuite.get(name)!, io);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // Option errors (--sizes, --impls) are the caller's; anything else is a real failure.
    if (/^--[a-z]+: /.test(msg)) {
      io.err.write(`bench ${name}: ${msg}\n`);
      return 2;
    }
    throw err;
  }
  if (json) io.out(JSON.stringify({ ...jsonOf(run), ...head }, null, 2));
  else io.out(table(name, run.h));
  return 0;
}
