/**
 * run-cpu: torch.backends.xeon.run_cpu for JavaScript. Runs a script as N instances
 * (child processes of the current runtime), each with its own cores: OMP_NUM_THREADS and
 * MKL_NUM_THREADS set to its core count and, on Linux with `taskset`, pinned to them.
 *
 *   runCpu(["--ninstances", "2", "--ncores-per-instance", "4", "bench.js", "--size", "1024"])
 *
 * Exit codes: 0 every instance succeeded; the first failing instance's code otherwise;
 * 2 for bad arguments (a RunCpuUsageError names the argument).
 */

import { ArgumentError, runtime } from "@backplane/core";
import { builtinModule, host } from "@backplane/core/cpu";

const g = host;

export const RUN_CPU_USAGE = `run-cpu: run a script as several instances, each on its own CPU cores
(torch.backends.xeon.run_cpu for JavaScript)

Usage:
  run-cpu [options] [--] <script> [script arguments...]

Options:
  --ninstances N            instances to run (default: 1, or all cores / --ncores-per-instance)
  --ncores-per-instance N   cores per instance (default: all cores / --ninstances)
  --core-list LIST          cores to use, e.g. 0-3,8,10-11 (default: the cores this
                            process may run on)
  --instance-idx I          run only instance I (0-based) of the plan
  --latency-mode            4 cores per instance, as many instances as the cores allow
  --throughput-mode         one instance on all the cores
  --disable-taskset         do not pin instances to their cores
  --runtime NAME            node, bun or deno (default: the runtime running run-cpu)
  --dry-run                 print the plan and exit
  -h, --help                this text

Each instance gets OMP_NUM_THREADS and MKL_NUM_THREADS (its core count, which sizes the
backend-openmp pool), BACKPLANE_INSTANCE_INDEX, BACKPLANE_NINSTANCES and
BACKPLANE_CORE_LIST. On Linux, instances are pinned with "taskset -c <cores>" when taskset
is installed. Exit code: 0 when every instance succeeds, else the first failing
instance's code; 2 for bad arguments.`;

/** A bad command line: `argument` names the option (or "<script>"). Exit code 2. */
export class RunCpuUsageError extends ArgumentError {
  readonly argument: string;
  constructor(argument: string, message: string) {
    super(`run-cpu: ${message}`);
    this.argument = argument;
  }
}

export type RunCpuRuntime = "node" | "bun" | "deno";

export interface RunCpuInstance {
  index: number;
  cores: number[];
  /** The full command line: [program, ...arguments], taskset included. */
  command: string[];
  /** The variables set for this instance (on top of the current environment). */
  env: Record<string, string>;
}

export interface RunCpuPlan {
  runtime: RunCpuRuntime;
  script: string;
  args: string[];
  ninstances: number;
  ncoresPerInstance: number;
  /** The cores available to the plan. */
  cores: number[];
  /** Instances to start (one when --instance-idx is given). */
  instances: RunCpuInstance[];
  /** The taskset program used for pinning, or undefined (then `note` says why). */
  taskset?: string;
  note?: string;
  dryRun: boolean;
  help: boolean;
}

export interface RunCpuOptions {
  /** Where the plan and messages go (default console.log). */
  log?: (line: string) => void;
  /** Where usage errors go (default console.error). */
  error?: (line: string) => void;
  /** "inherit" (default): instances write to this terminal; "capture": each line goes to log, prefixed "[i] ". */
  output?: "inherit" | "capture";
  /** Environment for the plan (default: this process's). */
  env?: Record<string, string | undefined>;
  /** The cores this process may run on (default: its affinity mask, else 0..n-1). */
  cores?: number[];
  cwd?: string;
}

const BOOLEAN = new Set([
  "--latency-mode",
  "--throughput-mode",
  "--disable-taskset",
  "--dry-run",
  "--help",
]);
const VALUED = new Set([
  "--ninstances",
  "--ncores-per-instance",
  "--core-list",
  "--instance-idx",
  "--runtime",
]);

