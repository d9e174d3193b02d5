/**
 * Flag scopes at their edges: scopes closed out of order over the mirrored pair
 * (float32 precision / cuda.matmul.allowTf32), a change hook that throws while a scope
 * closes, non-string flag names, flags defined while a task runs in its own frame (a
 * backend imported inside withFlags), and record() nested in record().
 */
import {
  backends,
  empty,
  FlagError,
  getFlag,
  getFloat32MatmulPrecision,
  matmul,
  nn,
  onFlagChange,
  randn,
  relu,
  setFlag,
  type Tensor,
} from "@backplane/core";
import { defineBackend, registerBackend, type UnaryParams } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

type Precision = "highest" | "high" | "medium";
const PRECISIONS: Precision[] = ["highest", "high", "medium"];
const mirrored = () =>
  backends.cuda.matmul.allowTf32 === (getFloat32MatmulPrecision() !== "highest");

/** A seeded generator (mulberry32): the random orders replay. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("scopes closed out of order over the mirrored precision pair", () => {
  it("closing an older allowTf32 scope keeps a newer precision scope's value", () => {
    const a = backends.cuda.flags({ matmul: { allowTf32: true } });
    const b = backends.flags({ core: { float32MatmulPrecision: "medium" } });
    a[Symbol.dispose]();
    expect(getFloat32MatmulPrecision()).toBe("medium");
    expect(backends.cuda.matmul.allowTf32).toBe(true);
    b[Symbol.dispose]();
    expect(getFloat32MatmulPrecision()).toBe("highest");
    expect(backends.cuda.matmul.allowTf32).toBe(false);
  });

  it("holds the newest open scope's setting and the mirror at every step, 10 deep, 200 random orders", () => {
    const rand = rng(20261127);
    for (let trial = 0; trial < 200; trial++) {
      const open: { scope: Disposable; precision?: Precision; tf?: boolean }[] = [];
      for (let i = 0; i < 10; i++) {
        if (rand() < 0.5) {
          const precision = PRECISIONS[Math.floor(rand() * 3)];
          open.push({
            scope: backends.flags({ core: { float32MatmulPrecision: precision } }),
            precision,
          });
        } else {
          const tf = rand() < 0.5;
          open.push({ scope: backends.cuda.flags({ matmul: { allowTf32: tf } }), tf });
        }
        expect(mirrored()).toBe(true);
      }
      while (open.length > 0) {
        const [closed] = open.splice(Math.floor(rand() * open.length), 1);
        closed.scope[Symbol.dispose]();
        expect(mirrored()).toBe(true);
        // The newest open scope decides the pair (either half of it).
        const newest = open.at(-1);
        if (newest?.precision !== undefined)
          expect(getFloat32MatmulPrecision()).toBe(newest.precision);
        if (newest?.tf !== undefined) expect(backends.cuda.matmul.allowTf32).toBe(newest.tf);
      }
      expect(getFloat32MatmulPrecision()).toBe("highest");
      expect(backends.cuda.matmul.allowTf32).toBe(false);
    }
  });

  it("sdpaKernel and cudnn scopes closed in random orders restore every key", () => {
    const rand = rng(7);
    const keys = ["cuda.flashSdp", "cuda.mathSdp", "cudnn.benchmark", "cudnn.benchmarkLimit"];
    const before = keys.map((k) => getFlag(k));
    for (let trial = 0; trial < 100; trial++) {
      const open: Disposable[] = [];
      for (let i = 0; i < 10; i++) {
        if (rand() < 0.5)
          open.push(
            nn.attention.sdpaKernel([rand() < 0.5 ? "MATH" : "FLASH_ATTENTION"], {
              setPriority: rand() < 0.5,
            }),
          );
        else
          open.push(
            backends.cudnn.flags({
              benchmark: rand() < 0.5,
              benchmarkLimit: Math.floor(rand() * 20),
            }),
          );
      }
      while (open.length > 0) open.splice(Math.floor(rand() * open.length), 1)[0][Symbol.dispose]();
      expect(keys.map((k) => getFlag(k))).toEqual(before);
    }
  });
});

describe("a change hook that throws while a scope closes", () => {
  it("does not stop the restore or the mirror; the error reaches the caller", () => {
    let armed = false;
    const off = onFlagChange("core.float32MatmulPrecision", (v) => {
      if (armed && v === "highest") throw new Error("listener bug");
    });
    try {
      const s = backends.flags({ core: { float32MatmulPrecision: "high" } });
      expect(backends.cuda.matmul.allowTf32).toBe(true);
      armed = true;
      expect(() => s[Symbol.dispose]()).toThrow("listener bug");
      armed = false;
      expect(getFloat32MatmulPrecision()).toBe("highest");
      expect(backends.cuda.matmul.allowTf32).toBe(false);
    } finally {
      off();
    }
  });

  it("a hook may unsubscribe itself while it is being called", () => {
    const calls: unknown[] = [];
    const off = onFlagChange("cudnn.benchmark", (v) => {
      calls.push(v);
      off();
    });
    {
      using _ = backends.cudnn.flags({ benchmark: true });
    }
    expect(calls).toEqual([true]);
    expect(backends.cudnn.benchmark).toBe(false);
  });
});

describe("flag names", () => {
  it("a name that is not a string is a FlagError, not a TypeError", () => {
    for (const bad of [{ toString: 1 }, Object.create(null), 5, null, undefined, Symbol("x")])
      expect(() => getFlag(bad as never)).toThrow(FlagError);
  });
});

/** max(x, 0) in float64, from the input's values. */
const reluRef = (x: Tensor) => Array.from(x.hostData() as Float32Array, (v) => Math.max(v, 0));

