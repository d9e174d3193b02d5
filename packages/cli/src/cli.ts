#!/usr/bin/env node
/**
 * backplane <command>: info (the doctor report), explain (the dispatcher's choice),
 * einsum-path, bench (the benchmark suites), run-cpu.
 * Exit codes: 0 success; 1 the command ran and found a problem (an op failed, no
 * kernel can run); 2 bad arguments.
 */
import { backends, flagSpec, formatCalls, isDType, opNames } from "@backplane/core";
import type { OptEinsumApi, OptEinsumStrategy } from "@backplane/core/backend";
import { describeError, type ParsedArgs, parse, parseShape, UsageError } from "./args.ts";
import { collectReport, formatReport, reportFailed } from "./doctor.ts";
import { explainCall, inputsFor, runCall } from "./explain.ts";
import { loadInstalledBackends } from "./load-backends.ts";

/** Op names as PyTorch users type them (torch.nn.functional's) -> Backplane's. */
const OP_ALIASES: Record<string, string> = {
  sdpa: "scaledDotProductAttention",
  scaled_dot_product_attention: "scaledDotProductAttention",
  log_softmax: "logSoftmax",
  multi_head_attention: "multiHeadAttention",
};

const HELP = `backplane: torch.backends for TypeScript

Usage:
  backplane info [--json]            the doctor report: runtime, every backend namespace
                                     (built, available or why not, capability, flags) and
                                     one run of each op against the float64 reference
  backplane explain <op> --shapes S  which kernel runs <op> for tensors of shapes S
        [--dtype D] [--device DEV]   (S: comma-separated, e.g. 64x32,32x16) and why each
        [--run]                      other candidate refuses; --run also runs it and
                                     prints the kernel calls made (backends.record)
  backplane einsum-path "<eq>" <shape>... [--strategy S]
                                     the contraction path (opt_einsum's PathInfo
                                     table); shapes like 2x3 (backend-opt-einsum)
  backplane bench <suite> [--json]   a benchmark suite (gemm, conv2d, sdpa, einsum,
                                     dispatch, interleave, quantized) against its peers: a table, or JSON;
                                     a progress bar on a terminal (@backplane/bench)
  backplane run-cpu [options] script [args]
                                     runs a script as N instances with cores per
                                     instance, thread counts and core affinity
                                     (torch.backends.xeon.run_cpu; backend-openmp)
  backplane help [command]           this text

Exit codes: 0 ok, 1 a check failed or no kernel can run, 2 bad arguments.`;

const COMMAND_HELP: Record<string, string> = {
  bench:
    "backplane bench <suite> [--json]\n  Runs one suite of @backplane/bench and prints its table (or one JSON object with --json). Progress goes to stderr: a bar on a terminal, one line per result otherwise. `backplane bench --help` lists the suites and their options. Exit 2 on an unknown suite or a bad option.",
  "einsum-path":
    'backplane einsum-path "ij,jk,kl->il" 10x20 20x30 30x5 [--strategy auto]\n  Prints the contraction path, its cost against the naive one, and each step. Strategies: auto, auto-hq, optimal, dp, greedy, random-greedy, branch-all, branch-2, branch-1.',
  info: "backplane info [--json]\n  Prints the doctor report; --json prints it as one JSON object. Exit 1 when an op fails its check.",
  "run-cpu":
    "backplane run-cpu [options] <script> [script arguments...]\n  Runs the script as N instances, each on its own cores with OMP_NUM_THREADS set (torch.backends.xeon.run_cpu). `backplane run-cpu --help` lists the options. Exit 0 when every instance succeeds, else the first failing instance's code; 2 on a bad option.",
  explain:
    "backplane explain <op> --shapes 2x3,3x4 [--dtype float32] [--device cpu] [--run]\n  Random tensors of those shapes go to <op>; prints the chosen kernel and every refusal. With --run, runs the op once and prints every kernel call it made (op, kernel, backend, device, dtype, shape, time). Exit 1 when no kernel can run.",
};