function positiveInt(name: string, text: string, min = 1): number {
  // (beyond 2^53 the number is not the one written: "--instance-idx 1e+23 is out of range")
  if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text)))
    throw new RunCpuUsageError(
      name,
      `${name} must be an integer >= ${min}, got ${JSON.stringify(text)}`,
    );
  return Number(text);
}

/**
 * The highest core number a core list may name (Linux's largest NR_CPUS is 8192): without a
 * bound, "0-99999999999" filled a Set until it threw a RangeError.
 */
export const MAX_CORE = 8191;

/** Parses "0-3,8,10-11" into sorted, distinct core numbers (each at most MAX_CORE). */
export function parseCoreList(text: string, name = "--core-list"): number[] {
  const out = new Set<number>();
  for (const part of text.split(",")) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!m)
      throw new RunCpuUsageError(
        name,
        `${name}: ${JSON.stringify(part)} is not a core or a range like 0-3 (in ${JSON.stringify(text)})`,
      );
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a) throw new RunCpuUsageError(name, `${name}: the range ${part.trim()} runs backwards`);
    if (b > MAX_CORE)
      throw new RunCpuUsageError(
        name,
        `${name}: core ${b} in ${JSON.stringify(part.trim())} is above the highest core number supported (${MAX_CORE})`,
      );
    for (let c = a; c <= b; c++) out.add(c);
  }
  return [...out].sort((x, y) => x - y);
}

/** A value as an error message shows it (strings quoted, so "4" does not read as 4). */
function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v))
    return `[${v.slice(0, 8).map(show).join(", ")}${v.length > 8 ? ", ..." : ""}]`;
  try {
    return String(v);
  } catch {
    return typeof v; // (an object without toString)
  }
}

/**
 * options.cores, checked: core numbers (integers in [0, MAX_CORE]), sorted and distinct as
 * parseCoreList() gives them. Unchecked, a number made cores.slice() a TypeError, and
 * strings, fractions or repeats went into "taskset -c" and OMP_NUM_THREADS.
 */
function checkCores(cores: unknown): number[] {
  const isCore = (c: unknown) =>
    Number.isInteger(c) && (c as number) >= 0 && (c as number) <= MAX_CORE;
  if (!Array.isArray(cores) || !cores.every(isCore))
    throw new RunCpuUsageError(
      "cores",
      `options.cores must be an array of core numbers (integers in [0, ${MAX_CORE}]), got ${show(cores)}`,
    );
  return [...new Set(cores as number[])].sort((x, y) => x - y);
}

/** "0,1,2,3,8" -> "0-3,8". */
export function formatCoreList(cores: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < cores.length; ) {
    let j = i;
    while (j + 1 < cores.length && cores[j + 1] === cores[j] + 1) j++;
    parts.push(j > i ? `${cores[i]}-${cores[j]}` : String(cores[i]));
    i = j + 1;
  }
  return parts.join(",");
}

/** The cores this process may run on (Linux: its affinity mask), else 0..n-1. */
export function availableCores(): number[] {
  const fs = builtinModule<typeof import("node:fs")>("node:fs");
  if (runtime().platform === "linux" && fs) {
    try {
      const status: string = fs.readFileSync("/proc/self/status", "utf8");
      const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(status);
      if (m) return parseCoreList(m[1]);
    } catch {
      // fall through
    }
  }
  return Array.from({ length: Math.max(1, runtime().hardwareConcurrency) }, (_, i) => i);
}

