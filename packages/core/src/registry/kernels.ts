/**
 * The kernel table: one map from op name to its kernels, one config shape for every
 * kernel (after tfjs-core's kernel_registry). Ops are defined once, with the function
 * that validates their arguments into params.
 */

import { RegistrationError } from "../errors.ts";
import { FAMILY_FLAGS } from "../flags/builtin.ts";
import { DTYPES, type DType, isDType } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";
import { didYouMean } from "../util/suggest.ts";

export type MatmulPrecision = "highest" | "high" | "medium";

/** What every op's params carry, so the dispatcher can filter without knowing the op. */
export interface OpParams {
  /** Device type of the inputs: "cpu", "cuda", "webgpu"... */
  deviceType: string;
  dtype: DType;
}

/**
 * One kernel of an op. P is the op's params type and R its result type: define a kernel
 * through its op (`matmulOp.kernel({ name, ..., run })`) and both come from the op.
 */
export interface KernelDefinition<P extends OpParams = OpParams, R = unknown> {
  op: string;
  /** Implementation name, unique within the op, e.g. "reference", "openblas-sgemm", "wt8x8". */
  name: string;
  device: string;
  /** A group the user can prioritise by, e.g. SDPA's "FLASH_ATTENTION". */
  family?: string;
  dtypes: readonly DType[];
  /** Same inputs, same bits, every run. */
  deterministic: boolean;
  /** The kernel may return one of its inputs (written in place); checked results may not otherwise. */
  inPlace?: boolean;
  /** Boolean flags that must all be true for the kernel to be considered, e.g. ["nnpack.enabled"]. */
  flags?: readonly string[];
  /** Further flag-based conditions; return the reason when they refuse. */
  enabled?(flag: (key: string) => unknown): true | string;
  /** Loosest float32 matmul precision that allows this kernel ("high": TF32). Default "highest". */
  precision?: MatmulPrecision;
  /** Input-dependent check: true, or why the kernel refuses these inputs. */
  supports?(params: P): true | string;
  /** Higher runs first. The core's reference kernels have priority 0. */
  priority: number;
  /** Flags (besides core.verbose) that make the dispatcher trace this kernel, e.g. "mkl.verbose". */
  verboseFlags?: readonly string[];
  /** The op's result: a Tensor, or the record the op documents (decompositions). */
  run(params: P): R;
}

export interface Kernel<P extends OpParams = OpParams, R = unknown> extends KernelDefinition<P, R> {
  readonly backend: string;
}

export interface OpDefinition<P extends OpParams, A extends unknown[]> {
  name: string;
  /** Validates user arguments into params; throws typed errors. */
  prepare(...args: A): P;
  /** A string naming the input sizes, for the ranker's per-shape orders and verbose lines. */
  shapeKey(params: P): string;
  /**
   * The work of a call (floating-point operations), for ops whose kernels are ranked by
   * measurement: a call runs the order measured at the nearest size.
   */
  work?(params: P): number;
  /**
   * Rank the CPU backends per input shape, measured at a shape's first call (conv2d:
   * layers of one size favour different backends), instead of per size class.
   */
  rankPerShape?: boolean;
  /**
   * What a kernel must return for these params: one tensor's shape and dtype, or a named
   * set of them (decompositions). Checked under core.checkKernels / core.strict.
   */
  result?(params: P): ResultSpec | Record<string, ResultSpec>;
}

export interface ResultSpec {
  shape: readonly number[];
  dtype: DType;
}

/** A kernel of any op, in lists that mix ops (its params type is the op's, erased here). */
export type AnyKernelDefinition = KernelDefinition<never>;

export interface OpRecord<
  P extends OpParams = OpParams,
  A extends unknown[] = unknown[],
  R = unknown,
> extends OpDefinition<P, A> {
  kernels: Kernel<P, R>[];
  /**
   * A kernel of this op, its params and result typed by the op (`op` filled in): a
   * kernel whose run() takes other params or returns another type does not compile.
   */
  kernel(def: Omit<KernelDefinition<P, R>, "op">): KernelDefinition<P, R>;
  /** Dispatcher caches, owned by dispatcher.ts. */
  cache: WeakMap<object, unknown>;
  cacheGeneration: number;
}