function allowOnly(flags: Record<string, unknown>, allowed: string[], command: string): void {
  for (const k of Object.keys(flags)) {
    if (!allowed.includes(k))
      throw new UsageError(
        `${command}: unknown option --${k} (known: ${allowed.map((a) => `--${a}`).join(", ") || "none"})`,
      );
  }
}

/** A package a command runs on, imported when the command runs, or a UsageError saying to install it. */
async function commandPackage<T>(command: string, pkg: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (e) {
    throw new UsageError(`${command} needs ${pkg} (npm i ${pkg}): ${(e as Error).message}`);
  }
}

// (literal specifiers, so knip and depcruise see the optional dependencies)
/** `bench`: the suites and their options belong to @backplane/bench (its own --help). */
const bench = async (argv: string[]): Promise<number> =>
  (
    await commandPackage(
      "bench",
      "@backplane/bench",
      () => import(/* @vite-ignore */ "@backplane/bench"),
    )
  ).runBench(argv);

/** `run-cpu`: everything after it belongs to the launcher (it has its own --help). */
const runCpu = async (argv: string[]): Promise<number> =>
  (
    await commandPackage(
      "run-cpu",
      "@backplane/backend-openmp",
      () => import(/* @vite-ignore */ "@backplane/backend-openmp"),
    )
  ).runCpu(argv);

async function help({ command, positional }: ParsedArgs): Promise<number> {
  const topic = command === "help" ? positional[0] : command;
  if (topic === undefined || topic === "help" || topic === "--help" || topic === "-h") {
    console.log(HELP);
    return 0;
  }
  // Own keys only: "toString" must not find Object.prototype's function.
  if (!Object.hasOwn(COMMAND_HELP, topic))
    throw new UsageError(
      `help: unknown command ${JSON.stringify(topic)}; commands: ${Object.keys(COMMANDS).join(", ")}`,
    );
  console.log(COMMAND_HELP[topic]);
  return 0;
}

async function info({ positional, flags }: ParsedArgs): Promise<number> {
  allowOnly(flags, ["json"], "info");
  if (positional.length > 0)
    throw new UsageError(`info: unexpected argument ${JSON.stringify(positional[0])}`);
  const loads = await loadInstalledBackends();
  const report = await collectReport(loads);
  console.log(flags.json ? JSON.stringify(report, null, 2) : formatReport(report));
  return reportFailed(report) ? 1 : 0;
}

async function einsumPath({ positional, flags }: ParsedArgs): Promise<number> {
  allowOnly(flags, ["strategy"], "einsum-path");
  const [eq, ...shapeArgs] = positional;
  if (!eq)
    throw new UsageError(
      'einsum-path: give an equation, e.g. backplane einsum-path "ij,jk->ik" 2x3 3x4',
    );
  const shapes = shapeArgs.map((s) => parseShape(s, "einsum-path: shape"));
  await loadInstalledBackends({ gpu: false }); // paths only: no device is touched
  // undefined where @backplane/backend-opt-einsum did not load (torch returns None).
  const api = backends.optEinsum.getOptEinsum() as OptEinsumApi | undefined;
  if (!api) {
    console.error(
      `backplane: einsum-path needs @backplane/backend-opt-einsum: ${backends.optEinsum.status().reason ?? "not available"}`,
    );
    return 1;
  }
  const strategy = typeof flags.strategy === "string" ? flags.strategy : undefined;
  const known =
    (flagSpec("optEinsum.strategy") as { values?: readonly string[] } | undefined)?.values ?? [];
  if (strategy !== undefined && !known.includes(strategy)) {
    throw new UsageError(
      `einsum-path: --strategy ${JSON.stringify(strategy)} is not one of ${known.join(", ")}`,
    );
  }
  const info = api.contractPath(
    eq,
    ...shapes,
    strategy ? { strategy: strategy as OptEinsumStrategy } : {},
  );
  console.log(String(info));
  return 0;
}

