/**
 * runConformance(backend): every kernel of a backend, op by op, on seeded random cases
 * and edge shapes, each forced through the dispatcher (kernel priority) and judged
 * against the core's float64 reference. Output memory is poisoned (NaN bytes) first, so
 * an element a kernel forgets to write fails. Works inside any test runner.
 */
import {
  BackplaneError,
  type DType,
  explain,
  getFlag,
  isFloat,
  memoryStats,
  setFlag,
  Tensor,
  withKernelPriority,
} from "@backplane/core";
import {
  dispatch,
  type getBackend,
  getOp,
  type OpParams,
  setAllocationHook,
} from "@backplane/core/backend";
import { checkFilters, checkOptions, hash, mapTensors, resolveBackend, tensorsIn } from "./args.ts";
import { BAD_CALLS } from "./bad-inputs.ts";
import { CASES, type OpCase } from "./cases.ts";
import {
  DEFAULT_TOLERANCES,
  type Judgement,
  mm,
  OP_TOLERANCE_FACTOR,
  orthogonalityError,
  relativeError,
  type Tolerances,
  transpose,
  worst,
} from "./compare.ts";
import { makeRng } from "./random.ts";
import { VIEW_KINDS, type ViewKind, viewOf, viewOnDevice } from "./views.ts";

export interface ConformanceOptions {
  /** Ops to test (default: every op the backend has a kernel for and the testkit has cases for). */
  ops?: string[];
  /** Only these kernels of the backend. */
  kernels?: string[];
  /** Dtypes to test (default: the float dtypes each kernel declares). */
  dtypes?: DType[];
  /** Worst relative error allowed per dtype, for every op or per op: { float32: 1e-4 } or { matmul: { float32: 1e-4 } }. */
  tolerances?: Tolerances | Record<string, Tolerances>;
  /** Seed of the random inputs (default 1234). */
  seed?: number;
  /** Also check that bad inputs throw typed errors (default true). */
  badInputs?: boolean;
  /**
   * Also run each op's typical cases with every tensor argument as an offset, transposed,
   * expanded (stride 0) and overlapping view (default true).
   */
  views?: boolean;
}

export type CaseStatus = "pass" | "fail" | "refused" | "skipped";

export interface CaseResult {
  op: string;
  kernel: string;
  /** Backend of the kernel that ran. */
  backend?: string;
  dtype: DType | "-";
  case: string;
  status: CaseStatus;
  /** Worst relative error and where, for judged cases. */
  error?: number;
  tolerance?: number;
  where?: string;
  /** Why it failed, was refused or skipped. */
  message?: string;
  /** Wall time of the call, including reading the output back. */
  ms?: number;
}

export interface ConformanceReport {
  backend: string;
  results: CaseResult[];
  passed: number;
  failed: CaseResult[];
  /** One line per failure: op, kernel, dtype, case, worst error. */
  toString(): string;
  /** Throws an Error listing every failure. */
  assertPassed(): void;
}

/** Outputs as named float64 arrays, read back from any device. */
async function outputs(
  x: unknown,
): Promise<Map<string, { data: Float64Array; shape: readonly number[] }>> {
  const m = new Map<string, { data: Float64Array; shape: readonly number[] }>();
  const add = async (name: string, t: Tensor) => {
    const host = t.storage.memory.hostView ? t : await t.toAsync("cpu");
    m.set(name, { data: host.toFloat64(), shape: t.shape });
    if (host !== t) host.dispose();
  };
  if (x instanceof Tensor) await add("out", x);
  else for (const [k, v] of Object.entries(x as Record<string, Tensor>).sort()) await add(k, v);
  return m;
}

function toleranceFor(opts: ConformanceOptions, op: string, dtype: DType): number {
  const t = opts.tolerances as Record<string, unknown> | undefined;
  const perOp = t?.[op] as Tolerances | undefined;
  const given = perOp?.[dtype] ?? (t?.[dtype] as number | undefined);
  if (given !== undefined) return given;
  const base = (DEFAULT_TOLERANCES as Tolerances)[dtype] ?? 1e-6;
  // float64 kernels of other libraries differ from the reference only by rounding; keep them tight.
  return dtype === "float64" ? base : base * (OP_TOLERANCE_FACTOR[op] ?? 1);
}