/**
 * Whether `k` takes these params: true, or its reason; a supports() that throws is a refusal
 * with the message (explain(), the ranking and error hints must not fail on a kernel's bug).
 */
export function kernelAccepts(k: Kernel, params: OpParams): true | string {
  try {
    return k.supports ? answerOf("supports", k.supports(params)) : true;
  } catch (err) {
    return `supports() threw: ${(err as Error)?.message ?? String(err)}`;
  }
}

/** A check's answer as `true | reason`: anything else (false, undefined) refuses, said so. */
export function answerOf(check: string, r: unknown): true | string {
  if (r === true || (typeof r === "string" && r !== "")) return r;
  return `${check}() returned ${show(r)} instead of true or a reason`;
}

const ops = new Map<string, OpRecord>();

/** Ops given a definition (defineOp): the only ones kernels may be registered for. */
const defined = new Set<string>();

/**
 * Defines an op. Its result type R is a Tensor unless the op says otherwise (the
 * decompositions' records, the quantized ops' QTensor): annotate the handle, e.g.
 * `const qrOp: OpRecord<LinalgParams, [a: Tensor], { Q: Tensor; R: Tensor }> = defineOp(...)`.
 */
export function defineOp<P extends OpParams, A extends unknown[], R = Tensor>(
  def: OpDefinition<P, A>,
): OpRecord<P, A, R> {
  const existing = ops.get(def.name);
  if (existing) {
    // Defined again (a module evaluated twice): the newer definition wins, kernels stay.
    Object.assign(existing, {
      prepare: def.prepare,
      shapeKey: def.shapeKey,
      work: def.work,
      rankPerShape: def.rankPerShape,
      result: def.result,
    });
    defined.add(def.name);
    return existing as OpRecord<P, A, R>;
  }
  const rec: OpRecord<P, A, R> = {
    ...def,
    kernels: [],
    cache: new WeakMap(),
    cacheGeneration: -1,
    kernel: (k) => ({ ...k, op: def.name }),
  };
  ops.set(def.name, rec);
  defined.add(def.name);
  return rec;
}

export function getOp(name: string): OpRecord | undefined {
  return ops.get(name);
}

export function opNames(): string[] {
  return [...ops.keys()];
}

function checkKernel(backend: string, devices: readonly string[], k: AnyKernelDefinition): void {
  const where = `backend ${backend}, kernel ${show(k?.name)} for op ${show(k?.op)}`;
  if (!k || typeof k !== "object")
    throw new RegistrationError(`${where}: a kernel must be an object`);
  if (typeof k.op !== "string" || typeof k.name !== "string" || k.name === "") {
    throw new RegistrationError(`${where}: op and name are required strings`);
  }
  if (typeof k.run !== "function") throw new RegistrationError(`${where}: run() is required`);
  if (!devices.includes(k.device)) {
    throw new RegistrationError(
      `${where}: device ${k.device} is not among the backend's devices (${devices.join(", ")})`,
    );
  }
  if (!Array.isArray(k.dtypes) || k.dtypes.length === 0)
    throw new RegistrationError(`${where}: dtypes must be a non-empty list`);
  // A misspelt dtype ("flaot32") would leave the kernel refusing every input.
  for (const d of k.dtypes) {
    if (isDType(d)) continue;
    const guess = typeof d === "string" ? didYouMean(d, DTYPES) : undefined;
    throw new RegistrationError(
      `${where}: dtypes has ${show(d)}, not a dtype${guess ? `; did you mean ${guess}?` : ""} (dtypes: ${DTYPES.join(", ")})`,
    );
  }
  if (typeof k.priority !== "number" || Number.isNaN(k.priority))
    throw new RegistrationError(`${where}: priority must be a number`);
  if (typeof k.deterministic !== "boolean")
    throw new RegistrationError(`${where}: deterministic must be true or false`);
  checkOptionalFields(where, k);
}

