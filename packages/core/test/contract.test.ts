/**
 * The registry's and the flags' contract with backend authors and users: malformed kernel
 * definitions are refused at registration (nothing recorded), a kernel's buggy enabled()
 * or supports() refuses that kernel only, a refused flag change leaves nothing behind,
 * a result that breaks the op's contract is freed, and environment values parse strictly.
 */
import {
  ArgumentError,
  areDeterministicAlgorithmsEnabled,
  backends,
  empty,
  explain,
  FlagError,
  flagSpec,
  getFlag,
  getFloat32MatmulPrecision,
  isDeterministicAlgorithmsWarnOnlyEnabled,
  KernelContractError,
  kernelPriority,
  memoryStats,
  onFlagChange,
  RegistrationError,
  type Tensor,
  tensor,
  useDeterministicAlgorithms,
  withKernelPriority,
} from "@backplane/core";
import {
  type AnyKernelDefinition,
  defineOp,
  dispatch,
  type OpParams,
  registerBackend,
} from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { parseEnv } from "../src/flags/spec.ts";

interface P extends OpParams {
  x: Tensor;
}
const op = defineOp({
  name: "contractTest",
  prepare: (x: Tensor): P => ({ x, deviceType: x.deviceType, dtype: x.dtype }),
  shapeKey: (p: P) => p.x.shape.join("x"),
  result: (p: P) => ({ shape: [...p.x.shape], dtype: p.x.dtype }),
});
const kernel = (name: string, extra: Record<string, unknown> = {}) =>
  ({
    op: "contractTest",
    name,
    device: "cpu",
    dtypes: ["float32"],
    deterministic: true,
    priority: 0,
    run: (p: P) => empty([...p.x.shape], { dtype: p.x.dtype }),
    ...extra,
  }) as unknown as AnyKernelDefinition;
let serial = 0;
const backend = (kernels: AnyKernelDefinition[], extra: Record<string, unknown> = {}) => ({
  name: `contract-${serial++}`,
  devices: ["cpu"],
  isAvailable: () => ({ available: true }),
  kernels,
  ...extra,
});
const x = () => tensor([0.5, -1.25, 3], { dtype: "float32" });
const ran = (t: Tensor): string[] =>
  backends.record(() => dispatch(op, op.prepare(t))).calls.map((c) => c.kernel);

describe("registration refuses malformed definitions, recording nothing", () => {
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ["supports not a function", { supports: "yes" }, /supports must be a function/],
    ["enabled not a function", { enabled: 42 }, /enabled must be a function/],
    [
      "a misspelt precision",
      { precision: "hgh" },
      /precision must be one of "highest", "high", "medium"/,
    ],
    ["family not a string", { family: 3 }, /family must be a non-empty string/],
    ["inPlace not a boolean", { inPlace: "yes" }, /inPlace must be true or false/],
    ["verboseFlags not a list", { verboseFlags: "mkl.verbose" }, /verboseFlags must be a list/],
    [
      "a kernel flag that is not boolean",
      { flags: ["cudnn.benchmarkLimit"] },
      /cudnn\.benchmarkLimit is an int flag/,
    ],
  ];
  for (const [what, extra, message] of bad) {
    it(what, () => {
      const def = backend([kernel(`bad-${serial}`, extra)]);
      expect(() => registerBackend(def)).toThrow(RegistrationError);
      expect(() => registerBackend(def)).toThrow(message);
      expect(backends.registered()).not.toContain(def.name);
      expect(op.kernels.map((k) => k.name)).not.toContain(`bad-${serial - 1}`);
    });
  }

  it("a backend hook that is not a function, and a version() that throws on re-registration", () => {
    expect(() => registerBackend(backend([], { init: 5 }))).toThrow(/init must be a function/);
    const name = `contract-v${serial++}`;
    const throwing = () => {
      throw new Error("no version file");
    };
    registerBackend({
      name,
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      version: throwing,
    });
    expect(() =>
      registerBackend({ name, devices: ["cpu"], isAvailable: () => ({ available: true }) }),
    ).toThrow(RegistrationError);
  });

  it("a memory for a device the backend lacks, or one that would replace a device's memory", () => {
    const memory = (deviceType: string) => ({ deviceType }) as never;
    expect(() => registerBackend(backend([], { memories: [memory("gpu9")] }))).toThrow(
      /not among its devices/,
    );
    const before = memoryStats("cpu").totalAllocations;
    expect(() => registerBackend(backend([], { memories: [memory("cpu")] }))).toThrow(
      /already has a memory/,
    );
    empty([4], { dtype: "float32" }).dispose(); // still allocated from the CPU's own memory
    expect(memoryStats("cpu").totalAllocations).toBe(before + 1);
  });
});

