/**
 * The observability API on failing hooks and odd arguments: a verbose sink or log handler
 * that throws must not fail the op (whose result would be lost and never freed); a task
 * that outlives its record() must not keep adding to the list returned; formatCalls and
 * allocateStorage refuse bad input with typed errors; runtime() and cpuCapabilityInfo()
 * cannot be changed for every other caller.
 */
import {
  ArgumentError,
  backends,
  cpuCapabilityInfo,
  DeviceError,
  formatCalls,
  type KernelCall,
  matmul,
  memoryStats,
  randn,
  record,
  runtime,
  setLogHandler,
  setVerboseSink,
  type Tensor,
  useDeterministicAlgorithms,
} from "@backplane/core";
import {
  allocateStorage,
  defineBackend,
  defineOp,
  dispatch,
  type OpParams,
  registerBackend,
} from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

/** A @ B in float64, row-major, from the tensors' values. */
function product(a: Tensor, b: Tensor): number[] {
  const [m, k] = a.shape;
  const n = b.shape[1];
  const [x, y] = [a.toFloat64(), b.toFloat64()];
  const out: number[] = [];
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s += x[i * k + t] * y[t * n + j];
      out.push(s);
    }
  return out;
}

const liveBuffers = () => memoryStats("cpu").liveBuffers;

describe("hooks that throw", () => {
  it("a throwing verbose sink neither fails the op nor leaks its result", () => {
    const a = randn([5, 7], { dtype: "float64", seed: 31 });
    const b = randn([7, 3], { dtype: "float64", seed: 32 });
    const warnings: string[] = [];
    const prevLog = setLogHandler((_, m) => warnings.push(m));
    const prevSink = setVerboseSink(() => {
      throw new Error("sink is down");
    });
    const before = liveBuffers();
    try {
      using _ = backends.flags({ core: { verbose: true } });
      const c = matmul(a, b);
      const want = product(a, b);
      const got = Array.from(c.toFloat64());
      for (let i = 0; i < want.length; i++) expect(got[i]).toBeCloseTo(want[i], 12);
      c.dispose();
    } finally {
      setVerboseSink(prevSink);
      setLogHandler(prevLog);
    }
    // Before the fix the op threw the sink's error and its output stayed allocated.
    expect(liveBuffers()).toBe(before);
    expect(warnings.some((m) => m.includes("sink is down"))).toBe(true);
  });

  it("a throwing log handler does not fail an op that warns", () => {
    interface P extends OpParams {
      x: Tensor;
    }
    const op = defineOp({
      name: "hunt3RacyDouble",
      prepare: (x: Tensor): P => ({ x, deviceType: "cpu", dtype: x.dtype }),
      shapeKey: (p: P) => p.x.shape.join("x"),
    });
    registerBackend(
      defineBackend({
        name: "hunt3-racy",
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        kernels: [
          {
            op: "hunt3RacyDouble",
            name: "racyDouble",
            device: "cpu",
            dtypes: ["float64"],
            deterministic: false,
            priority: 0,
            run: (p: P) => p.x.clone(),
          },
        ],
      }),
    );
    const x = randn([4], { dtype: "float64", seed: 33 });
    const prevLog = setLogHandler(() => {
      throw new Error("logger is down");
    });
    useDeterministicAlgorithms(true, { warnOnly: true });
    const before = liveBuffers();
    try {
      // Warns once (nondeterministic kernel allowed by warnOnly) before it runs.
      const y = dispatch(op, op.prepare(x)) as Tensor;
      expect(Array.from(y.toFloat64())).toEqual(Array.from(x.toFloat64()));
      y.dispose();
    } finally {
      useDeterministicAlgorithms(false);
      setLogHandler(prevLog);
    }
    expect(liveBuffers()).toBe(before);
  });
});

describe("record()", () => {
  const a = randn([3, 4], { seed: 34 });
  const b = randn([4, 2], { seed: 35 });
  const mm = () => matmul(a, b).dispose();

  it("stops collecting when fn returns: a timer it started adds nothing", async () => {
    let fired = 0;
    const r = record(() => {
      const h = setInterval(() => {
        mm();
        if (++fired === 3) clearInterval(h);
      }, 1);
      mm();
    });
    expect(r.calls.length).toBe(1);
    await new Promise<void>((done) => {
      const wait = setInterval(() => {
        if (fired < 3) return;
        clearInterval(wait);
        done();
      }, 2);
    });
    // Before the fix the list grew with every call of the timer, after record() returned.
    expect(r.calls.length).toBe(1);
  });

  it("an inner record() that outlives its outer one leaves the outer list as returned", async () => {
    let inner: Promise<{ calls: KernelCall[] }> | undefined;
    const outer = await record(async () => {
      inner = record(async () => {
        await new Promise((r) => setTimeout(r, 5));
        mm();
      });
      mm();
    });
    expect(outer.calls.length).toBe(1);
    const done = await (inner as Promise<{ calls: KernelCall[] }>);
    expect(done.calls.map((c) => c.op)).toEqual(["matmul"]);
    expect(outer.calls.length).toBe(1);
  });

  it("a record() whose fn throws still nests and closes", () => {
    const outer = record(() => {
      expect(() =>
        record(() => {
          mm();
          throw new RangeError("inside");
        }),
      ).toThrow(RangeError);
      mm();
    });
    expect(outer.calls.length).toBe(2);
  });

  it("formatCalls refuses call objects without their fields with an ArgumentError", () => {
    const { calls } = record(mm);
    expect(formatCalls(calls)).toContain("matmul");
    for (const bad of [[{}], [{ ...calls[0], ms: "1" }], [{ ...calls[0], op: 3 }]])
      expect(() => formatCalls(bad as KernelCall[])).toThrow(ArgumentError);
  });
});

describe("shared answers and device names", () => {
  it("runtime() and cpuCapabilityInfo() cannot be changed for later callers", () => {
    const rt = runtime();
    const simd = rt.wasmSimd;
    expect(() => {
      (rt as { wasmSimd: boolean }).wasmSimd = !simd;
    }).toThrow(TypeError);
    expect(runtime().wasmSimd).toBe(simd);
    const cpu = cpuCapabilityInfo();
    const capability = cpu.capability;
    const features = cpu.features.length;
    expect(() => {
      (cpu as { capability: string }).capability = "NONSENSE";
    }).toThrow(TypeError);
    expect(() => cpu.features.push("nonsense")).toThrow(TypeError);
    expect(cpuCapabilityInfo().capability).toBe(capability);
    expect(cpuCapabilityInfo().features.length).toBe(features);
  });

  it("allocateStorage counts a device as memoryStats() names it, and refuses a bad name", () => {
    const before = memoryStats("cpu");
    const s = allocateStorage("cpu:0", 96);
    const during = memoryStats("cpu");
    expect(during.allocatedBytes - before.allocatedBytes).toBe(96);
    expect(during.liveBuffers - before.liveBuffers).toBe(1);
    expect(Object.keys(memoryStats())).not.toContain("cpu:0");
    s.release();
    expect(memoryStats("cpu").allocatedBytes).toBe(before.allocatedBytes);
    expect(() => allocateStorage(5 as unknown as string, 8)).toThrow(DeviceError);
  });
});
