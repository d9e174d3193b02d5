/**
 * What registration and dispatch check of a backend author: a kernel for an op that does
 * not exist, or naming a flag no schema defines, is a RegistrationError with did-you-mean
 * (issue 34: "matmull" was accepted and the kernel never ran; "fl3.enabld" left a kernel
 * disabled for good); an exception from run() reaches the user as a KernelError naming op,
 * kernel and backend, with the original as its cause. Backplane's own errors pass through.
 */
import {
  backends,
  KernelContractError,
  KernelError,
  LinalgError,
  matmul,
  RegistrationError,
  randn,
  withKernelPriority,
  zeros,
} from "@backplane/core";
import { defineBackend, listBackends, ops, registerBackend } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

const base = {
  devices: ["cpu"],
  isAvailable: () => ({ available: true }) as const,
};
const kernel = (extra: Record<string, unknown>) => ({
  op: "matmul",
  name: "k",
  device: "cpu",
  dtypes: ["float32"],
  deterministic: true,
  priority: 1,
  // Only the small products these tests force: Bun and Deno run every test file in one
  // process, where a calibration would otherwise time (and rank) these kernels too.
  supports: (p: { m?: number }) =>
    (p.m ?? 0) <= 4 ? true : "the author-contract tests' shapes only",
  run: () => {
    throw new Error("unreachable");
  },
  ...extra,
});

describe("registration checks the kernels against the ops and flags that exist", () => {
  it("an unknown op: a RegistrationError with the closest op, and nothing registered", () => {
    expect(() =>
      registerBackend(
        defineBackend({ ...base, name: "typo-op", kernels: [kernel({ op: "matmull" }) as never] }),
      ),
    ).toThrow(RegistrationError);
    expect(() =>
      registerBackend(
        defineBackend({ ...base, name: "typo-op", kernels: [kernel({ op: "matmull" }) as never] }),
      ),
    ).toThrow(/there is no op "matmull"; did you mean matmul\?/);
  });

  it("an undefined flag key: a RegistrationError; the backend's own schema counts", () => {
    expect(() =>
      registerBackend(
        defineBackend({
          ...base,
          name: "typo-flag",
          kernels: [kernel({ name: "a", flags: ["fl3.enabld"] }) as never],
          flags: { fl3: { enabled: { kind: "bool", default: true } } },
        }),
      ),
    ).toThrow(/flag "fl3.enabld" is not defined; did you mean fl3.enabled\?/);
    expect(() =>
      registerBackend(
        defineBackend({
          ...base,
          name: "own-flag",
          kernels: [
            kernel({ name: "own-flag-k", flags: ["fl4.enabled"], priority: -100 }) as never,
          ],
          flags: { fl4: { enabled: { kind: "bool", default: true } } },
        }),
      ),
    ).not.toThrow();
  });

  it("a flag spec of no kind, no default, a default it refuses: a RegistrationError, nothing registered", () => {
    const withFlags = (name: string, flags: unknown) => () =>
      registerBackend(defineBackend({ ...base, name, kernels: [], flags: flags as never }));
    expect(withFlags("bad-kind", { bk: { on: { kind: "boool", default: true } } })).toThrow(
      /backend bad-kind: flag bk.on has kind "boool"; a flag is bool, int, enum, string \(did you mean bool\?\)/,
    );
    expect(withFlags("no-default", { nd: { on: { kind: "bool" } } })).toThrow(
      /flag nd.on \(bool\) has no default/,
    );
    expect(withFlags("bad-default", { bd: { n: { kind: "int", default: 1.5 } } })).toThrow(
      /backend bad-default: the default of flag bd.n must be an integer.*got 1.5/,
    );
    expect(withFlags("no-values", { nv: { mode: { kind: "enum", default: "a" } } })).toThrow(
      /flag nv.mode is an enum without its values/,
    );
    expect(withFlags("not-a-spec", { ns: { on: true } })).toThrow(
      /flag ns.on must be a spec \(\{ kind, default \}\) or a group of specs, got true/,
    );
    for (const name of ["bad-kind", "no-default", "bad-default", "no-values", "not-a-spec"])
      expect(listBackends().some((b) => b.def.name === name)).toBe(false);
  });

  it("a registration that fails leaves no trace: the fixed definition then registers", () => {
    const registered = (name: string) => listBackends().some((b) => b.def.name === name);
    const attempt = (name: string, extra: Record<string, unknown>) => () =>
      registerBackend(
        defineBackend({
          ...base,
          name,
          kernels: [kernel({ name: `${name}-k`, priority: -100 }) as never],
          ...extra,
        }),
      );
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        "clash-kind",
        { flags: { cudnn: { benchmark: { kind: "int", default: 0 } } } },
        /flag cudnn.benchmark is already defined as bool; it cannot be redefined as int/,
      ],
      [
        "clash-group",
        { flags: { cuda: { matmul: { kind: "bool", default: false } } } },
        /flag cuda.matmul is already a group of flags/,
      ],
      [
        "typo-provides",
        { provides: { "quantized.engin": ["x"] } },
        /provides "quantized.engin", which is not a flag; did you mean quantized.engine\?/,
      ],
      [
        "closed-provides",
        { provides: { "cudnn.benchmark": ["x"] } },
        /provides "cudnn.benchmark", which is not an extensible enum/,
      ],
      [
        "string-provides",
        { provides: { "quantized.engine": "abc" } },
        /the values must be a list of names like \["qnnpack"\], got "abc"/,
      ],
      ["no-devices", { devices: undefined }, /devices must be a list of device types/],
      ["kernels-object", { kernels: {} }, /kernels must be a list of kernel definitions, got \{\}/],
      ["kernels-null", { kernels: [null] }, /a kernel must be an object/],
      [
        "typo-dtype",
        { kernels: [kernel({ name: "typo-dtype-k", dtypes: ["flaot32"] })] },
        /dtypes has "flaot32", not a dtype; did you mean float32\?/,
      ],
    ];
    for (const [name, extra, message] of cases) {
      expect(attempt(name, extra), name).toThrow(RegistrationError);
      expect(attempt(name, extra), name).toThrow(message);
      expect(registered(name), name).toBe(false);
      expect(
        ops.matmul.kernels.some((k) => k.name === `${name}-k`),
        name,
      ).toBe(false);
    }
    expect(backends.cudnn.benchmark).toBe(false); // still the core's bool
    expect(backends.quantized.supportedEngines).not.toContain("a");
    const fixed = attempt("clash-kind", {
      flags: { clashKind: { on: { kind: "int", default: 0 } } },
    });
    expect(fixed().def.flags).toHaveProperty("clashKind");
    expect(registered("clash-kind")).toBe(true);
  });

  it("a namespace named like a member of backends itself (has, flags, then) is refused", () => {
    const cases = [
      ["namespaces", ["has"]],
      ["namespaces", ["then"]], // backends would be a thenable
      ["flags", { flags: { on: { kind: "bool", default: false } } }],
      ["api", { ready: { f: () => 1 } }],
    ] as const;
    cases.forEach(([field, value], i) => {
      const name = `reserved-${i}`;
      expect(() => registerBackend(defineBackend({ ...base, name, [field]: value }))).toThrow(
        /is a member of backends itself; choose another name/,
      );
      expect(listBackends().some((b) => b.def.name === name)).toBe(false);
    });
    expect(typeof backends.has).toBe("function");
    expect(backends.has("has")).toBe(false);
  });
});

