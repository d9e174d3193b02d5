/**
 * Every error Backplane throws on purpose is a BackplaneError with a stable `code`,
 * so callers can branch on it without parsing messages.
 */
export class BackplaneError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
    this.name = new.target.name;
  }
}

/** An argument had the wrong shape, rank or size. */
export class ShapeError extends BackplaneError {
  constructor(message: string) {
    super("E_SHAPE", message);
  }
}

/** An argument had an unsupported or mismatched dtype. */
export class DTypeError extends BackplaneError {
  constructor(message: string) {
    super("E_DTYPE", message);
  }
}

/** Tensors on different devices, or a device nobody provides. */
export class DeviceError extends BackplaneError {
  constructor(message: string) {
    super("E_DEVICE", message);
  }
}

/** A tensor was used after dispose(). */
export class DisposedError extends BackplaneError {
  constructor(message: string) {
    super("E_DISPOSED", message);
  }
}

/** A flag was unknown or given a value outside its schema. */
export class FlagError extends BackplaneError {
  constructor(message: string) {
    super("E_FLAG", message);
  }
}

/**
 * A name a namespace does not have, read or written (`backends.cudnn.benchmrk`), or an
 * assignment over one of its functions. Carries the closest known name when there is one.
 */
export class UnknownFlagError extends FlagError {
  readonly namespace: string;
  readonly flag: string;
  readonly suggestion: string | undefined;
  constructor(namespace: string, flag: string, message: string, suggestion?: string) {
    super(message);
    this.namespace = namespace;
    this.flag = flag;
    this.suggestion = suggestion;
  }
}

/** Any other argument that is out of range or of the wrong type. */
export class ArgumentError extends BackplaneError {
  constructor(message: string) {
    super("E_ARGUMENT", message);
  }
}

/** Backend registration rules were broken (duplicate name, conflicting kernel). */
export class RegistrationError extends BackplaneError {
  constructor(message: string) {
    super("E_REGISTRATION", message);
  }
}

/** `backends.<name>` for a namespace nobody defined. */
export class UnknownNamespaceError extends BackplaneError {
  constructor(message: string) {
    super("E_UNKNOWN_NAMESPACE", message);
  }
}

/** A numerical routine met a matrix it cannot handle (singular, not positive definite...). */
export class LinalgError extends BackplaneError {
  readonly op: string;
  /** LAPACK-style position (1-based) where the failure was detected, when known. */
  readonly position: number | undefined;
  constructor(op: string, message: string, position?: number) {
    super("E_LINALG", `${op}: ${message}`);
    this.op = op;
    this.position = position;
  }
}

/** One candidate kernel and why the dispatcher did or did not take it. */
export interface CandidateReport {
  kernel: string;
  backend: string;
  accepted: boolean;
  reason: string;
  /** What calibration measured for this kernel at the size nearest the call (explain()). */
  measured?: { ms: number; case: string };
}

/** No kernel is left for an op: carries every candidate and why it refused. */
export class NoKernelError extends BackplaneError {
  readonly op: string;
  readonly candidates: CandidateReport[];
  constructor(op: string, candidates: CandidateReport[], hint = "") {
    const lines = candidates.map((c) => `  - ${c.kernel} (${c.backend}): ${c.reason}`);
    const body = lines.length > 0 ? lines.join("\n") : "  (no kernel is registered for this op)";
    super(
      "E_NO_KERNEL",
      `No kernel can run ${op} for these inputs. Candidates:\n${body}${hint ? `\n${hint}` : ""}`,
    );
    this.op = op;
    this.candidates = candidates;
  }
}

/** Deterministic mode is on and only nondeterministic kernels could run the op. */
export class NondeterministicError extends BackplaneError {
  constructor(op: string, kernel: string) {
    super(
      "E_NONDETERMINISTIC",
      `${op}: the only kernel that can run these inputs, ${kernel}, is nondeterministic, and ` +
        "useDeterministicAlgorithms(true) is on. Turn it off, pass { warnOnly: true } to get a " +
        "warning instead, or install a backend with a deterministic kernel for this op.",
    );
  }
}

/**
 * Strict mode is on and the kernel the user asked for (a priority list, sdpaKernel with
 * setPriority) could not run these inputs: instead of falling back silently, this error
 * says which kernel would have run instead and why each preferred one refused.
 */
