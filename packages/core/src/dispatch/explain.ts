/**
 * explain(): every candidate for an op on some inputs, accepted or refused and why, in the
 * ranker's order, without running a kernel. The dispatcher's errors are built from it too.
 */
import { ArgumentError, type CandidateReport } from "../errors.ts";
import { currentState } from "../flags/state.ts";
import { getOp, kernelAccepts, type OpParams, type OpRecord } from "../registry/kernels.ts";
import { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { type Entry, entryFor, rank } from "./ranker.ts";

export interface Explanation {
  op: string;
  /** The kernel dispatch would run now, if any. */
  selected: string | undefined;
  /** How the order was decided (core.ranking's table in docs/architecture.md). */
  policy: Entry["policy"];
  candidates: CandidateReport[];
  toString(): string;
}

/** The report for these params under entry `e` (the ranker's order; nothing is measured). */
export function candidates(op: OpRecord, e: Entry, params: OpParams): Explanation {
  const out: CandidateReport[] = [];
  let selected: string | undefined;
  const ranking = rank(op, e, params, false);
  for (const k of ranking.kernels) {
    const ok = kernelAccepts(k, params);
    if (ok !== true) {
      out.push({ kernel: k.name, backend: k.backend, accepted: false, reason: ok });
      continue;
    }
    const reason =
      selected === undefined ? "selected" : `supports the inputs; ${selected} comes first`;
    out.push({ kernel: k.name, backend: k.backend, accepted: true, reason });
    selected ??= k.name;
  }
  const warnOnly = currentState().values["core.deterministicWarnOnly"] === true;
  for (const k of e.heldBack) {
    const ok = kernelAccepts(k, params);
    if (ok !== true) {
      out.push({ kernel: k.name, backend: k.backend, accepted: false, reason: ok });
      continue;
    }
    const runs = warnOnly && selected === undefined;
    out.push({
      kernel: k.name,
      backend: k.backend,
      accepted: runs,
      // With warnOnly it runs only when nothing before it can: else it is passed over.
      reason: runs
        ? "nondeterministic; runs with a warning (warnOnly)"
        : warnOnly
          ? `nondeterministic; ${selected} comes first (warnOnly)`
          : "nondeterministic, and useDeterministicAlgorithms(true) is on",
    });
    if (runs) selected = k.name;
  }
  out.push(...e.refused);
  const m = ranking.measurement;
  for (const c of out) {
    const f = m?.figures.find((x) => x.kernel === c.kernel);
    if (f && m) c.measured = { ms: f.ms, case: `${m.case} ${m.dtype}` };
  }
  return {
    op: op.name,
    selected,
    policy: e.policy,
    candidates: out,
    toString() {
      const w = Math.max(6, ...out.map((c) => c.kernel.length + c.backend.length + 3));
      const rows = out.map(
        (c) =>
          `${c.accepted ? (c.kernel === selected ? "=>" : "ok") : "  "} ${`${c.kernel} (${c.backend})`.padEnd(w)}  ${c.reason}${c.measured ? ` [measured ${c.measured.ms.toFixed(3)} ms at ${c.measured.case}]` : ""}`,
      );
      const head = `${op.name}: ${selected ? `runs ${selected}` : "no kernel can run these inputs"} (ranking: ${e.policy})`;
      return [head, ...rows].join("\n");
    },
  };
}

/** The op named `name`, or a typed error. */
export function opOrThrow(name: string): OpRecord {
  const op = getOp(name);
  if (!op) throw new ArgumentError(`unknown op ${show(name)}`);
  return op;
}

/** Every candidate for `op` on these arguments (the op's own arguments), accepted or refused, and why. */
export function explain(opName: string, ...args: unknown[]): Explanation {
  const op = opOrThrow(opName);
  const params = op.prepare(...args);
  try {
    return candidates(op, entryFor(op, currentState(), params.deviceType, params.dtype), params);
  } finally {
    releaseViews(params, args);
  }
}

/**
 * Disposes the tensors prepare() made (views such as conv2d's batch of one or eigh's
 * transposed A, which the op's own function disposes after its run): those among the
 * params that are not the caller's, given as an argument or inside an options object.
 */
function releaseViews(params: object, args: unknown[]): void {
  const given = new Set<unknown>(args);
  for (const a of args)
    if (a !== null && typeof a === "object" && !(a instanceof Tensor))
      for (const v of Object.values(a)) given.add(v);
  for (const v of Object.values(params))
    if (v instanceof Tensor && !given.has(v) && !v.disposed) v.dispose();
}