const PRECISIONS: readonly string[] = ["highest", "high", "medium"];

/**
 * The optional fields have their documented types: a supports or enabled that is not a
 * function would throw on every call of the op, and a misspelt precision ("hgh") would
 * let a TF32 kernel run under "highest".
 */
function checkOptionalFields(where: string, k: AnyKernelDefinition): void {
  const fail = (field: string, want: string, got: unknown) =>
    new RegistrationError(`${where}: ${field} must be ${want}, got ${show(got)}`);
  for (const fn of ["supports", "enabled"] as const)
    if (k[fn] !== undefined && typeof k[fn] !== "function")
      throw fail(fn, "a function (or left out)", k[fn]);
  if (k.precision !== undefined && !PRECISIONS.includes(k.precision))
    throw fail("precision", `one of ${PRECISIONS.map((p) => `"${p}"`).join(", ")}`, k.precision);
  if (k.family !== undefined && (typeof k.family !== "string" || k.family === ""))
    throw fail("family", "a non-empty string", k.family);
  if (k.inPlace !== undefined && typeof k.inPlace !== "boolean")
    throw fail("inPlace", "true or false", k.inPlace);
  const vf = k.verboseFlags;
  if (vf !== undefined && !(Array.isArray(vf) && vf.every((f) => typeof f === "string")))
    throw fail("verboseFlags", 'a list of flag keys like ["mkl.verbose"]', vf);
}

/**
 * A kernel's flags with its family's switch (FAMILY_FLAGS) among them: the switch gates every
 * kernel of the family, also one whose author did not list it.
 */
function withFamilySwitch(k: AnyKernelDefinition): readonly string[] | undefined {
  const gate = Object.hasOwn(FAMILY_FLAGS, k.op) ? FAMILY_FLAGS[k.op] : undefined;
  if (gate === undefined) return k.flags;
  const listed = k.family !== undefined && Object.hasOwn(gate.families, k.family);
  const flag = listed ? gate.families[k.family as string] : gate.other;
  return k.flags?.includes(flag) ? k.flags : [...(k.flags ?? []), flag];
}

/**
 * Adds a backend's kernels as registerBackend does, before the backend is recorded (it has
 * checked the kernels' flags against its own schema too); all are checked first, so a bad
 * list adds nothing.
 */
export function addBackendKernels(
  backend: string,
  devices: readonly string[],
  list: readonly AnyKernelDefinition[],
): void {
  if (!Array.isArray(devices) || !devices.every((d) => typeof d === "string"))
    throw new RegistrationError(
      `backend ${backend}: devices must be a list of device types like ["cpu"], got ${show(devices)}`,
    );
  if (!Array.isArray(list))
    throw new RegistrationError(
      `backend ${backend}: kernels must be a list of kernel definitions, got ${show(list)}`,
    );
  const seen = new Set<string>();
  for (const k of list) {
    checkKernel(backend, devices, k);
    // A misspelt op would otherwise register a kernel nothing ever calls.
    if (!defined.has(k.op)) {
      const guess = didYouMean(k.op, defined);
      throw new RegistrationError(
        `backend ${backend}, kernel ${show(k.name)}: there is no op ${show(k.op)}${guess ? `; did you mean ${guess}?` : ""} (a new op is defined with defineOp() before its kernels are registered)`,
      );
    }
    const key = `${k.op}/${k.name}`;
    const clash = ops.get(k.op)?.kernels.find((x) => x.name === k.name);
    if (clash || seen.has(key)) {
      throw new RegistrationError(
        `kernel ${show(k.name)} for op ${k.op} is registered twice (by ${clash?.backend ?? backend} and ${backend}); kernel names are unique per op`,
      );
    }
    seen.add(key);
  }
  for (const k of list) {
    const rec = ops.get(k.op) as OpRecord; // defined: checked above
    rec.kernels.push({ ...k, backend, flags: withFamilySwitch(k) });
    rec.kernels.sort((a, b) => b.priority - a.priority);
  }
}