/** Judges decompositions by their defining identities, not by sign-ambiguous factors. */
function judgeDecomposition(
  kind: "qr" | "eigh" | "svd",
  a: Float64Array,
  aShape: readonly number[],
  out: Map<string, { data: Float64Array; shape: readonly number[] }>,
  ref: Map<string, { data: Float64Array }>,
): Judgement {
  const m = aShape[aShape.length - 2];
  const n = aShape[aShape.length - 1];
  const batch = a.length / (m * n || 1);
  const parts: Judgement[] = [];
  for (let b = 0; b < batch; b++) {
    const A = a.subarray(b * m * n, (b + 1) * m * n);
    if (kind === "qr") {
      const Q = out.get("Q")!;
      const R = out.get("R")!;
      const qc = Q.shape[Q.shape.length - 1];
      const q = Q.data.subarray(b * m * qc, (b + 1) * m * qc);
      const r = R.data.subarray(b * qc * n, (b + 1) * qc * n);
      parts.push(relativeError(mm(q, r, m, qc, n), A, `Q R (batch ${b})`));
      parts.push({ error: orthogonalityError(q, m, qc), where: `Q^T Q - I (batch ${b})` });
      let lower = 0;
      for (let i = 0; i < qc; i++)
        for (let j = 0; j < Math.min(i, n); j++) lower = Math.max(lower, Math.abs(r[i * n + j]));
      parts.push({ error: lower, where: `R below the diagonal (batch ${b})` });
    } else if (kind === "eigh") {
      const w = out.get("eigenvalues")!.data.subarray(b * n, (b + 1) * n);
      const v = out.get("eigenvectors")!.data.subarray(b * n * n, (b + 1) * n * n);
      parts.push(
        relativeError(
          w,
          ref.get("eigenvalues")!.data.subarray(b * n, (b + 1) * n),
          `eigenvalues (batch ${b})`,
        ),
      );
      const av = mm(A, v, n, n, n);
      const vw = new Float64Array(n * n);
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) vw[i * n + j] = v[i * n + j] * w[j];
      parts.push(relativeError(av, vw, `A V - V diag(w) (batch ${b})`));
      parts.push({ error: orthogonalityError(v, n, n), where: `V^T V - I (batch ${b})` });
    } else {
      const k = Math.min(m, n);
      const U = out.get("U")!;
      const Vh = out.get("Vh")!;
      const uc = U.shape[U.shape.length - 1];
      const vr = Vh.shape[Vh.shape.length - 2];
      const u = U.data.subarray(b * m * uc, (b + 1) * m * uc);
      const s = out.get("S")!.data.subarray(b * k, (b + 1) * k);
      const vh = Vh.data.subarray(b * vr * n, (b + 1) * vr * n);
      parts.push(
        relativeError(s, ref.get("S")!.data.subarray(b * k, (b + 1) * k), `S (batch ${b})`),
      );
      const us = new Float64Array(m * k);
      for (let i = 0; i < m; i++) for (let j = 0; j < k; j++) us[i * k + j] = u[i * uc + j] * s[j];
      parts.push(relativeError(mm(us, vh.subarray(0, k * n), m, k, n), A, `U S Vh (batch ${b})`));
      parts.push({ error: orthogonalityError(u, m, uc), where: `U^T U - I (batch ${b})` });
      parts.push({
        error: orthogonalityError(transpose(vh, vr, n), n, vr),
        where: `Vh Vh^T - I (batch ${b})`,
      });
    }
  }
  return worst(...parts);
}

/** Fills every new allocation with NaN bytes (0xFF) until the returned function is called. */
function poison(): () => void {
  const prev = setAllocationHook((st) => {
    if (st.byteLength > 0) st.memory.upload(st.handle, 0, new Uint8Array(st.byteLength).fill(0xff));
  });
  return () => setAllocationHook(prev);
}

export interface RunCaseOptions extends ConformanceOptions {
  /** Force this kernel (by priority); omitted: whatever the dispatcher picks. */
  kernel?: string;
  /** Backend of the forced kernel (dropout cases are compared only on the reference). */
  backend?: string;
  /** Device the inputs are moved to (default "cpu"). */
  device?: string;
  /** Pass every tensor argument as this kind of view (views.ts). */
  view?: ViewKind;
}

