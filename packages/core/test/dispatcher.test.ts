import {
  ArgumentError,
  backends,
  clearAutotuneCache,
  explain,
  KernelError,
  kernelPriority,
  matmul,
  NoKernelError,
  NondeterministicError,
  NotInstalledError,
  RegistrationError,
  ready,
  setFloat32MatmulPrecision,
  setKernelPriority,
  setVerboseSink,
  type Tensor,
  tensor,
  useDeterministicAlgorithms,
  withKernelPriority,
} from "@backplane/core";
import {
  defineBackend,
  defineOp,
  dispatch,
  type OpParams,
  registerBackend,
  setTimingClock,
} from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

interface P extends OpParams {
  x: Tensor;
}
const op = defineOp({
  name: "dispatchTest",
  prepare: (x: Tensor): P => ({ x, deviceType: x.deviceType, dtype: x.dtype }),
  shapeKey: (p: P) => p.x.shape.join("x"),
});
const calls: string[] = [];
const k = (name: string, extra: Record<string, unknown> = {}) => ({
  op: "dispatchTest",
  name,
  device: "cpu",
  dtypes: ["float32", "float64"] as const,
  deterministic: true,
  priority: 0,
  run: (p: P) => {
    calls.push(name);
    return p.x.numel;
  },
  ...extra,
});

registerBackend(
  defineBackend({
    name: "dispatch-test",
    devices: ["cpu"],
    flags: { dispatchTest: { fastEnabled: { kind: "bool", default: true } } },
    isAvailable: () => ({ available: true }),
    kernels: [
      k("fast", {
        priority: 30,
        flags: ["dispatchTest.fastEnabled"],
        supports: (p: P) => (p.x.numel <= 4 ? true : "fast handles at most 4 elements"),
      }),
      k("racy", { priority: 20, deterministic: false }),
      k("tf32", { priority: 15, precision: "high" }),
      k("slowButSure", { priority: 10 }),
      k("f64only", { priority: 5, dtypes: ["float64"] }),
    ],
  }),
);
registerBackend({
  name: "dispatch-test-missing",
  devices: ["cpu"],
  isAvailable: () => ({ available: false, reason: "libmissing.so.1 not found" }),
  kernels: [k("neverRuns", { priority: 100 })],
});

const x = (n: number, dtype: "float32" | "float64" = "float32") =>
  tensor(new Float64Array(n).fill(1), { dtype });
const run = (t: Tensor) => {
  calls.length = 0;
  dispatch(op, op.prepare(t));
  return calls[0];
};

