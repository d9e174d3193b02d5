/**
 * The dispatcher: runs the first kernel, in the ranker's order, that supports the inputs;
 * then nondeterministic kernels deterministic mode held back (warnOnly), then a
 * NoKernelError that lists every candidate. Strict mode, result checks and the verbose
 * trace happen here; the order itself comes from ranker.ts.
 */

import {
  BackplaneError,
  type CandidateReport,
  FallbackError,
  KernelContractError,
  KernelError,
  NoKernelError,
  NondeterministicError,
} from "../errors.ts";
import { callListOpen, currentFrame, type KernelCall } from "../flags/context.ts";
import { currentState } from "../flags/state.ts";
import { bumpGeneration } from "../registry/backends.ts";
import {
  getOp,
  type Kernel,
  kernelAccepts,
  type OpParams,
  type OpRecord,
} from "../registry/kernels.ts";
import { warnOnce } from "../util/log.ts";
import { candidates } from "./explain.ts";
import { type Entry, entryFor, rank } from "./ranker.ts";
import { checkResult } from "./result-check.ts";
import { disposeResult, now } from "./timing.ts";
import { emitVerbose } from "./verbose.ts";

/**
 * Runs `op` on the best kernel for `params`: the op's result type. The hot path of every op.
 * The one place a kernel's result takes its op's type: the table holds kernels of every
 * op, each registered under its op's name (typed when defined through `op.kernel()`), and
 * core.checkKernels holds each result to the op's `result()` at run time.
 */
export function dispatch<P extends OpParams, R>(op: OpRecord<P, never, R>, params: P): R {
  return dispatchAny(op, params) as R;
}

function dispatchAny(op: OpRecord, params: OpParams): unknown {
  const frame = currentFrame();
  const e = entryFor(op, frame.state, params.deviceType, params.dtype);
  if (e.initialising !== undefined) warnInitialising(op, e.initialising);
  const ks = rank(op, e, params, true).kernels;
  for (let i = 0; i < ks.length; i++) {
    const k = ks[i];
    if (kernelAccepts(k, params) === true) {
      if (e.wanted !== undefined) checkStrict(op, e, k, params);
      return e.verbose || frame.calls !== undefined
        ? traced(op, k, params, e)
        : runKernel(op, k, params, e.check);
    }
  }
  return runHeldBack(op, e, params);
}

const inList = (k: Kernel, names: readonly string[]): boolean =>
  names.includes(k.name) || (k.family !== undefined && names.includes(k.family));

/** Strict mode: the kernel about to run must be one the user asked for. */
function checkStrict(op: OpRecord, e: Entry, k: Kernel, params: OpParams): void {
  const wanted = e.wanted as readonly string[];
  if (inList(k, wanted)) return;
  const refused = candidates(op, e, params).candidates.filter((c) => {
    const kernel = op.kernels.find((x) => x.name === c.kernel);
    return kernel !== undefined && inList(kernel, wanted);
  });
  throw new FallbackError(op.name, wanted, `${k.name} (${k.backend})`, refused);
}

function runHeldBack(op: OpRecord, e: Entry, params: OpParams): unknown {
  for (const k of e.heldBack) {
    if (kernelAccepts(k, params) === true) {
      if (currentState().values["core.deterministicWarnOnly"] !== true) {
        throw new NondeterministicError(op.name, `${k.name} (${k.backend})`);
      }
      if (e.wanted !== undefined) checkStrict(op, e, k, params);
      warnOnce(
        `nondeterministic:${op.name}/${k.name}`,
        `${op.name}: ${k.name} (${k.backend}) is nondeterministic but useDeterministicAlgorithms(true, { warnOnly: true }) lets it run`,
      );
      return traced(op, k, params, e);
    }
  }
  const report = candidates(op, e, params).candidates;
  throw new NoKernelError(op.name, report, hintFor(op, report, params));
}

/**
 * A way out: a flag-disabled kernel that would accept these inputs, with what to set (a
 * kernel's flags must all be true: each one that is not, and its value now), else
 * deterministic mode.
 */
function hintFor(op: OpRecord, report: CandidateReport[], params: OpParams): string {
  const values = currentState().values;
  for (const c of report) {
    if (!c.reason.startsWith("disabled by flag")) continue;
    const k = op.kernels.find((x) => x.name === c.kernel);
    if (k === undefined || kernelAccepts(k, params) !== true) continue;
    const off = (k.flags ?? []).filter((f) => values[f] !== true);
    if (off.length === 0) continue;
    const sets = off.map((f) => `${f} to true (it is ${String(values[f])})`);
    return `Hint: ${c.kernel} would run if you set ${sets.join(" and ")}.`;
  }
  const det = report.find((c) => c.reason.includes("nondeterministic"));
  if (det)
    return "Hint: useDeterministicAlgorithms(false), or { warnOnly: true }, lets a nondeterministic kernel run.";
  return "";
}

/** The kernel record `name` of `op`, to call directly (benchmarks, tests). */
export function getKernel(opName: string, name: string): Kernel | undefined {
  return getOp(opName)?.kernels.find((k) => k.name === name);
}

/**
 * A kernel's run(). What it throws that is not a Backplane error becomes a KernelError; no
 * result at all is a KernelContractError; with `check` (core.checkKernels, core.strict, the
 * testkit) the result must also be what the op promises (checkResult).
 */
function runKernel(op: OpRecord, k: Kernel, params: OpParams, check: boolean): unknown {
  let out: unknown;
  try {
    out = k.run(params);
  } catch (err) {
    if (err instanceof BackplaneError) throw err;
    throw new KernelError(op.name, k.name, k.backend, err);
  }
  if (out === undefined || out === null)
    throw new KernelContractError(op.name, k.name, k.backend, `returned ${out}, not a result`);
  if (check) {
    try {
      checkResult(op, k, params, out);
    } catch (err) {
      // The caller never receives it; an input handed back stays theirs.
      disposeResult(out, params);
      throw err;
    }
  }
  return out;
}

/** Once per op: it ran while faster backends were still loading (no await ready() first). */
function warnInitialising(op: OpRecord, backends: readonly string[]): void {
  warnOnce(
    `initialising:${op.name}`,
    `[backplane] ${op.name} ran before ${backends.join(", ")} finished initialising, so a slower kernel may have run; await ready() once at start-up`,
  );
}

/** Runs a kernel timed: for the verbose trace and for record() scopes. */
function traced(op: OpRecord, k: Kernel, params: OpParams, e: Entry): unknown {
  const verbose = e.verbose;
  const t0 = now();
  const out = runKernel(op, k, params, e.check);
  const ms = now() - t0;
  const lists = currentFrame().calls;
  if (lists !== undefined) {
    const call: KernelCall = {
      op: op.name,
      kernel: k.name,
      backend: k.backend,
      device: k.device,
      dtype: params.dtype,
      shape: op.shapeKey(params),
      ms,
      ...(e.initialising ? { initialising: [...e.initialising] } : {}),
    };
    // Every record() in progress: a nested one's calls are the outer one's too.
    for (const calls of lists) if (callListOpen(calls)) calls.push(call);
  }
  if (verbose) {
    emitVerbose(
      `backplane_verbose,exec,${op.name},${k.backend}:${k.name},${op.shapeKey(params)},${params.dtype},${ms.toFixed(4)} ms`,
    );
  }
  return out;
}

/** Forgets every measured order (the ranker also drops them when flags or registrations change). */
export function clearAutotuneCache(): void {
  bumpGeneration();
}