describe("an exception from a kernel's run()", () => {
  registerBackend(
    defineBackend({
      ...base,
      name: "throwing",
      kernels: [
        kernel({
          name: "boom",
          priority: -50,
          run: () => {
            throw new Error("boom in kernel");
          },
        }) as never,
        kernel({
          name: "typed",
          priority: -60,
          run: () => {
            throw new LinalgError("matmul", "a typed failure of the kernel");
          },
        }) as never,
      ],
    }),
  );

  it("is a KernelError naming op, kernel and backend, with the original as cause", () => {
    const a = randn([2, 2]);
    let caught: unknown;
    try {
      withKernelPriority("matmul", ["boom"], () => matmul(a, a));
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(KernelError);
    const e = caught as KernelError;
    expect(e.message).toMatch(
      /matmul: kernel boom of backend throwing failed: Error: boom in kernel/,
    );
    expect([e.op, e.kernel, e.backend]).toEqual(["matmul", "boom", "throwing"]);
    expect((e as { cause?: Error }).cause?.message).toBe("boom in kernel");
  });

  it("a Backplane error from run() passes through as it is", () => {
    const a = randn([2, 2]);
    expect(() => withKernelPriority("matmul", ["typed"], () => matmul(a, a))).toThrow(LinalgError);
  });
});

describe("a kernel's result is checked against its op", () => {
  const a = randn([4, 4]);
  const bad = {
    wrongShape: () => zeros([1, 1]),
    wrongDtype: () => zeros([4, 4], { dtype: "float64" }),
    theInput: (p: { a: unknown }) => p.a,
    nothing: () => undefined,
  };
  registerBackend(
    defineBackend({
      ...base,
      name: "contract-breaking",
      kernels: Object.entries(bad).map(([name, run], i) =>
        kernel({ name, run, priority: -200 - i }),
      ) as never[],
    }),
  );
  const force = (name: string) => () => withKernelPriority("matmul", [name], () => matmul(a, a));

  it("with core.checkKernels (and in strict mode, and in the testkit): a KernelContractError", () => {
    using _ = backends.flags({ core: { checkKernels: true } });
    expect(force("wrongShape")).toThrow(
      /kernel wrongShape of backend contract-breaking returned a result of shape \[1,1\]; the op promises \[4,4\]/,
    );
    expect(force("wrongDtype")).toThrow(
      /returned a result of dtype float64; the op promises float32/,
    );
    expect(force("theInput")).toThrow(/returned one of its inputs as its result/);
    expect(force("wrongShape")).toThrow(KernelContractError);
  });

  it("without the flag only a missing result is refused (the check costs nothing then)", () => {
    expect(force("nothing")).toThrow(
      /kernel nothing of backend contract-breaking returned undefined, not a result/,
    );
    expect(force("wrongShape")().shape).toEqual([1, 1]);
  });
});

describe("an op called before a backend finished initialising", () => {
  it("warns once per op that a slower kernel may have run, and runs the kernel after ready()", async () => {
    const { backends, ready, setLogHandler, relu, setFlag } = await import("@backplane/core");
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let ran = 0;
    registerBackend(
      defineBackend({
        ...base,
        name: "slow-to-load",
        init: () => gate,
        // Its own switch, turned off at the end: Bun runs this package's files in one process.
        flags: { slowToLoad: { enabled: { kind: "bool", default: true } } },
        kernels: [
          kernel({
            op: "relu",
            name: "slow-relu",
            priority: 1000,
            flags: ["slowToLoad.enabled"],
            run: (p: { x: { shape: number[] } }) => {
              ran++;
              return zeros(p.x.shape);
            },
          }) as never,
        ],
      }),
    );
    const lines: string[] = [];
    const prev = setLogHandler((_level, message) => void lines.push(message));
    try {
      const x = randn([3]);
      const { calls } = backends.record(() => relu(x));
      relu(x);
      expect(ran).toBe(0);
      // record() says which kernel ran and which backend it passed over, still loading.
      expect(calls).toHaveLength(1);
      expect(calls[0]!.kernel).not.toBe("slow-relu");
      expect(calls[0]!.initialising).toEqual(["slow-to-load"]);
      expect(
        lines.filter((l) => l.includes("relu ran before slow-to-load finished initialising")),
      ).toHaveLength(1);
      release();
      await ready("slow-to-load");
      relu(x);
      expect(ran).toBe(1);
    } finally {
      setLogHandler(prev);
      setFlag("slowToLoad.enabled", false);
    }
  });
});

describe("a kernel defined through its op is typed by it", () => {
  const common = {
    device: "cpu",
    dtypes: ["float32"],
    deterministic: true,
    priority: -300,
  } as const;
  it("op.kernel() fills in the op; other params or another result type do not compile", () => {
    const k = ops.matmul.kernel({
      ...common,
      name: "typed-matmul",
      supports: (p) => (p.m <= 4 ? true : "small products only"),
      run: (p) => zeros(p.outShape),
    });
    expect(k.op).toBe("matmul");
    const q = ops.qr.kernel({ ...common, name: "typed-qr", run: (p) => ({ Q: p.a, R: p.a }) });
    expect(q.op).toBe("qr");
    ops.matmul.kernel({
      ...common,
      name: "wrong-result",
      // @ts-expect-error: matmul's kernels return a Tensor
      run: () => 42,
    });
    ops.softmax.kernel({
      ...common,
      name: "wrong-params",
      // @ts-expect-error: softmax's params have no m (they are not matmul's)
      supports: (p) => (p.m > 0 ? true : "never"),
      run: (p) => p.x,
    });
    ops.qr.kernel({
      ...common,
      name: "wrong-record",
      // @ts-expect-error: qr's result is { Q, R }
      run: (p) => ({ Q: p.a }),
    });
  });
});
