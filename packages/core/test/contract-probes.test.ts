/**
 * Promises of the API contract (shared/design/API.md) that probing found broken: a
 * backend's availability answer whose reason is not text, an api member that replaces a
 * namespace method with a non-function, a version() that is not text, describe()'s
 * PyTorch name of a flag behind a torch function, and OMP_NUM_THREADS given as OpenMP's
 * per-level list.
 */
import {
  backends,
  explain,
  flagSpec,
  fromTorchName,
  kernelPriority,
  RegistrationError,
  randn,
  setFloat32MatmulPrecision,
  type Tensor,
  useDeterministicAlgorithms,
} from "@backplane/core";
import {
  type BackendDefinition,
  defineOp,
  dispatch,
  type OpParams,
  registerBackend,
} from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { parseEnv } from "../src/flags/spec.ts";

let n = 0;
/** A backend answering for a fresh namespace, its name and namespace returned. */
function fresh(def: Partial<BackendDefinition>): string {
  const name = `probe-${n++}`;
  registerBackend({
    name,
    namespaces: [name],
    devices: ["cpu"],
    isAvailable: () => ({ available: true }),
    ...def,
  } as BackendDefinition);
  return name;
}

describe("availability answers whose reason is not text", () => {
  const odd: [string, unknown][] = [
    ["a number", 42],
    ["an object", { code: 35 }],
    ["null", null],
    ["an empty string", ""],
  ];
  for (const [what, reason] of odd) {
    it(`isAvailable() with a reason that is ${what}: status() says so, backends.status() still answers`, () => {
      const ns = fresh({ isAvailable: () => ({ available: false, reason }) as never });
      const s = backends.namespace(ns).status();
      expect(s.available).toBe(false);
      expect(typeof s.reason).toBe("string");
      expect(s.reason).toMatch(/isAvailable\(\)/);
      expect(backends.namespace(ns).isAvailable()).toBe(false);
      expect(backends.status().find((x) => x.namespace === ns)?.reason).toBe(s.reason);
    });
    it(`isBuilt() with a reason that is ${what}: status() says so`, () => {
      const ns = fresh({ isBuilt: () => ({ available: false, reason }) as never });
      const s = backends.namespace(ns).status();
      expect([s.built, s.available]).toEqual([false, false]);
      expect(s.reason).toMatch(/isBuilt\(\)/);
      expect(backends.namespace(ns).isBuilt()).toBe(false);
    });
  }

  it("an async isAvailable() is refused with the reason, its rejection handled", async () => {
    const ns = fresh({ isAvailable: (async () => Promise.reject(new Error("no lib"))) as never });
    const s = backends.namespace(ns).status();
    expect(s.available).toBe(false);
    expect(s.reason).toMatch(/isAvailable\(\) returned a promise/);
    // An unhandled rejection would fail the run here.
    await new Promise((r) => setTimeout(r, 10));
  });

  it("a text reason and detail pass through unchanged", () => {
    const reason = "libcudnn.so.9 not found";
    const ns = fresh({
      isAvailable: () => ({ available: false, reason, detail: "searched /usr/lib" }),
    });
    expect(backends.namespace(ns).status()).toMatchObject({ reason, detail: "searched /usr/lib" });
  });
});

describe("api members in the place of a namespace's own methods", () => {
  for (const member of ["isAvailable", "isBuilt", "status", "flags", "values", "version"]) {
    it(`api.<ns>.${member} that is not a function is a RegistrationError, and nothing is recorded`, () => {
      const name = `probe-api-${n++}`;
      expect(() =>
        registerBackend({
          name,
          namespaces: [name],
          devices: ["cpu"],
          isAvailable: () => ({ available: true }),
          api: { [name]: { [member]: true } },
        }),
      ).toThrow(RegistrationError);
      expect(backends.registered()).not.toContain(name);
      expect(backends.has(name)).toBe(false);
    });
  }

  it("api.<ns>.name is refused; a function in a method's place still registers", () => {
    const name = `probe-api-${n++}`;
    const base = {
      name,
      namespaces: [name],
      devices: ["cpu"],
      isAvailable: () => ({ available: true }),
    };
    expect(() => registerBackend({ ...base, api: { [name]: { name: "other" } } })).toThrow(
      /name would rename/,
    );
    const status = () => ({ namespace: name, built: true, available: false, reason: "mine" });
    registerBackend({ ...base, api: { [name]: { status } } });
    expect(backends.namespace(name).isAvailable()).toBe(false);
    expect(backends.namespace(name).status().reason).toBe("mine");
  });
});