describe("a kernel's own bug refuses that kernel, not the op", () => {
  registerBackend(
    backend([
      kernel("enabledThrows", {
        priority: 30,
        enabled: () => {
          throw new Error("boom");
        },
      }),
      kernel("supportsFalse", { priority: 20, supports: () => false }),
      kernel("supportsNothing", { priority: 10, supports: () => undefined }),
      kernel("plain"),
      kernel("wrongShape", { priority: -10, run: () => empty([7], { dtype: "float32" }) }),
    ]),
  );

  it("dispatch runs the next kernel; explain() names each refusal as a reason", () => {
    expect(ran(x())).toEqual(["plain"]);
    const e = explain("contractTest", x());
    expect(e.selected).toBe("plain");
    const why = Object.fromEntries(e.candidates.map((c) => [c.kernel, c.reason]));
    expect(why.enabledThrows).toBe("enabled() threw: boom");
    expect(why.supportsFalse).toBe("supports() returned false instead of true or a reason");
    expect(why.supportsNothing).toBe("supports() returned undefined instead of true or a reason");
  });

  it("a result that breaks the op's contract is freed before the error", () => {
    using _c = backends.flags({ core: { checkKernels: true } });
    using _p = kernelPriority("contractTest", ["wrongShape"]);
    const input = x();
    const before = memoryStats("cpu").liveBuffers;
    for (let i = 0; i < 3; i++)
      expect(() => dispatch(op, op.prepare(input))).toThrow(KernelContractError);
    expect(memoryStats("cpu").liveBuffers).toBe(before);
    expect(input.disposed).toBe(false);
  });
});

describe("explain() under deterministic warnOnly matches what runs", () => {
  const det = defineOp({
    name: "contractDet",
    prepare: (x: Tensor): P => ({ x, deviceType: x.deviceType, dtype: x.dtype }),
    shapeKey: (p: P) => p.x.shape.join("x"),
  });
  const k = (name: string, extra: Record<string, unknown>) =>
    ({ ...(kernel(name, extra) as object), op: "contractDet" }) as unknown as AnyKernelDefinition;
  registerBackend(
    backend([
      k("racyA", { priority: 20, deterministic: false }),
      k("racyB", { priority: 10, deterministic: false }),
      k("steady", { priority: 0, supports: (p: P) => (p.x.numel < 3 ? true : "small only") }),
    ]),
  );

  it("only the held-back kernel that runs is said to run", () => {
    useDeterministicAlgorithms(true, { warnOnly: true });
    try {
      const reasons = (t: Tensor) =>
        Object.fromEntries(explain("contractDet", t).candidates.map((c) => [c.kernel, c.reason]));
      // A deterministic kernel accepts: no nondeterministic one runs.
      const small = tensor([1, 2], { dtype: "float32" });
      expect(backends.record(() => dispatch(det, det.prepare(small))).calls[0].kernel).toBe(
        "steady",
      );
      expect(reasons(small).racyA).toBe("nondeterministic; steady comes first (warnOnly)");
      // None does: the first held-back kernel runs, the second is passed over.
      const big = x();
      expect(backends.record(() => dispatch(det, det.prepare(big))).calls[0].kernel).toBe("racyA");
      expect(reasons(big).racyA).toBe("nondeterministic; runs with a warning (warnOnly)");
      expect(reasons(big).racyB).toBe("nondeterministic; racyA comes first (warnOnly)");
    } finally {
      useDeterministicAlgorithms(false);
    }
  });
});

describe("ranking by measurement never re-runs an in-place kernel on the caller's inputs", () => {
  const ip = defineOp({
    name: "contractInPlace",
    prepare: (x: Tensor): P => ({ x, deviceType: x.deviceType, dtype: x.dtype }),
    shapeKey: (p: P) => p.x.shape.join("x"),
  });
  const double = (from: Float32Array, to: Float32Array) => {
    for (let i = 0; i < to.length; i++) to[i] = from[i] * 2;
  };
  const k = (name: string, extra: Record<string, unknown>) =>
    ({
      ...(kernel(name, extra) as object),
      op: "contractInPlace",
    }) as unknown as AnyKernelDefinition;
  registerBackend(
    backend([
      k("doubleInPlace", {
        priority: 10,
        inPlace: true,
        run: (p: P) => {
          const d = p.x.hostData() as Float32Array;
          double(d, d);
          return p.x;
        },
      }),
    ]),
  );
  registerBackend(
    backend([
      k("doubleCopy", {
        priority: 5,
        run: (p: P) => {
          const out = empty([...p.x.shape], { dtype: "float32" });
          double(p.x.hostData() as Float32Array, out.hostData() as Float32Array);
          return out;
        },
      }),
    ]),
  );

  for (const [what, changes] of [
    ["cudnn.benchmark (every kernel timed)", { cudnn: { benchmark: true } }],
    ["core.ranking perShape (each backend timed)", { core: { ranking: "perShape" } }],
  ] as const) {
    it(what, () => {
      using _ = backends.flags(changes);
      const input = tensor([1, -2, 3.5], { dtype: "float32" });
      const out = dispatch(ip, ip.prepare(input));
      expect(input.disposed).toBe(false);
      expect(Array.from(out.hostData() as Float32Array)).toEqual([2, -4, 7]);
      expect(Array.from(input.hostData() as Float32Array)).toEqual([2, -4, 7]); // once
    });
  }
});