/** The arguments with their tensors as `view`s (added to `owned`), or undefined (all disposed) when none takes one. */
function asViews(
  op: string,
  made: unknown[],
  view: ViewKind,
  owned: Tensor[],
): unknown[] | undefined {
  const args = mapTensors(made, (t) => viewOf(op, t, view) ?? t);
  const views = tensorsIn(args).filter((t) => !owned.includes(t));
  if (views.length === 0) {
    for (const t of owned) t.dispose();
    return undefined;
  }
  owned.push(...views);
  return args;
}

const article = (view: ViewKind) => `${view === "transposed" ? "a" : "an"} ${view}`;

/**
 * The op's float64 reference result: the first of the core's kernels that takes the params
 * (an op may have several, as multiHeadAttention's fast path takes self-attention only).
 */
function referenceRun(rec: NonNullable<ReturnType<typeof getOp>>, p: OpParams): unknown {
  const k = rec.kernels.find(
    (x) => x.backend === "reference" && (x.supports?.(p) ?? true) === true,
  );
  if (!k) throw new Error(`no reference kernel of ${rec.name} takes these params`);
  return k.run(p);
}

/**
 * Runs one case of an op and judges it against the float64 reference, on the kernel
 * given or on the one the dispatcher picks. The result names the kernel that ran and its time.
 */
export async function runCase(
  op: string,
  c: OpCase,
  dtype: DType,
  opts: RunCaseOptions = {},
): Promise<CaseResult> {
  const device = opts.device ?? "cpu";
  const forced = opts.kernel;
  const caseName = opts.view ? `${c.name} (${opts.view} view)` : c.name;
  const base: CaseResult = { op, kernel: forced ?? "-", dtype, case: caseName, status: "pass" };
  if (c.sameRngOnly && forced && opts.backend !== "reference") {
    return { ...base, status: "skipped", message: "draws random numbers its own way" };
  }
  const rec = getOp(op)!;
  const made = c.make(dtype, makeRng((opts.seed ?? 1234) ^ hash(`${op}/${c.name}/${dtype}`)));
  const owned: Tensor[] = tensorsIn(made);
  const view = opts.view;
  const args = view ? asViews(op, made, view, owned) : made;
  if (!args)
    return { ...base, status: "skipped", message: `no argument takes ${article(view!)} view` };
  const forcing = <R>(fn: () => R): R => (forced ? withKernelPriority(op, [forced], fn) : fn());
  try {
    const args64 = mapTensors(args, (t) => (isFloat(t.dtype) ? t.astype("float64") : t));
    owned.push(...tensorsIn(args64));
    const ref = referenceRun(rec, rec.prepare(...args64));
    owned.push(...tensorsIn(ref));
    const devArgs =
      device === "cpu"
        ? args
        : mapTensors(args, (t) => (view ? viewOnDevice(t, device) : t.to(device)));
    if (devArgs !== args) owned.push(...tensorsIn(devArgs));
    const why = forcing(() => explain(op, ...devArgs));
    if (forced && why.selected !== forced) {
      const mine = why.candidates.find((x) => x.kernel === forced);
      return { ...base, status: "refused", message: mine?.reason ?? "not a candidate" };
    }
    base.kernel = why.selected ?? "-";
    base.backend = why.candidates.find((x) => x.kernel === why.selected)?.backend;
    const inputs = tensorsIn(devArgs);
    const before = await Promise.all(inputs.map(storageBytes));
    const t0 = performance.now();
    const out = forcing(() => dispatch(rec, rec.prepare(...devArgs)));
    owned.push(...tensorsIn(out));
    const got = await outputs(out);
    base.ms = performance.now() - t0;
    const leaked = leakedPerCall(
      () => forcing(() => dispatch(rec, rec.prepare(...devArgs))),
      inputs,
    );
    // After all three calls: a write on a later (cached) path counts too.
    const ranKernel = rec.kernels.find((k) => k.name === base.kernel && k.backend === base.backend);
    const changed = ranKernel?.inPlace ? undefined : await firstChanged(inputs, before);
    if (changed !== undefined)
      return {
        ...base,
        status: "fail",
        message: `the kernel wrote into input ${changed} (its storage's bytes changed)`,
      };
    if (leaked > 0)
      return {
        ...base,
        status: "fail",
        message: `the kernel leaves ${leaked} tensor storage(s) alive per call (outputs disposed)`,
      };
    const want = await outputs(ref);
    return judge(base, c, args64[0] as Tensor, got, want, toleranceFor(opts, op, dtype));
  } catch (e) {
    return {
      ...base,
      status: "fail",
      message: `threw ${(e as Error).name}: ${(e as Error).message}`,
    };
  } finally {
    for (const t of owned) t.dispose();
  }
}