describe("version() that is not text", () => {
  it("a number from version() is no version: versionString() and version() are undefined", () => {
    const ns = fresh({ version: () => 42 as never });
    expect(backends.namespace(ns).versionString()).toBeUndefined();
    expect(backends.namespace(ns).version()).toBeUndefined();
    expect(backends.namespace(ns).status().version).toBeUndefined();
  });

  it("a version text still gives torch's integer", () => {
    const ns = fresh({ version: () => "9.24.1" });
    expect(backends.namespace(ns).versionString()).toBe("9.24.1");
    expect(backends.namespace(ns).version()).toBe(92401);
  });
});

describe("describe() names the PyTorch setting of flags behind torch functions", () => {
  // Each flag, the torch function that sets it, and the Backplane function TORCH_NAMES maps
  // that torch name to (which must set the flag, so the name is the flag's).
  const cases: [string, string, () => void][] = [
    [
      "core.float32MatmulPrecision",
      "torch.set_float32_matmul_precision",
      () => setFloat32MatmulPrecision("medium"),
    ],
    [
      "core.deterministic",
      "torch.use_deterministic_algorithms",
      () => useDeterministicAlgorithms(true),
    ],
    [
      "cuda.flashSdp",
      "torch.backends.cuda.enable_flash_sdp",
      () => backends.cuda.enableFlashSdp(false),
    ],
    [
      "mha.fastpathEnabled",
      "torch.backends.mha.set_fastpath_enabled",
      () => backends.mha.setFastpathEnabled(false),
    ],
  ];
  for (const [key, torch, set] of cases) {
    it(`${key}: ${torch}`, () => {
      expect(fromTorchName(torch)).toBeDefined();
      const before = backends.describe(key).value;
      backends.withFlags({}, () => {
        set();
        expect(backends.describe(key).value).not.toEqual(before);
      });
      expect(backends.describe(key).torch).toBe(torch);
    });
  }

  it("a flag with only a bare torch argument name (warn_only) has no PyTorch name", () => {
    expect(backends.describe("core.deterministicWarnOnly").torch).toBeUndefined();
  });
});

describe("OMP_NUM_THREADS", () => {
  const spec = flagSpec("openmp.numThreads");
  const read = (text: string) =>
    parseEnv("openmp.numThreads", spec as never, text, "OMP_NUM_THREADS");

  // torch 2.13 with OMP_NUM_THREADS=1,2 runs on 1 thread (torch.get_num_threads() == 1):
  // OpenMP's list gives each nesting level a count, the first is the process's.
  it("a per-level list: the first count is the thread count", () => {
    expect(read("1,2")).toBe(1);
    expect(read("3,1")).toBe(3);
    expect(read(" 4 , 2 ")).toBe(4);
  });

  it("a single count as before; text that is no count is a FlagError", () => {
    expect(read("3")).toBe(3);
    for (const bad of ["abc", ",2", "2.5", "-1", "4000"])
      expect(() => read(bad), bad).toThrow(/OMP_NUM_THREADS|openmp\.numThreads/);
  });
});

describe("ops named like Object.prototype members", () => {
  // An author's op may be named anything; the user's priority table must not find
  // Object.prototype's functions under such a name (dispatch was a TypeError).
  for (const name of ["constructor", "hasOwnProperty", "valueOf"]) {
    it(`${name}: dispatch runs the higher priority kernel, and a priority list still works`, () => {
      type P = OpParams & { x: Tensor };
      const op = defineOp<P, [Tensor], number>({
        name,
        prepare: (x: Tensor) => ({ deviceType: "cpu", dtype: x.dtype, x }),
        shapeKey: (p) => p.x.shape.join("x"),
      });
      const sum = (p: P) => p.x.toFloat64().reduce((a, b) => a + b, 0);
      registerBackend({
        name: `probe-op-${name.toLowerCase()}`,
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        kernels: [
          op.kernel({
            name: "sum",
            device: "cpu",
            dtypes: ["float64"],
            deterministic: true,
            priority: 2,
            run: sum,
          }),
          op.kernel({
            name: "neg",
            device: "cpu",
            dtypes: ["float64"],
            deterministic: true,
            priority: 1,
            run: (p) => -sum(p),
          }),
        ],
      });
      const x = randn([5], { dtype: "float64" });
      const expected = (x.toArray() as number[]).reduce((a, b) => a + b, 0); // plain JS sum
      expect(dispatch(op, op.prepare(x))).toBeCloseTo(expected, 12);
      expect(explain(name, x).policy).toBe("off");
      {
        using _ = kernelPriority(name, ["neg"]);
        expect(dispatch(op, op.prepare(x))).toBeCloseTo(-expected, 12);
      }
      expect(dispatch(op, op.prepare(x))).toBeCloseTo(expected, 12);
    });
  }
});