describe("scoped forms check their callback", () => {
  it("withKernelPriority without a function is an ArgumentError, and changes nothing", () => {
    expect(() => withKernelPriority("contractTest", ["plain"], undefined as never)).toThrow(
      ArgumentError,
    );
    expect(ran(x())).toEqual(["plain"]);
  });
});

describe("global switches store what torch stores", () => {
  it("useDeterministicAlgorithms(false, { warnOnly: true }) reports warn-only, as torch 2.13", () => {
    try {
      useDeterministicAlgorithms(false, { warnOnly: true });
      expect(areDeterministicAlgorithmsEnabled()).toBe(false);
      expect(isDeterministicAlgorithmsWarnOnlyEnabled()).toBe(true);
      useDeterministicAlgorithms(false);
      expect(isDeterministicAlgorithmsWarnOnlyEnabled()).toBe(false);
    } finally {
      useDeterministicAlgorithms(false);
    }
  });
});

describe("a flag change a hook refuses leaves nothing behind", () => {
  it("setFlag, a scope, and a mirrored pair", () => {
    const off = onFlagChange("cudnn.benchmark", (v) => {
      if (v === true) throw new FlagError("refused by a test hook");
    });
    try {
      expect(() => {
        backends.cudnn.benchmark = true;
      }).toThrow("refused by a test hook");
      expect(getFlag("cudnn.benchmark")).toBe(false);
      expect(() => backends.cudnn.flags({ benchmark: true })).toThrow("refused by a test hook");
      expect(getFlag("cudnn.benchmark")).toBe(false);
    } finally {
      off();
    }
    const offTf32 = onFlagChange("cuda.matmul.allowTf32", (v) => {
      if (v === true) throw new FlagError("no TF32 here");
    });
    try {
      // The precision's hook sets allowTf32, whose hook refuses: both halves stay put.
      expect(() => backends.flags({ core: { float32MatmulPrecision: "high" } })).toThrow("no TF32");
      expect(() => {
        backends.core.float32MatmulPrecision = "high";
      }).toThrow("no TF32");
      expect([getFloat32MatmulPrecision(), getFlag("cuda.matmul.allowTf32")]).toEqual([
        "highest",
        false,
      ]);
    } finally {
      offTf32();
    }
  });
});

describe("environment values parse strictly", () => {
  it("integers are decimal digits only", () => {
    const omp = flagSpec("openmp.numThreads");
    if (!omp) throw new Error("no openmp.numThreads");
    expect(parseEnv("openmp.numThreads", omp, " 4 ", "OMP_NUM_THREADS")).toBe(4);
    expect(parseEnv("openmp.numThreads", omp, "+3", "OMP_NUM_THREADS")).toBe(3);
    for (const text of ["0x4", "1e1", "2.0", "0b1", "", "four"])
      expect(() => parseEnv("openmp.numThreads", omp, text, "OMP_NUM_THREADS")).toThrow(FlagError);
  });

  it("TORCH_* boolean variables take 0 or 1, as torch's check_env", () => {
    const blas = flagSpec("cuda.preferredBlasLibrary");
    const linalg = flagSpec("cuda.preferredLinalgLibrary");
    if (!blas || !linalg) throw new Error("no cuda library flags");
    const env = "TORCH_BLAS_PREFER_CUBLASLT";
    expect(parseEnv("cuda.preferredBlasLibrary", blas, "1", env)).toBe("cublaslt");
    expect(parseEnv("cuda.preferredBlasLibrary", blas, "0", env)).toBe("cublas");
    for (const text of ["garbage", "2", "yes", "true", ""])
      expect(() => parseEnv("cuda.preferredBlasLibrary", blas, text, env)).toThrow(
        /TORCH_BLAS_PREFER_CUBLASLT=.* use 0 or 1/,
      );
    expect(parseEnv("x", linalg, "1", "TORCH_LINALG_PREFER_CUSOLVER")).toBe("cusolver");
    expect(() => parseEnv("x", linalg, "on", "TORCH_LINALG_PREFER_CUSOLVER")).toThrow(FlagError);
  });
});