/** Compares a case's outputs with the reference's (elementwise, or by a decomposition check). */
function judge(
  base: CaseResult,
  c: OpCase,
  first64: Tensor,
  got: Awaited<ReturnType<typeof outputs>>,
  want: Awaited<ReturnType<typeof outputs>>,
  tolerance: number,
): CaseResult {
  let j: Judgement;
  if (c.check && c.check !== "elementwise") {
    j = judgeDecomposition(c.check, first64.toFloat64(), first64.shape, got, want);
  } else {
    const shapes = [...want].filter(([k, v]) => got.get(k)?.shape.join() !== v.shape.join());
    if (shapes.length > 0) {
      const [k, v] = shapes[0]!;
      return {
        ...base,
        status: "fail",
        message: `${k} has shape [${got.get(k)?.shape}], expected [${v.shape}]`,
      };
    }
    j = worst(...[...want].map(([k, v]) => relativeError(got.get(k)!.data, v.data, k)));
  }
  return {
    ...base,
    status: j.error <= tolerance ? "pass" : "fail",
    error: j.error,
    tolerance,
    where: j.where,
  };
}

/**
 * Storages a call leaves alive once its outputs are disposed, summed over every device: the
 * second of two further calls is counted, so caches a first call fills are not a leak. An
 * output on an input's storage (an in-place kernel's) is left alone.
 */
function leakedPerCall(call: () => unknown, inputs: Tensor[]): number {
  const live = () => Object.values(memoryStats()).reduce((n, s) => n + s.liveBuffers, 0);
  const theirs = new Set(inputs.map((t) => t.storage));
  const once = () => {
    for (const t of tensorsIn([call()])) if (!theirs.has(t.storage)) t.dispose();
  };
  once();
  const before = live();
  once();
  return live() - before;
}

/** Every byte of the storage a tensor views (a kernel may write outside the view, too). */
async function storageBytes(t: Tensor): Promise<Uint8Array> {
  const st = t.storage;
  return (await st.memory.download(st.handle, 0, st.byteLength)).slice();
}

/** The index of the first input whose storage no longer holds the bytes it held. */
async function firstChanged(inputs: Tensor[], before: Uint8Array[]): Promise<number | undefined> {
  for (let i = 0; i < inputs.length; i++) {
    const now = await storageBytes(inputs[i]!);
    const was = before[i]!;
    if (now.length !== was.length || now.some((b, j) => b !== was[j])) return i;
  }
  return undefined;
}

function runBadCalls(op: string, device: string, dtype: DType, seed: number): CaseResult[] {
  const rec = getOp(op)!;
  return BAD_CALLS.filter((b) => b.op === op).map((b) => {
    const base: CaseResult = {
      op,
      kernel: "-",
      dtype,
      case: `bad input: ${b.name}`,
      status: "pass",
    };
    const args = b.make(dtype, makeRng(seed ^ hash(b.name)));
    const devArgs =
      device === "cpu" ? args : mapTensors(args, (t) => (t.disposed ? t : t.to(device)));
    try {
      dispatch(rec, rec.prepare(...devArgs));
      return { ...base, status: "fail", message: `expected ${b.expect}, nothing was thrown` };
    } catch (e) {
      if (!(e instanceof BackplaneError))
        return {
          ...base,
          status: "fail",
          message: `expected ${b.expect}, got untyped ${(e as Error)?.name}: ${(e as Error)?.message}`,
        };
      if (e.name !== b.expect)
        return {
          ...base,
          status: "fail",
          message: `expected ${b.expect}, got ${e.name}: ${e.message}`,
        };
      return base;
    } finally {
      for (const t of [...tensorsIn(args), ...tensorsIn(devArgs)]) t.dispose();
    }
  });
}

