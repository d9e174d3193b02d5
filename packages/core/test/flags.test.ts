import {
  areDeterministicAlgorithmsEnabled,
  asyncScopesIsolated,
  backends,
  FlagError,
  getFlag,
  getFloat32MatmulPrecision,
  isDeterministicAlgorithmsWarnOnlyEnabled,
  onFlagChange,
  randn,
  setFloat32MatmulPrecision,
  UnknownNamespaceError,
  useDeterministicAlgorithms,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("flags", () => {
  it("have torch's defaults and can be set", () => {
    expect(backends.cudnn.benchmark).toBe(false);
    expect(backends.cudnn.benchmarkLimit).toBe(10);
    expect(backends.cudnn.enabled).toBe(true);
    expect(backends.cuda.matmul.allowTf32).toBe(false);
    expect(backends.cuda.matmul.allowFp16ReducedPrecisionReduction).toBe(true);
    backends.cudnn.benchmarkLimit = 3;
    expect(backends.cudnn.benchmarkLimit).toBe(3);
    backends.cudnn.benchmarkLimit = 10;
  });

  it("reject a wrong type or range with a FlagError naming the flag and what it takes", () => {
    expect(() => {
      Reflect.set(backends.cudnn, "benchmark", "yes");
    }).toThrow(FlagError);
    expect(() => {
      Reflect.set(backends.cudnn, "benchmark", "yes");
    }).toThrow(/cudnn\.benchmark must be a boolean, got "yes"/);
    expect(() => {
      Reflect.set(backends.cudnn, "benchmarkLimit", -1);
    }).toThrow(/integer in \[0, Infinity\]/);
    expect(() => {
      Reflect.set(backends.optEinsum, "strategy", "fastest");
    }).toThrow(/one of "auto", "auto-hq"/);
    expect(() => backends.cudnn.flags({ benchmarkk: true } as never)).toThrow(
      /cudnn has no flag benchmarkk/,
    );
    expect(backends.cudnn.benchmark).toBe(false);
  });

  it("unknown namespaces name the known ones; has() never throws", () => {
    expect(() => Reflect.get(backends, "mtia")).toThrow(UnknownNamespaceError);
    expect(() => Reflect.get(backends, "mtia")).toThrow(/known namespaces: .*cuda/);
    expect(backends.has("mtia")).toBe(false);
    expect(backends.has("cudnn")).toBe(true);
    expect(backends.has(undefined as never)).toBe(false);
    // `in` answers the same, for feature detection without try/catch.
    expect("mtia" in backends).toBe(false);
    expect("cudnn" in backends).toBe(true);
  });

  it("namespaces of missing plugins answer with the reason", () => {
    expect(backends.mps.isBuilt()).toBe(false);
    expect(backends.mps.isAvailable()).toBe(false);
    expect(backends.mps.status().reason).toBe(
      "@backplane/backend-mps is not installed (npm i @backplane/backend-mps, then import it)",
    );
    expect(backends.cpu.isAvailable()).toBe(true);
  });

  it("members a backend package adds are typed, and name that package until it is imported", () => {
    // Deno runs every test file in one process: where another file loaded the package, the
    // member is the package's own.
    const loaded = backends.registered();
    const x = randn([1, 1, 4, 4]);
    const w = randn([1, 1, 3, 3]);
    if (!loaded.includes("nnpack")) {
      expect(() => backends.nnpack.algorithmFor(x, w)).toThrow(
        "backends.nnpack.algorithmFor needs @backplane/backend-nnpack (npm i @backplane/backend-nnpack, then import it)",
      );
      expect(() => backends.nnpack.transformCacheInfo()).toThrow(UnknownNamespaceError);
    }
    if (!loaded.includes("cudnn"))
      expect(() => backends.cudnn.plans()).toThrow(
        "backends.cudnn.plans needs @backplane/backend-cudnn (npm i @backplane/backend-cudnn, then import it)",
      );
    if (!loaded.includes("webgpu"))
      expect(() => backends.webgpu.poolStats()).toThrow(UnknownNamespaceError);
    if (!loaded.includes("openmp")) {
      expect(() => backends.xeon.runCpu(["app.js"])).toThrow(
        "backends.xeon.runCpu needs @backplane/backend-openmp (npm i @backplane/backend-openmp, then import it)",
      );
      expect(backends.openmp.pool()).toBeUndefined();
    }
    // torch returns None without opt_einsum: undefined here, and isAvailable() says so.
    if (!loaded.includes("opt-einsum")) {
      expect(backends.optEinsum.getOptEinsum()).toBeUndefined();
      expect(backends.optEinsum.isAvailable()).toBe(false);
    }
    x.dispose();
    w.dispose();
  });
});

describe("sync scopes", () => {
  it("restore on dispose, on throw, and nest", () => {
    {
      using _a = backends.cudnn.flags({ benchmark: true });
      expect(backends.cudnn.benchmark).toBe(true);
      {
        using _b = backends.cudnn.flags({ benchmark: false, deterministic: true });
        expect(backends.cudnn.benchmark).toBe(false);
        expect(backends.cudnn.deterministic).toBe(true);
      }
      expect(backends.cudnn.benchmark).toBe(true);
      expect(backends.cudnn.deterministic).toBe(false);
    }
    expect(backends.cudnn.benchmark).toBe(false);
    expect(() => {
      using _ = backends.flags({
        cudnn: { benchmark: true },
        cuda: { matmul: { allowFp16ReducedPrecisionReduction: false } },
      });
      expect(backends.cuda.matmul.allowFp16ReducedPrecisionReduction).toBe(false);
      throw new Error("boom");
    }).toThrow("boom");
    expect(backends.cudnn.benchmark).toBe(false);
    expect(backends.cuda.matmul.allowFp16ReducedPrecisionReduction).toBe(true);
  });

  it("restore only their own keys: a set inside on another key stays (as torch's flags())", () => {
    {
      using _ = backends.cudnn.flags({ benchmark: true });
      backends.cuda.matmul.allowTf32 = true; // another key: not the scope's
      backends.cudnn.benchmark = true; // the scope's key: restored on exit
    }
    expect(backends.cuda.matmul.allowTf32).toBe(true);
    expect(backends.cudnn.benchmark).toBe(false);
    backends.cuda.matmul.allowTf32 = false;
    {
      using _ = backends.cudnn.flags({});
      backends.cudnn.deterministic = true;
    }
    expect(backends.cudnn.deterministic).toBe(true);
    backends.cudnn.deterministic = false;
  });

  it("mkl.verbose restores the previous level instead of forcing OFF", () => {
    using _outer = backends.mkl.verbose(backends.mkl.VERBOSE_ON);
    {
      using _inner = backends.mkl.verbose(backends.mkl.VERBOSE_OFF);
      expect(backends.mkl.verbose).toBeInstanceOf(Function);
      expect(getFlag("mkl.verbose")).toBe(0);
    }
    expect(getFlag("mkl.verbose")).toBe(1);
    expect(() => backends.mkldnn.verbose(7)).toThrow(FlagError);
  });
});

describe("async scopes", () => {
  it("withFlags holds across awaits and restores after", async () => {
    const seen = await backends.withFlags({ cudnn: { deterministic: true } }, async () => {
      await sleep(1);
      return backends.cudnn.deterministic;
    });
    expect(seen).toBe(true);
    expect(backends.cudnn.deterministic).toBe(false);
  });

  it("restores after a rejected callback", async () => {
    await expect(
      backends.withFlags({ cudnn: { benchmark: true } }, async () => {
        await sleep(1);
        throw new Error("nope");
      }),
    ).rejects.toThrow("nope");
    expect(backends.cudnn.benchmark).toBe(false);
  });

  it("1,000 concurrent tasks each see only their own values", async () => {
    expect(asyncScopesIsolated).toBe(true);
    const tasks = Array.from({ length: 1000 }, (_, i) =>
      backends.withFlags({ cudnn: { benchmarkLimit: i, benchmark: i % 2 === 0 } }, async () => {
        const wrong: number[] = [];
        for (let step = 0; step < 5; step++) {
          if (backends.cudnn.benchmarkLimit !== i || backends.cudnn.benchmark !== (i % 2 === 0))
            wrong.push(step);
          await (step % 2 ? sleep(Math.floor(Math.random() * 3)) : Promise.resolve());
          // A nested sync scope inside one task must not leak to the others.
          using _ = backends.cudnn.flags({ deterministic: i % 3 === 0 });
          if (backends.cudnn.deterministic !== (i % 3 === 0)) wrong.push(100 + step);
        }
        return wrong;
      }),
    );
    const results = await Promise.all(tasks);
    expect(results.flat()).toEqual([]);
    expect(backends.cudnn.benchmarkLimit).toBe(10);
    expect(backends.cudnn.deterministic).toBe(false);
  });
});

describe("global switches", () => {
  it("deterministic mode and warnOnly", () => {
    expect(areDeterministicAlgorithmsEnabled()).toBe(false);
    useDeterministicAlgorithms(true, { warnOnly: true });
    expect(areDeterministicAlgorithmsEnabled()).toBe(true);
    expect(isDeterministicAlgorithmsWarnOnlyEnabled()).toBe(true);
    useDeterministicAlgorithms(false);
    expect(isDeterministicAlgorithmsWarnOnlyEnabled()).toBe(false);
    expect(() => useDeterministicAlgorithms("on" as never)).toThrow(/mode must be a boolean/);
  });

  it("float32 matmul precision and cuda.matmul.allowTf32 are one setting (as in torch)", () => {
    expect(getFloat32MatmulPrecision()).toBe("highest");
    setFloat32MatmulPrecision("high");
    expect(backends.cuda.matmul.allowTf32).toBe(true);
    backends.cuda.matmul.allowTf32 = false;
    expect(getFloat32MatmulPrecision()).toBe("highest");
    expect(() => setFloat32MatmulPrecision("low" as never)).toThrow(FlagError);
  });

  it("a scope over one half of the precision/allowTf32 pair gives back the user's precision", () => {
    setFloat32MatmulPrecision("medium");
    try {
      {
        using _ = backends.cuda.flags({ matmul: { allowTf32: false } });
        expect(getFloat32MatmulPrecision()).toBe("highest");
      }
      expect(getFloat32MatmulPrecision()).toBe("medium");
      expect(backends.cuda.matmul.allowTf32).toBe(true);
      {
        using _ = backends.core.flags({ float32MatmulPrecision: "highest" });
        expect(backends.cuda.matmul.allowTf32).toBe(false);
      }
      expect(getFloat32MatmulPrecision()).toBe("medium");
      // Out of order: the outer scope's saved pair passes to the inner one.
      const outer = backends.cuda.flags({ matmul: { allowTf32: false } });
      const inner = backends.core.flags({ float32MatmulPrecision: "high" });
      outer.restore();
      expect(getFloat32MatmulPrecision()).toBe("high");
      inner.restore();
      expect(getFloat32MatmulPrecision()).toBe("medium");
      expect(backends.cuda.matmul.allowTf32).toBe(true);
    } finally {
      setFloat32MatmulPrecision("highest");
    }
  });

  it("a scope setting both halves of the pair must agree, else FlagError and nothing changes", () => {
    {
      using _ = backends.flags({
        core: { float32MatmulPrecision: "medium" },
        cuda: { matmul: { allowTf32: true } },
      });
      expect(getFloat32MatmulPrecision()).toBe("medium");
      expect(backends.cuda.matmul.allowTf32).toBe(true);
    }
    expect(getFloat32MatmulPrecision()).toBe("highest");
    const both = {
      core: { float32MatmulPrecision: "medium" },
      cuda: { matmul: { allowTf32: false } },
    } as const;
    expect(() => backends.flags(both)).toThrow(/contradict each other.*set only one of them/);
    expect(() => backends.withFlags(both, () => 0)).toThrow(FlagError);
    expect(getFloat32MatmulPrecision()).toBe("highest");
    expect(backends.cuda.matmul.allowTf32).toBe(false);
  });

  it("a scope whose change hook throws leaves every flag as it was", () => {
    const seen: unknown[] = [];
    const offSeen = onFlagChange("cudnn.benchmark", (v) => seen.push(v));
    const off = onFlagChange("cudnn.benchmark", (v) => {
      if (v === true) throw new Error("hook refused");
    });
    try {
      expect(() => backends.cudnn.flags({ benchmark: true, benchmarkLimit: 3 })).toThrow(
        "hook refused",
      );
      expect(backends.cudnn.benchmark).toBe(false);
      expect(backends.cudnn.benchmarkLimit).toBe(10);
      expect(seen).toEqual([true, false]); // the hooks heard the rollback too
    } finally {
      off();
      offSeen();
    }
  });

  it("change hooks fire on set and on scope exit", () => {
    const seen: unknown[] = [];
    const off = onFlagChange("nnpack.enabled", (v) => seen.push(v));
    backends.nnpack.setFlags(false);
    {
      using _ = backends.nnpack.flags({ enabled: true });
    }
    backends.nnpack.enabled = true;
    off();
    backends.nnpack.enabled = false;
    backends.nnpack.enabled = true;
    expect(seen).toEqual([false, true, false, true]);
  });
});