export class FallbackError extends BackplaneError {
  readonly op: string;
  readonly candidates: CandidateReport[];
  readonly fallback: string;
  constructor(op: string, wanted: readonly string[], fallback: string, refused: CandidateReport[]) {
    const lines = refused.map((c) => `  - ${c.kernel} (${c.backend}): ${c.reason}`);
    super(
      "E_FALLBACK",
      `${op}: strict mode is on and none of the kernels you asked for (${wanted.join(", ")}) can run these inputs; ` +
        `${fallback} would have run instead. Refusals:\n${lines.join("\n") || "  (none of them is registered)"}\n` +
        "Turn strict off (backends.core.strict = false) to allow the fallback, or change the inputs.",
    );
    this.op = op;
    this.candidates = refused;
    this.fallback = fallback;
  }
}

/**
 * A kernel's run() threw something that is not a Backplane error: the message names the op,
 * the kernel and its backend, so a user knows whose code failed; `cause` keeps the original.
 */
export class KernelError extends BackplaneError {
  readonly op: string;
  readonly kernel: string;
  readonly backend: string;
  constructor(op: string, kernel: string, backend: string, cause: unknown) {
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(
      "E_KERNEL",
      `${op}: kernel ${kernel} of backend ${backend} failed: ${why} (a bug in that backend; report it to its package with this message)`,
    );
    this.op = op;
    this.kernel = kernel;
    this.backend = backend;
    (this as { cause?: unknown }).cause = cause;
  }
}

/**
 * A kernel returned something other than what its op promises (no result, the wrong shape,
 * dtype or device, or an input tensor itself): named with op, kernel and backend.
 */
export class KernelContractError extends BackplaneError {
  readonly op: string;
  readonly kernel: string;
  readonly backend: string;
  constructor(op: string, kernel: string, backend: string, problem: string) {
    super(
      "E_KERNEL_CONTRACT",
      `${op}: kernel ${kernel} of backend ${backend} ${problem} (a bug in that backend; report it to its package with this message)`,
    );
    this.op = op;
    this.kernel = kernel;
    this.backend = backend;
  }
}

/**
 * An optional native library (or koffi, Node's FFI module) that a backend would use is not
 * installed. Not a failure: the backend's kernels step aside, and the message says how to
 * add it. `detail` keeps the loader's own account (every path tried).
 */
export class NotInstalledError extends BackplaneError {
  constructor(
    readonly what: string,
    readonly fix: string,
    readonly detail?: string,
  ) {
    super("E_NOT_INSTALLED", `not installed (optional): ${what}; ${fix}`);
  }
}

/** A native library or symbol could not be loaded. */
export class FfiError extends BackplaneError {
  constructor(message: string) {
    super("E_FFI", message);
  }
}

/** The LinalgErrors every backend raises for the same failures, worded once. */
export const linalgFailure: {
  notPositiveDefinite(op: string, k: number): LinalgError;
  singular(op: string, k: number): LinalgError;
  didNotConverge(op: string, detail: string, k?: number): LinalgError;
} = {
  notPositiveDefinite: (op: string, k: number) =>
    new LinalgError(
      op,
      `the matrix is not positive definite (leading minor of order ${k} is not positive)`,
      k,
    ),
  singular: (op: string, k: number) =>
    new LinalgError(op, `the matrix is singular (U[${k},${k}] is exactly zero)`, k),
  didNotConverge: (op: string, detail: string, k?: number) =>
    new LinalgError(op, `did not converge (${detail})`, k),
};

/**
 * Two copies of @backplane/core of incompatible versions in one process (two packages
 * pinned different versions, and npm installed both): they cannot share one registry,
 * one set of flags and one Tensor class, so the second refuses to load.
 */
export class CoreConflictError extends BackplaneError {
  /** The copy that loaded first, and the one that refused. */
  readonly first: { version: string; path: string };
  readonly second: { version: string; path: string };
  constructor(first: { version: string; path: string }, second: { version: string; path: string }) {
    super(
      "E_CORE_CONFLICT",
      `two copies of @backplane/core in one process: ${first.version} at ${first.path} (loaded first) and ${second.version} at ${second.path}. Their versions cannot share one registry, flags and tensors; run \`npm dedupe\` (or align the versions your packages ask for) so one copy remains`,
    );
    this.first = first;
    this.second = second;
  }
}