async function explain({ positional, flags }: ParsedArgs): Promise<number> {
  allowOnly(flags, ["shapes", "dtype", "device", "run"], "explain");
  // PyTorch's short names for ops Backplane spells out.
  // Own keys only: "toString" must not find Object.prototype's function.
  const name = positional[0];
  const op = name !== undefined && Object.hasOwn(OP_ALIASES, name) ? OP_ALIASES[name] : name;
  if (positional.length > 1)
    throw new UsageError(
      `explain: one op only, got ${positional.map((p) => JSON.stringify(p)).join(", ")} (flags like --run take no value)`,
    );
  if (!op)
    throw new UsageError("explain: name an op, e.g. backplane explain matmul --shapes 2x3,3x4");
  // GPU backends only for a GPU device: CPU work opens no driver (and prints no driver noise).
  const onGpu = typeof flags.device === "string" && !/^cpu(:|$)/.test(flags.device);
  await loadInstalledBackends({ gpu: onGpu });
  if (!opNames().includes(op))
    throw new UsageError(
      `explain: unknown op ${JSON.stringify(op)}; ops: ${opNames().join(", ")} (and ${Object.keys(OP_ALIASES).join(", ")})`,
    );
  // Their inputs are QTensors and packed weights with output qparams, which shapes do not
  // describe: without this they got float tensors and an error message a screen long.
  if (/^quantized[A-Z]/.test(op))
    throw new UsageError(
      `explain: ${op} takes quantized tensors (quantizePerTensor) and packed weights, which --shapes cannot describe; call explain("${op}", ...) of @backplane/core from code`,
    );
  if (typeof flags.shapes !== "string")
    throw new UsageError("explain: --shapes is required, e.g. --shapes 2x3,3x4");
  const shapes = flags.shapes.split(",").map((s) => parseShape(s, "explain: --shapes"));
  const dtype = flags.dtype ?? "float32";
  if (!isDType(dtype))
    throw new UsageError(`explain: --dtype ${JSON.stringify(dtype)} is not a dtype`);
  const device = typeof flags.device === "string" ? flags.device : "cpu";
  const args = inputsFor(op, shapes, dtype, device);
  const e = explainCall(op, args);
  console.log(String(e));
  if (flags.run !== undefined && e.selected) {
    const { calls } = backends.record(() => runCall(op, args));
    console.log(`\nran:\n${formatCalls(calls)}`);
  }
  return e.selected ? 0 : 1;
}

/**
 * Every command, in the order `help` lists them: main() dispatches through this table and
 * an unknown command's error lists its names. A `raw` command gets its arguments as they
 * are (its package parses them, --help included); the others get parse()'s.
 */
const COMMANDS: Record<
  string,
  | { raw: true; run: (argv: string[]) => Promise<number> }
  | { raw?: false; run: (args: ParsedArgs) => Promise<number> }
> = {
  info: { run: info },
  explain: { run: explain },
  "einsum-path": { run: einsumPath },
  bench: { raw: true, run: bench },
  "run-cpu": { raw: true, run: runCpu },
  help: { run: help },
};

async function main(argv: string[]): Promise<number> {
  // No command at all is `help` (parse's default), so look the entry up by the parsed name.
  const name = argv[0] ?? "help";
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (entry?.raw) return entry.run(argv.slice(1));
  const args = parse(argv);
  if (args.command === "--help" || args.command === "-h" || args.flags.help) return help(args);
  if (entry) return entry.run(args);
  throw new UsageError(
    `unknown command ${JSON.stringify(args.command)}; commands: ${Object.keys(COMMANDS).join(", ")}`,
  );
}

// A reader that stops early (`backplane info --json | true`) closes the pipe: that is not our
// error, so end quietly instead of throwing an unhandled EPIPE with its stack.
process.stdout.on?.("error", (e: NodeJS.ErrnoException) => {
  if (e.code !== "EPIPE") throw e;
  process.exit(process.exitCode ?? 0);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    const { code, message } = describeError(e);
    console.error(message);
    process.exitCode = code;
  },
);