/** Each op's typical cases (and batched ones, for stride 0 on matrix ops) with view arguments. */
async function viewResults(
  k: { op: string; name: string; device: string },
  dtypes: DType[],
  backendName: string,
  opts: ConformanceOptions,
): Promise<CaseResult[]> {
  const out: CaseResult[] = [];
  const dtype = dtypes.includes("float32") ? "float32" : dtypes[0];
  if (!dtype) return out;
  const typical = CASES[k.op].filter((c) => c.typical);
  // Matrix ops take stride 0 only along a batch dim: their batched cases too.
  const batched = CASES[k.op].filter((c) => !c.typical && /^batch/.test(c.name));
  for (const c of [...(typical.length ? typical : CASES[k.op].slice(0, 1)), ...batched])
    for (const view of VIEW_KINDS)
      if (view === "expanded" || !batched.includes(c))
        out.push(
          await runCase(k.op, c, dtype, {
            ...opts,
            kernel: k.name,
            backend: backendName,
            device: k.device,
            view,
          }),
        );
  return out;
}

/** Runs the conformance suite for one registered backend. */
export async function runConformance(
  backendName: string,
  opts: ConformanceOptions = {},
): Promise<ConformanceReport> {
  // The backend's name, or its package's (what the docs' examples and users reach for).
  checkOptions("runConformance", opts);
  const b = resolveBackend("runConformance", backendName);
  backendName = b.def.name;
  checkFilters("runConformance", backendName, b.def.kernels ?? [], opts);
  // Every result is checked against its op's promise while the suite runs (shape, dtype,
  // device, not an input): a kernel breaking it fails with a KernelContractError.
  const checking = getFlag("core.checkKernels");
  setFlag("core.checkKernels", true);
  try {
    return await conformanceOf(backendName, b, opts);
  } finally {
    setFlag("core.checkKernels", checking);
  }
}

async function conformanceOf(
  backendName: string,
  b: NonNullable<ReturnType<typeof getBackend>>,
  opts: ConformanceOptions,
): Promise<ConformanceReport> {
  const kernels = (b.def.kernels ?? []).filter(
    (k) =>
      CASES[k.op] &&
      (!opts.ops || opts.ops.includes(k.op)) &&
      (!opts.kernels || opts.kernels.includes(k.name)),
  );
  const results: CaseResult[] = [];
  const devices = new Set<string>();
  for (const k of kernels) {
    const dtypes = (opts.dtypes ?? ["float64", "float32", "float16", "bfloat16"]).filter(
      (d) => k.dtypes.includes(d) && isFloat(d),
    );
    devices.add(k.device);
    const restore = poison();
    try {
      for (const dtype of dtypes) {
        for (const c of CASES[k.op])
          results.push(
            await runCase(k.op, c, dtype, {
              ...opts,
              kernel: k.name,
              backend: backendName,
              device: k.device,
            }),
          );
      }
      if (opts.views !== false) results.push(...(await viewResults(k, dtypes, backendName, opts)));
    } finally {
      restore();
    }
  }
  if (opts.badInputs !== false) {
    const ops = [...new Set(kernels.map((k) => k.op))];
    for (const op of ops) {
      const k = kernels.find((x) => x.op === op)!;
      const dtype = k.dtypes.includes("float32") ? "float32" : k.dtypes[0];
      results.push(...runBadCalls(op, k.device, dtype, opts.seed ?? 1234));
    }
  }
  const failed = results.filter((r) => r.status === "fail");
  const describe = (r: CaseResult) =>
    `${r.op} [${r.kernel}, ${r.dtype}] ${r.case}: ${r.message ?? `worst relative error ${r.error?.toExponential(2)} at ${r.where} > tolerance ${r.tolerance?.toExponential(1)}`}`;
  return {
    backend: backendName,
    results,
    passed: results.filter((r) => r.status === "pass").length,
    failed,
    toString: () => {
      const count = (st: CaseStatus) => results.filter((r) => r.status === st).length;
      const head = `${backendName}: ${count("pass")} pass, ${count("refused")} refused by supports(), ${count("skipped")} skipped, ${failed.length} fail`;
      return failed.length
        ? `${head}\n${failed.map((r) => `  FAIL ${describe(r)}`).join("\n")}`
        : head;
    },
    assertPassed() {
      if (failed.length > 0)
        throw new Error(
          `conformance of ${backendName} failed:\n${failed.map(describe).join("\n")}`,
        );
    },
  };
}