describe("flags defined while a task runs in its own frame", () => {
  it("a backend imported inside withFlags runs outside it, with its environment value", async () => {
    process.env.BP_TEST_LATE_FLAG = "0";
    await backends.withFlags({ cudnn: { benchmark: true } }, async () => {
      await new Promise((r) => setTimeout(r, 1));
      registerBackend(
        defineBackend({
          name: "late-frame-test",
          namespaces: ["lateFrameTest"],
          devices: ["cpu"],
          isAvailable: () => ({ available: true }),
          flags: {
            lateFrameTest: {
              enabled: { kind: "bool", default: true },
              fromEnv: { kind: "bool", default: true, env: "BP_TEST_LATE_FLAG" },
            },
          },
          kernels: [
            {
              op: "relu",
              name: "late-frame-relu",
              device: "cpu",
              dtypes: ["float32"],
              deterministic: true,
              priority: 1000,
              flags: ["lateFrameTest.enabled"],
              run: (p: UnaryParams) => reluCopy(p.x),
            },
          ],
        }),
      );
    });
    try {
      expect(getFlag("lateFrameTest.fromEnv")).toBe(false);
      const x = randn([7, 5]);
      const { result, calls } = backends.record(() => relu(x));
      expect(calls.map((c) => c.kernel)).toEqual(["late-frame-relu"]);
      expect(Array.from(result.hostData() as Float32Array)).toEqual(reluRef(x).map(Math.fround));
    } finally {
      // Off for the rest of the process: Bun runs this package's files in one process.
      setFlag("lateFrameTest.enabled", false);
    }
  });
});

/** A fresh float32 tensor holding max(x, 0). */
function reluCopy(x: Tensor): Tensor {
  const out = empty(x.shape, { dtype: "float32" });
  const src = x.hostData() as Float32Array; // contiguous here: the test's own input
  const dst = out.hostData() as Float32Array;
  for (let i = 0; i < src.length; i++) dst[i] = Math.max(src[i], 0);
  return out;
}

describe("record() nested in record()", () => {
  it("the outer record sees the inner record's calls, in order; a throw restores", () => {
    const shapes: [number, number, number][] = [
      [3, 4, 5],
      [2, 7, 3],
      [5, 1, 2],
    ];
    const mm = ([m, k, n]: [number, number, number]) => matmul(randn([m, k]), randn([k, n]));
    const outer = backends.record(() => {
      mm(shapes[0]);
      const inner = backends.record(() => mm(shapes[1]));
      expect(inner.calls.map((c) => c.shape)).toEqual(["2x7x3"]);
      mm(shapes[2]);
    });
    expect(outer.calls.map((c) => c.shape)).toEqual(shapes.map((s) => s.join("x")));
    expect(() =>
      backends.record(() => {
        mm(shapes[0]);
        throw new Error("body");
      }),
    ).toThrow("body");
    expect(backends.record(() => mm(shapes[1])).calls).toHaveLength(1);
  });

  it("across awaits, concurrent inner records stay apart and both reach the outer one", async () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const outer = await backends.record(async () => {
      const [a, b] = await Promise.all([
        backends.record(async () => {
          await sleep(3);
          matmul(randn([2, 3]), randn([3, 4]));
        }),
        backends.record(async () => {
          matmul(randn([5, 3]), randn([3, 2]));
          await sleep(6);
          matmul(randn([5, 3]), randn([3, 2]));
        }),
      ]);
      expect(a.calls.map((c) => c.shape)).toEqual(["2x3x4"]);
      expect(b.calls.map((c) => c.shape)).toEqual(["5x3x2", "5x3x2"]);
    });
    expect(outer.calls.map((c) => c.shape).sort()).toEqual(["2x3x4", "5x3x2", "5x3x2"]);
  });
});