function findOnPath(program: string, env: Record<string, string | undefined>): string | undefined {
  const fs = builtinModule<typeof import("node:fs")>("node:fs");
  if (!fs) return undefined;
  const sep = runtime().platform === "win32" ? ";" : ":";
  for (const dir of (env.PATH ?? "").split(sep)) {
    if (!dir) continue;
    const p = `${dir.replace(/\/+$/, "")}/${program}`;
    try {
      if (fs.statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

function currentRuntime(): RunCpuRuntime {
  const name = runtime().name;
  return name === "bun" || name === "deno" ? name : "node";
}

function runtimeCommand(rt: RunCpuRuntime, env: Record<string, string | undefined>): string[] {
  if (rt === currentRuntime()) {
    if (rt === "deno" && g.Deno) return [g.Deno.execPath(), "run", "-A"];
    if (g.process) return [g.process.execPath];
  }
  const path = findOnPath(rt, env) ?? rt;
  return rt === "deno" ? [path, "run", "-A"] : [path];
}

function processEnv(): Record<string, string | undefined> {
  try {
    if (g.Deno) return g.Deno.env.toObject();
    return { ...(g.process?.env ?? {}) };
  } catch {
    return {};
  }
}

/** The launcher's own options, up to the script (or "--"): values, flags, and where the script is. */
function parseOptions(argv: string[]): {
  values: Record<string, string>;
  flags: Set<string>;
  scriptAt: number;
} {
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  let i = 0;
  for (; i < argv.length; i++) {
    let a = argv[i];
    if (a === "--") {
      i++;
      break;
    }
    if (a === "-h") a = "--help";
    if (!a.startsWith("-")) break;
    const eq = a.indexOf("=");
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (BOOLEAN.has(name)) {
      if (eq > 0) throw new RunCpuUsageError(name, `${name} takes no value`);
      flags.add(name);
    } else if (VALUED.has(name)) {
      const v = eq > 0 ? a.slice(eq + 1) : argv[++i];
      if (v === undefined || (eq < 0 && v.startsWith("--")))
        throw new RunCpuUsageError(name, `${name} needs a value`);
      values[name] = v;
    } else {
      throw new RunCpuUsageError(
        name,
        `unknown option ${name} (known: ${[...VALUED, ...BOOLEAN].join(", ")})`,
      );
    }
  }
  return { values, flags, scriptAt: i };
}

/** The numeric options' values, checked before anything else is (they may hold the script). */
function checkNumbers(values: Record<string, string>): void {
  for (const [name, min] of [
    ["--ninstances", 1],
    ["--ncores-per-instance", 1],
    ["--instance-idx", 0],
  ] as const) {
    if (values[name] !== undefined) positiveInt(name, values[name], min);
  }
}

/** How many instances, and how many cores each, from the options (torch's run_cpu rules). */
function splitCores(
  values: Record<string, string>,
  flags: Set<string>,
  cores: number[],
): { ninstances: number; ncores: number } {
  let ninstances =
    values["--ninstances"] !== undefined ? positiveInt("--ninstances", values["--ninstances"]) : 0;
  let ncores =
    values["--ncores-per-instance"] !== undefined
      ? positiveInt("--ncores-per-instance", values["--ncores-per-instance"])
      : 0;
  const latency = flags.has("--latency-mode");
  const throughput = flags.has("--throughput-mode");
  if (latency && throughput)
    throw new RunCpuUsageError(
      "--latency-mode",
      "--latency-mode and --throughput-mode cannot be used together",
    );
  if ((latency || throughput) && (ninstances || ncores))
    throw new RunCpuUsageError(
      latency ? "--latency-mode" : "--throughput-mode",
      `${latency ? "--latency-mode" : "--throughput-mode"} sets the instances and cores itself; drop --ninstances and --ncores-per-instance`,
    );
  if (latency) {
    ncores = Math.min(4, cores.length);
    ninstances = Math.floor(cores.length / ncores);
  } else if (throughput || (!ninstances && !ncores)) {
    ninstances = 1;
    ncores = cores.length;
  } else if (!ncores) {
    ncores = Math.floor(cores.length / ninstances);
    if (ncores < 1)
      throw new RunCpuUsageError(
        "--ninstances",
        `--ninstances ${ninstances} is more than the ${cores.length} cores available (${formatCoreList(cores)})`,
      );
  } else if (!ninstances) {
    ninstances = Math.floor(cores.length / ncores);
    if (ninstances < 1)
      throw new RunCpuUsageError(
        "--ncores-per-instance",
        `--ncores-per-instance ${ncores} is more than the ${cores.length} cores available (${formatCoreList(cores)})`,
      );
  }
  if (ninstances * ncores > cores.length)
    throw new RunCpuUsageError(
      "--ncores-per-instance",
      `--ninstances ${ninstances} x --ncores-per-instance ${ncores} needs ${ninstances * ncores} cores, but only ${cores.length} are available (${formatCoreList(cores)}); lower one of them or give --core-list`,
    );
  return { ninstances, ncores };
}

/** taskset's path when instances can be pinned, else the note saying why not. */
function pinning(
  flags: Set<string>,
  env: Record<string, string | undefined>,
): { taskset?: string; note?: string } {
  if (flags.has("--disable-taskset")) return { note: "not pinned to cores (--disable-taskset)" };
  if (runtime().platform !== "linux")
    return {
      note: `not pinned to cores: core affinity needs taskset, which is Linux only (this is ${runtime().platform})`,
    };
  const taskset = findOnPath("taskset", env);
  return taskset
    ? { taskset }
    : {
        note: "not pinned to cores: taskset was not found on PATH (install util-linux); each instance still gets its thread count",
      };
}

/**
 * taskset refuses a core outside the affinity mask only when the instance starts
 * ("Invalid argument"); say so before, as a usage error.
 */
function checkAllowed(cores: number[], mask: number[]): void {
  const allowed = new Set(mask);
  const outside = cores.filter((c) => !allowed.has(c));
  if (outside.length > 0)
    throw new RunCpuUsageError(
      "--core-list",
      `--core-list: core${outside.length > 1 ? "s" : ""} ${formatCoreList(outside)} ${outside.length > 1 ? "are" : "is"} not among the cores this process may run on (${formatCoreList([...allowed].sort((x, y) => x - y))}); use those, or --disable-taskset`,
    );
}

type PlanOptions = { env?: Record<string, string | undefined>; cores?: number[] };

/** planRunCpu's arguments, checked: the environment and the cores allowed (if given). */
function checkPlanArgs(argv: unknown, options: PlanOptions | null) {
  if (!Array.isArray(argv) || !argv.every((a) => typeof a === "string"))
    throw new RunCpuUsageError("argv", "the arguments must be an array of strings");
  const o = options ?? {};
  if (typeof o !== "object")
    throw new RunCpuUsageError("options", `the options must be an object, got ${show(o)}`);
  return {
    env: o.env ?? processEnv(),
    allowed: o.cores === undefined ? undefined : checkCores(o.cores),
  };
}

/**
 * Parses the command line into a plan (nothing is started). Throws a RunCpuUsageError
 * naming the argument when the command line is wrong.
 */
export function planRunCpu(argv: string[], options: PlanOptions | null = {}): RunCpuPlan {
  const { env, allowed } = checkPlanArgs(argv, options);
  const { values, flags, scriptAt } = parseOptions(argv);
  const help = flags.has("--help");
  const script = argv[scriptAt];
  const args = argv.slice(scriptAt + 1);
  const rtText = values["--runtime"] ?? currentRuntime();
  if (rtText !== "node" && rtText !== "bun" && rtText !== "deno")
    throw new RunCpuUsageError(
      "--runtime",
      `--runtime must be node, bun or deno, got ${JSON.stringify(rtText)}`,
    );
  const rt = rtText as RunCpuRuntime;
  const plan: RunCpuPlan = {
    runtime: rt,
    script: script ?? "",
    args,
    ninstances: 0,
    ncoresPerInstance: 0,
    cores: [],
    instances: [],
    dryRun: flags.has("--dry-run"),
    help,
  };
  if (help) return plan;
  // The values first: in "--ninstances app.js" the option took the script, so the error
  // names the option's bad value (as argparse's) rather than a missing script.
  checkNumbers(values);
  if (script === undefined) throw new RunCpuUsageError("<script>", "name the script to run");

  const cores =
    values["--core-list"] !== undefined
      ? parseCoreList(values["--core-list"])
      : (allowed ?? availableCores());
  if (cores.length === 0)
    throw new RunCpuUsageError(
      values["--core-list"] !== undefined ? "--core-list" : "cores",
      values["--core-list"] !== undefined ? "--core-list names no core" : "options.cores is empty",
    );
  const { taskset, note } = pinning(flags, env);
  if (taskset && values["--core-list"] !== undefined)
    checkAllowed(cores, allowed ?? availableCores());
  const { ninstances, ncores } = splitCores(values, flags, cores);
  let only: number | undefined;
  if (values["--instance-idx"] !== undefined) {
    only = positiveInt("--instance-idx", values["--instance-idx"], 0);
    if (only >= ninstances)
      throw new RunCpuUsageError(
        "--instance-idx",
        `--instance-idx ${only} is out of range: there are ${ninstances} instances (0..${ninstances - 1})`,
      );
  }
  const base = runtimeCommand(rt, env);
  for (let k = 0; k < ninstances; k++) {
    if (only !== undefined && k !== only) continue;
    const mine = cores.slice(k * ncores, (k + 1) * ncores);
    const list = formatCoreList(mine);
    plan.instances.push({
      index: k,
      cores: mine,
      command: [...(taskset ? [taskset, "-c", list] : []), ...base, script, ...args],
      env: {
        OMP_NUM_THREADS: String(ncores),
        MKL_NUM_THREADS: String(ncores),
        BACKPLANE_INSTANCE_INDEX: String(k),
        BACKPLANE_NINSTANCES: String(ninstances),
        BACKPLANE_CORE_LIST: list,
      },
    });
  }
  return { ...plan, ninstances, ncoresPerInstance: ncores, cores, taskset, note };
}

function quote(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** The plan as printed before anything starts. */
export function formatPlan(plan: RunCpuPlan): string[] {
  const lines = [
    `run-cpu: ${plan.ninstances} instance${plan.ninstances === 1 ? "" : "s"} x ${plan.ncoresPerInstance} core${plan.ncoresPerInstance === 1 ? "" : "s"} of ${plan.cores.length} available (${formatCoreList(plan.cores)}), runtime ${plan.runtime}, ${plan.taskset ? `pinned with ${plan.taskset} -c` : plan.note}`,
  ];
  for (const inst of plan.instances) {
    lines.push(
      `  instance ${inst.index}: cores ${formatCoreList(inst.cores)}, OMP_NUM_THREADS=${inst.env.OMP_NUM_THREADS}: ${inst.command.map(quote).join(" ")}`,
    );
  }
  return lines;
}

function signalCode(signal: string | null): number {
  const n = signal
    ? builtinModule<typeof import("node:os")>("node:os")?.constants?.signals?.[
        signal as NodeJS.Signals
      ]
    : undefined;
  return typeof n === "number" ? 128 + n : 1;
}

/** The signals a launcher passes on to its instances (torch's run_cpu closes them on these). */
const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * While the instances run, a SIGINT/SIGTERM/SIGHUP sent to run-cpu goes on to every instance
 * still running, instead of killing run-cpu alone and leaving them orphaned; a second one
 * sends SIGKILL. Returns the function that removes the handlers (a no-op where the runtime
 * has no process signals).
 */
function forwardSignals(children: Set<import("node:child_process").ChildProcess>): () => void {
  // (the core's host type leaves out the event methods; Node, Bun and Deno all have them)
  type Sig = (typeof FORWARDED_SIGNALS)[number];
  const proc = g.process as
    | {
        on?: (s: Sig, h: () => void) => void;
        off?: (s: Sig, h: () => void) => void;
        kill?: (pid: number, s: string) => void;
      }
    | undefined;
  const on = proc?.on?.bind(proc);
  const off = proc?.off?.bind(proc);
  if (!on || !off) return () => {};
  let received = 0;
  const handlers = FORWARDED_SIGNALS.map((sig) => {
    const h = () => {
      // A second signal (a second Ctrl-C) ends instances that ignored the first.
      const send = ++received > 1 ? "SIGKILL" : sig;
      for (const c of children) {
        try {
          // By pid where possible: Deno's ChildProcess.kill() sends only its first signal.
          if (c.pid !== undefined && proc?.kill) proc.kill(c.pid, send);
          else c.kill(send);
        } catch {
          // already gone
        }
      }
    };
    try {
      on(sig, h);
    } catch {
      return undefined; // (a runtime that cannot listen to this signal)
    }
    return [sig, h] as const;
  });
  return () => {
    for (const e of handlers) if (e) off(e[0], e[1]);
  };
}

function startInstance(
  inst: RunCpuInstance,
  options: RunCpuOptions,
  log: (line: string) => void,
  children: Set<import("node:child_process").ChildProcess>,
): Promise<number> {
  const cp = builtinModule<typeof import("node:child_process")>("node:child_process");
  if (!cp) {
    log(`run-cpu: instance ${inst.index}: this runtime cannot start processes`);
    return Promise.resolve(127);
  }
  const capture = options.output === "capture";
  const env = { ...(options.env ?? processEnv()), ...inst.env };
  return new Promise<number>((resolve) => {
    let child: import("node:child_process").ChildProcess;
    try {
      child = cp.spawn(inst.command[0], inst.command.slice(1), {
        env,
        cwd: options.cwd,
        stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit",
      });
    } catch (e) {
      log(`run-cpu: instance ${inst.index} could not start: ${(e as Error).message}`);
      resolve(127);
      return;
    }
    children.add(child);
    const pending: Promise<void>[] = [];
    if (capture) {
      for (const stream of [child.stdout, child.stderr]) {
        if (!stream) continue; // stdio "pipe" always gives both
        pending.push(
          new Promise<void>((done) => {
            let rest = "";
            stream.setEncoding("utf8");
            stream.on("data", (text: string) => {
              const lines = (rest + text).split("\n");
              rest = lines.pop() ?? "";
              for (const l of lines) log(`[${inst.index}] ${l}`);
            });
            stream.on("end", () => {
              if (rest) log(`[${inst.index}] ${rest}`);
              done();
            });
            stream.on("error", () => done());
          }),
        );
      }
    }
    let settled = false;
    child.on("error", (e: Error) => {
      children.delete(child);
      if (settled) return;
      settled = true;
      log(`run-cpu: instance ${inst.index} could not start: ${e.message}`);
      resolve(127);
    });
    child.on("close", (code: number | null, signal: string | null) => {
      children.delete(child);
      if (settled) return;
      settled = true;
      void Promise.all(pending).then(() => resolve(code ?? signalCode(signal)));
    });
  });
}

/** runCpu's own options (planRunCpu checks env and cores): an ArgumentError names a bad one. */
function checkRunOptions(options: RunCpuOptions): RunCpuOptions {
  const bad = (what: string, v: unknown): never => {
    throw new ArgumentError(`run-cpu: ${what}, got ${show(v)}`);
  };
  if (typeof options !== "object") bad("the options must be an object", options);
  for (const k of ["log", "error"] as const)
    if (options[k] !== undefined && typeof options[k] !== "function")
      bad(`options.${k} must be a function taking a line`, options[k]);
  if (options.output !== undefined && options.output !== "inherit" && options.output !== "capture")
    bad('options.output must be "inherit" or "capture"', options.output);
  if (options.cwd !== undefined && typeof options.cwd !== "string")
    bad("options.cwd must be a directory path (a string)", options.cwd);
  return options;
}

/**
 * torch.backends.xeon.run_cpu: prints the plan, starts the instances, waits for them all.
 * Resolves to the exit code (0; the first failing instance's code; 2 for bad arguments).
 */
export async function runCpu(argv: string[], options: RunCpuOptions | null = {}): Promise<number> {
  options = checkRunOptions(options ?? {});
  const log = options.log ?? ((l: string) => console.log(l));
  const error = options.error ?? ((l: string) => console.error(l));
  let plan: RunCpuPlan;
  try {
    plan = planRunCpu(argv, { env: options.env, cores: options.cores });
  } catch (e) {
    if (e instanceof RunCpuUsageError) {
      error(`${e.message}\nRun "run-cpu --help" for usage.`);
      return 2;
    }
    throw e;
  }
  if (plan.help) {
    log(RUN_CPU_USAGE);
    return 0;
  }
  for (const line of formatPlan(plan)) log(line);
  if (plan.dryRun) return 0;
  const children = new Set<import("node:child_process").ChildProcess>();
  const unforward = forwardSignals(children);
  let codes: number[];
  try {
    codes = await Promise.all(
      plan.instances.map((inst) => startInstance(inst, options, log, children)),
    );
  } finally {
    unforward();
  }
  let result = 0;
  codes.forEach((code, k) => {
    if (code !== 0) {
      log(`run-cpu: instance ${plan.instances[k].index} exited with code ${code}`);
      if (result === 0) result = code;
    }
  });
  return result;
}