describe("dispatcher", () => {
  it("takes the highest-priority kernel that is enabled and supports the inputs", () => {
    expect(run(x(2))).toBe("fast");
    expect(run(x(9))).toBe("racy");
  });

  it("honours flags, and explains every candidate", () => {
    using _ = backends.flags({ dispatchTest: { fastEnabled: false } });
    expect(run(x(2))).toBe("racy");
    const e = explain("dispatchTest", x(2));
    expect(e.selected).toBe("racy");
    const reasons = Object.fromEntries(e.candidates.map((c) => [c.kernel, c.reason]));
    expect(reasons.fast).toBe("disabled by flag dispatchTest.fastEnabled = false");
    expect(reasons.neverRuns).toBe(
      "backend dispatch-test-missing is not available: libmissing.so.1 not found",
    );
    expect(reasons.tf32).toMatch(/needs float32 matmul precision "high"/);
    expect(String(e)).toContain("=> racy (dispatch-test)");
  });

  it("deterministic mode skips nondeterministic kernels, or errors, or warns", () => {
    useDeterministicAlgorithms(true);
    try {
      expect(run(x(9))).toBe("slowButSure");
      using _p = kernelPriority("dispatchTest", ["racy"]);
      expect(run(x(9))).toBe("slowButSure");
    } finally {
      useDeterministicAlgorithms(false);
    }
  });

  it("deterministic mode with only a nondeterministic kernel left throws a typed error naming it", () => {
    const onlyRacy = defineOp({
      name: "dispatchTestRacy",
      prepare: (t: Tensor): P => ({ x: t, deviceType: "cpu", dtype: t.dtype }),
      shapeKey: () => "",
    });
    registerBackend({
      name: "dispatch-test-racy",
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      kernels: [{ ...k("racyOnly", { deterministic: false }), op: "dispatchTestRacy" }],
    });
    useDeterministicAlgorithms(true);
    try {
      expect(() => dispatch(onlyRacy, onlyRacy.prepare(x(1)))).toThrow(NondeterministicError);
      expect(() => dispatch(onlyRacy, onlyRacy.prepare(x(1)))).toThrow(
        /racyOnly \(dispatch-test-racy\), is nondeterministic/,
      );
      useDeterministicAlgorithms(true, { warnOnly: true });
      expect(dispatch(onlyRacy, onlyRacy.prepare(x(3)))).toBe(3);
    } finally {
      useDeterministicAlgorithms(false);
    }
  });

  it("float32 precision 'high' admits TF32-style kernels; float64 never needs it", () => {
    using _ = backends.flags({ core: { deterministic: true } });
    expect(run(x(9))).toBe("slowButSure");
    setFloat32MatmulPrecision("high");
    try {
      expect(run(x(9))).toBe("tf32");
    } finally {
      setFloat32MatmulPrecision("highest");
    }
  });

  it("user priority, as a setting, a sync scope and an async scope", async () => {
    {
      using _ = kernelPriority("dispatchTest", ["slowButSure"]);
      expect(run(x(2))).toBe("slowButSure");
    }
    expect(run(x(2))).toBe("fast");
    const inside = await withKernelPriority("dispatchTest", ["f64only"], async () => {
      await new Promise((r) => setTimeout(r, 1));
      return [run(x(2, "float64")), run(x(2))];
    });
    expect(inside).toEqual(["f64only", "fast"]);
    setKernelPriority("dispatchTest", ["racy"]);
    expect(run(x(2))).toBe("racy");
    setKernelPriority("dispatchTest", null);
    expect(run(x(2))).toBe("fast");
    expect(() => kernelPriority("dispatchTest", ["nope"])).toThrow(
      /has no kernel named nope; it has: neverRuns, fast, racy, tf32/,
    );
  });

  it("kernel priority for an op that does not exist names the op, not the kernels", () => {
    expect(() => kernelPriority("nosuch", ["reference"])).toThrow(
      /kernel priority: there is no op "nosuch"/,
    );
    expect(() => kernelPriority("matmull", ["reference"])).toThrow(/did you mean matmul\?/);
    expect(() => setKernelPriority(5 as never, null)).toThrow(ArgumentError);
    expect(() => withKernelPriority("nosuch", [], () => 0)).toThrow(ArgumentError);
  });

  it("a kernel priority list with holes is refused (every() skips them)", () => {
    const sparse: string[] = [];
    sparse[1] = "reference";
    expect(() => kernelPriority("matmul", sparse)).toThrow(/must be a list of kernel names/);
  });

  it("ready() of a name no backend has is an ArgumentError with the closest name", async () => {
    await expect(ready("cdua")).rejects.toThrow(
      /ready: no backend is named "cdua"; did you mean cuda\?/,
    );
    await expect(ready("dispatch-tset")).rejects.toThrow(/did you mean dispatch-test\?/);
    await expect(ready(5 as never)).rejects.toThrow(ArgumentError);
    await expect(backends.ready("cdua")).rejects.toThrow(ArgumentError);
    // A backend of Backplane's own whose package is not imported: nothing to wait for.
    await expect(ready("cudnn", "cpu-dnnl")).resolves.toBeUndefined();
  });

  it("no kernel left: the error lists every candidate and why, with a hint", () => {
    using _ = backends.flags({ dispatchTest: { fastEnabled: false } });
    const ints = tensor(new Int32Array([1, 2]));
    let err: unknown;
    try {
      dispatch(op, op.prepare(ints));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NoKernelError);
    const msg = (err as Error).message;
    expect(msg).toMatch(/No kernel can run dispatchTest/);
    expect(msg).toMatch(/fast \(dispatch-test\): dtype int32 not supported/);
    expect(msg).toMatch(/neverRuns \(dispatch-test-missing\): dtype int32 not supported/);
    expect((err as NoKernelError).candidates.length).toBe(6);
  });

  it("autotune times the candidates once per shape and remembers the winner", () => {
    const times: string[] = [];
    const tuned = defineOp({
      name: "dispatchTestTune",
      prepare: (t: Tensor): P => ({ x: t, deviceType: "cpu", dtype: t.dtype }),
      shapeKey: (p: P) => String(p.x.numel),
    });
    // A fake clock: each kernel "costs" its ms whatever the machine's load.
    let clockMs = 0;
    const timed = (name: string, ms: number, value: number) => () => {
      times.push(name);
      clockMs += ms;
      return value;
    };
    registerBackend({
      name: "dispatch-test-tune",
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      kernels: [
        {
          ...k("slow", { priority: 9 }),
          op: "dispatchTestTune",
          run: timed("slow", 3, 1),
        },
        {
          ...k("quick", { priority: 1 }),
          op: "dispatchTestTune",
          run: timed("quick", 0, 2),
        },
        {
          ...k("third", { priority: 0 }),
          op: "dispatchTestTune",
          run: timed("third", 3, 3),
        },
      ],
    });
    const systemClock = setTimingClock(() => clockMs);
    using _clock = { [Symbol.dispose]: () => setTimingClock(systemClock) };
    expect(dispatch(tuned, tuned.prepare(x(1)))).toBe(1);
    using _ = backends.cudnn.flags({ benchmark: true, benchmarkLimit: 0 });
    times.length = 0;
    expect(dispatch(tuned, tuned.prepare(x(1)))).toBe(2);
    expect(times.filter((t) => t === "slow").length).toBe(2); // warm-up + timed
    times.length = 0;
    expect(dispatch(tuned, tuned.prepare(x(1)))).toBe(2);
    expect(times).toEqual(["quick"]);
    {
      using _l = backends.cudnn.flags({ benchmarkLimit: 1 });
      expect(dispatch(tuned, tuned.prepare(x(5)))).toBe(1); // only the first candidate is tried
    }
    clearAutotuneCache();
    times.length = 0;
    dispatch(tuned, tuned.prepare(x(1)));
    expect(times.length).toBe(7);
  });

  it("verbose prints one line per kernel call", () => {
    const lines: string[] = [];
    const prev = setVerboseSink((l) => lines.push(l));
    try {
      using _ = backends.flags({ core: { verbose: true } });
      matmul(tensor([[1, 2]]), tensor([[3], [4]]));
    } finally {
      setVerboseSink(prev);
    }
    expect(lines.length).toBe(1);
    expect(lines[0]).toMatch(
      /^backplane_verbose,exec,matmul,reference:reference,1x2x1,float32,\d+\.\d+ ms$/,
    );
  });

  it("registration: same backend twice is idempotent, a conflict is an error", () => {
    const def = defineBackend({
      name: "dispatch-test-dup",
      version: () => "1.0.0",
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
    });
    const a = registerBackend(def);
    expect(registerBackend({ ...def })).toBe(a);
    expect(() => registerBackend({ ...def, version: () => "2.0.0" })).toThrow(RegistrationError);
    expect(() =>
      registerBackend({
        name: "dispatch-test-clash",
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        kernels: [k("fast")],
      }),
    ).toThrow(/kernel "fast" for op dispatchTest is registered twice/);
    expect(() =>
      registerBackend({
        name: "dispatch-test-ns",
        namespaces: ["cpu"],
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
      }),
    ).toThrow(/claims backends.cpu, which reference already answers for/);
    expect(() =>
      registerBackend({
        name: "Bad Name",
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
      }),
    ).toThrow(RegistrationError);
    expect(() =>
      registerBackend({
        name: "dispatch-test-baddev",
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        kernels: [{ ...k("x"), device: "cuda" }],
      }),
    ).toThrow(/device cuda is not among the backend's devices/);
  });

  it("async initialisation: kernels wait until ready()", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const _lazy = defineOp({
      name: "dispatchTestLazy",
      prepare: (t: Tensor): P => ({ x: t, deviceType: "cpu", dtype: t.dtype }),
      shapeKey: () => "",
    });
    registerBackend({
      name: "dispatch-test-lazy",
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      init: () => gate,
      kernels: [{ ...k("lazy"), op: "dispatchTestLazy" }],
    });
    expect(explain("dispatchTestLazy", x(1)).candidates[0].reason).toMatch(
      /still initialising \(await ready\("dispatch-test-lazy"\)\)/,
    );
    release();
    await ready("dispatch-test-lazy");
    expect(explain("dispatchTestLazy", x(1)).selected).toBe("lazy");
  });

  it("an optional library not installed is said so, not as a failure; a real failure is", async () => {
    const _optional = defineOp({
      name: "dispatchTestOptional",
      prepare: (t: Tensor): P => ({ x: t, deviceType: "cpu", dtype: t.dtype }),
      shapeKey: () => "",
    });
    registerBackend({
      name: "dispatch-test-absent",
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      init: async () => {
        throw new NotInstalledError("libfast.so.1", "apt install libfast1", "tried: /usr/lib");
      },
      kernels: [{ ...k("absent"), op: "dispatchTestOptional" }],
    });
    registerBackend({
      name: "dispatch-test-broken",
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      init: async () => {
        throw new Error("libfast.so.1 has no symbol fast_gemm");
      },
      kernels: [{ ...k("broken"), op: "dispatchTestOptional" }],
    });
    explain("dispatchTestOptional", x(1));
    await ready("dispatch-test-absent", "dispatch-test-broken").catch(() => {});
    const rows = explain("dispatchTestOptional", x(1)).candidates;
    expect(rows.find((c) => c.kernel === "absent")!.reason).toBe(
      "backend dispatch-test-absent: not installed (optional): libfast.so.1; apt install libfast1",
    );
    expect(rows.find((c) => c.kernel === "broken")!.reason).toBe(
      "backend dispatch-test-broken failed to initialise: libfast.so.1 has no symbol fast_gemm",
    );
  });

  it("the no-kernel hint names a flag only when that kernel would accept the inputs", () => {
    const hinted = defineOp({
      name: "dispatchTestHint",
      prepare: (t: Tensor): P => ({ x: t, deviceType: "cpu", dtype: t.dtype }),
      shapeKey: () => "",
    });
    registerBackend({
      name: "dispatch-test-hint",
      devices: ["cpu"],
      flags: {
        dispatchTestHint: {
          small: { kind: "bool", default: false },
          any: { kind: "bool", default: false },
        },
      },
      isAvailable: () => ({ available: true }),
      kernels: [
        {
          ...k("smallOnly", {
            flags: ["dispatchTestHint.small"],
            supports: (p: P) => (p.x.numel <= 2 ? true : "at most 2 elements"),
          }),
          op: "dispatchTestHint",
        },
        {
          ...k("anySize", { flags: ["dispatchTestHint.any", "dispatchTestHint.small"] }),
          op: "dispatchTestHint",
        },
      ],
    });
    // What to set, and to what: every flag of the kernel that is off, with its value now.
    expect(() => dispatch(hinted, hinted.prepare(x(9)))).toThrow(
      "Hint: anySize would run if you set dispatchTestHint.any to true (it is false) and dispatchTestHint.small to true (it is false).",
    );
    backends.withFlags({ dispatchTestHint: { small: true } }, () =>
      expect(() => dispatch(hinted, hinted.prepare(x(9)))).toThrow(
        "Hint: anySize would run if you set dispatchTestHint.any to true (it is false).",
      ),
    );
    expect(() => dispatch(hinted, hinted.prepare(x(1)))).toThrow(
      "Hint: smallOnly would run if you set dispatchTestHint.small to true (it is false).",
    );
  });

  it("a supports() that throws is a refusal with its message, in dispatch as in explain()", () => {
    const shaky = defineOp({
      name: "dispatchTestShaky",
      prepare: (t: Tensor): P => ({ x: t, deviceType: "cpu", dtype: t.dtype }),
      shapeKey: (p: P) => String(p.x.numel),
    });
    const buggy = (p: P): true => {
      if (p.x.numel > 1) throw new TypeError("cannot read properties of undefined");
      return true;
    };
    registerBackend({
      name: "dispatch-test-shaky",
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      kernels: [
        { ...k("buggy", { priority: 2, supports: buggy }), op: "dispatchTestShaky" },
        {
          ...k("buggyRacy", { priority: 1, deterministic: false, supports: buggy }),
          op: "dispatchTestShaky",
        },
      ],
    });
    expect(dispatch(shaky, shaky.prepare(x(1)))).toBe(1);
    expect(() => dispatch(shaky, shaky.prepare(x(3)))).toThrow(NoKernelError);
    expect(() => dispatch(shaky, shaky.prepare(x(3)))).toThrow(
      /buggy \(dispatch-test-shaky\): supports\(\) threw: cannot read properties/,
    );
    useDeterministicAlgorithms(true, { warnOnly: true });
    try {
      expect(() => dispatch(shaky, shaky.prepare(x(3)))).toThrow(NoKernelError); // held back too
    } finally {
      useDeterministicAlgorithms(false);
    }
    using _ = backends.cudnn.flags({ benchmark: true, benchmarkLimit: 0 });
    expect(() => dispatch(shaky, shaky.prepare(x(4)))).toThrow(NoKernelError); // timed: the same
  });

  it("cudnn.benchmark: a kernel that fails while timed is a KernelError naming it", () => {
    const failing = defineOp({
      name: "dispatchTestTimedFail",
      prepare: (t: Tensor): P => ({ x: t, deviceType: "cpu", dtype: t.dtype }),
      shapeKey: (p: P) => String(p.x.numel),
    });
    let runs = 0;
    registerBackend({
      name: "dispatch-test-timed-fail",
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
      kernels: [
        { ...k("fine", { priority: 2 }), op: "dispatchTestTimedFail" },
        {
          ...k("flaky", { priority: 1 }),
          op: "dispatchTestTimedFail",
          // Runs at the warm-up, fails in the timed round.
          run: () => {
            if (++runs > 1) throw new RangeError("offset is out of bounds");
            return 0;
          },
        },
      ],
    });
    using _ = backends.cudnn.flags({ benchmark: true, benchmarkLimit: 0 });
    let err: unknown;
    try {
      dispatch(failing, failing.prepare(x(2)));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KernelError);
    expect((err as KernelError).kernel).toBe("flaky");
    expect((err as Error).message).toMatch(
      /flaky of backend dispatch-test-timed-fail failed: RangeError/,
    );
  });
});
