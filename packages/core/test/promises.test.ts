/**
 * The backends object keeps its promises (issue 16): no silent typos, no clobbered
 * functions, scopes that restore only their own keys in any closing order, every seed
 * name, inert flags that say so, a record of which kernel ran, and strict mode.
 */

import {
  ArgumentError,
  BackplaneError,
  backends,
  canUseFlashAttention,
  FallbackError,
  FlagError,
  formatCalls,
  fromTorchName,
  getFlag,
  kernelPriority,
  type LogHandler,
  matmul,
  onFlagChange,
  randn,
  SDPAParams,
  SDPBackend,
  scaledDotProductAttention,
  sdpaRefusals,
  setFloat32MatmulPrecision,
  setLogHandler,
  setVerboseSink,
  TORCH_NAMES,
  tensor,
  UnknownFlagError,
  useDeterministicAlgorithms,
} from "@backplane/core";
import {
  defineBackend,
  flagChoices,
  type MatmulParams,
  registerBackend,
} from "@backplane/core/backend";
import { builtinModule, host } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";

/** Collects warnings given through the log hook while fn runs. */
function warningsOf(fn: () => void): string[] {
  const seen: string[] = [];
  const prev: LogHandler = setLogHandler((_, m) => seen.push(m));
  try {
    fn();
  } finally {
    setLogHandler(prev);
  }
  return seen;
}

describe("sealed namespaces", () => {
  it("a misspelt flag, read or written, is an UnknownFlagError with the closest name", () => {
    const write = () => {
      Reflect.set(backends.cudnn, "benchmrk", true);
    };
    expect(write).toThrow(UnknownFlagError);
    expect(write).toThrow(/cudnn\.benchmrk: no such flag; did you mean benchmark\?/);
    expect(() => Reflect.get(backends.cudnn, "benchmrk")).toThrow(/did you mean benchmark\?/);
    try {
      Reflect.set(backends.cudnn, "benchmrk", true);
    } catch (e) {
      expect((e as UnknownFlagError).namespace).toBe("cudnn");
      expect((e as UnknownFlagError).suggestion).toBe("benchmark");
    }
    expect(() => {
      Reflect.set(backends.cuda.matmul, "foo", 1);
    }).toThrow(/backends\.cuda\.matmul\.foo: no such flag/);
    expect(() => Reflect.get(backends.cuda.matmul, "allow_tf32")).toThrow(
      /did you mean allowTf32\?/,
    );
    expect(Object.keys(backends.cudnn)).not.toContain("benchmrk");
    expect(() => backends.cudnn.flags({ benchmrk: true } as never)).toThrow(
      /did you mean benchmark\?/,
    );
    expect(() => backends.withFlags({ cudnn: { benchmrk: true } } as never, () => 0)).toThrow(
      UnknownFlagError,
    );
    expect(() => backends.withFlags({ cudnnn: { benchmark: true } } as never, () => 0)).toThrow(
      /did you mean cudnn\?/,
    );
    expect(() => Reflect.get(backends, "cudnnn")).toThrow(/did you mean backends\.cudnn\?/);
  });

  it("names of Object.prototype are unknown flags, not its members", () => {
    for (const name of ["toString", "constructor", "hasOwnProperty", "core.toString"])
      expect(() => getFlag(name), name).toThrow(UnknownFlagError);
    expect(() => backends.cudnn.flags({ constructor: {} } as never)).toThrow(
      /backends.cudnn has no flag constructor/,
    );
    expect(() => backends.cudnn.flags({ toString: true } as never)).toThrow(UnknownFlagError);
    expect(() => backends.cuda.flags({ matmul: { valueOf: true } } as never)).toThrow(
      /backends.cuda has no flag matmul.valueOf/,
    );
  });

  it("functions, constants and groups cannot be assigned over", () => {
    expect(() => {
      Reflect.set(backends.mkl, "verbose", 1);
    }).toThrow(FlagError);
    expect(() => {
      Reflect.set(backends.mkl, "verbose", 1);
    }).toThrow(/backends\.mkl\.verbose cannot be assigned: it is a function/);
    expect(typeof backends.mkl.verbose).toBe("function");
    expect(() => {
      Reflect.set(backends.mkl, "VERBOSE_ON", 3);
    }).toThrow(/a constant/);
    expect(() => {
      Reflect.set(backends.cuda, "matmul", {});
    }).toThrow(/a group of flags/);
    expect(() => {
      Reflect.set(backends.cuda, "isAvailable", () => true);
    }).toThrow(FlagError);
    expect(() => Object.defineProperty(backends.cudnn, "x", { value: 1 })).toThrow(FlagError);
    expect(() => Reflect.deleteProperty(backends.cudnn, "benchmark")).toThrow(FlagError);
    expect(backends.cuda.isAvailable()).toBe(false);
  });

  it("values are validated when set; nothing is stored half-way", () => {
    expect(() => backends.cuda.sdpKernel({ enableFlash: "no" } as never)).toThrow(ArgumentError);
    expect(() => backends.cuda.sdpKernel({ enableFlsh: false } as never)).toThrow(/unknown option/);
    expect(() => backends.cuda.sdpKernel(null as never)).toThrow(ArgumentError);
    expect(backends.cuda.flashSdpEnabled()).toBe(true);
    expect(() =>
      backends.nn.attention.sdpaKernel([SDPBackend.MATH], { setPriority: "yes" } as never),
    ).toThrow(/setPriority must be a boolean/);
    // An empty list is torch's too: every backend off for the scope (closed here at once).
    backends.nn.attention.sdpaKernel([])[Symbol.dispose]();
    const q = randn([2, 3, 4]);
    expect(() => scaledDotProductAttention(q, q, q, { enableGqa: "yes" } as never)).toThrow(
      /enableGqa must be a boolean, got "yes"/,
    );
    expect(() => scaledDotProductAttention(q, q, q, { isCausal: 1 } as never)).toThrow(
      ArgumentError,
    );
    // A multi-key scope with one bad value stores none of them.
    expect(() =>
      backends.flags({ cudnn: { benchmark: true, benchmarkLimit: -1 } } as never),
    ).toThrow(FlagError);
    expect(backends.cudnn.benchmark).toBe(false);
    for (const bad of [null, undefined, Number.NaN, "1", 1.5, {}]) {
      expect(() => {
        Reflect.set(backends.cudnn, "benchmarkLimit", bad);
      }).toThrow(FlagError);
      expect(() => backends.mkl.verbose(bad as never)).toThrow(FlagError);
      expect(() => backends.openmp.setNumThreads(bad as never)).toThrow(BackplaneError);
      expect(() => backends.mha.setFastpathEnabled(bad as never)).toThrow(FlagError);
      expect(() => backends.nnpack.setFlags(bad as never)).toThrow(FlagError);
      if (bad !== undefined)
        // undefined asks for the current value, as in torch
        expect(() => backends.cuda.preferredBlasLibrary(bad as never)).toThrow(BackplaneError);
      expect(() => backends.describe(bad as never)).toThrow(BackplaneError);
    }
    expect(backends.cudnn.benchmarkLimit).toBe(10);
    for (const bad of [null, 1, "x", { warnonly: true }, { warnOnly: "yes" }])
      expect(() => useDeterministicAlgorithms(true, bad as never)).toThrow(ArgumentError);
    expect(backends.core.deterministic).toBe(false);
  });

  it("the precision switch does not warn that its CUDA mirror is inert", () => {
    const seen = warningsOf(() => {
      setFloat32MatmulPrecision("high");
      setFloat32MatmulPrecision("highest");
    });
    expect(seen).toEqual([]);
  });

  it("cufftPlanCache with a bad index or member raises", () => {
    const cache = backends.cuda.cufftPlanCache;
    expect(cache[0].maxSize).toBe(4096);
    expect(() => cache[-1]).toThrow(ArgumentError);
    expect(() => cache[1.5]).toThrow(ArgumentError);
    expect(() => Reflect.get(cache, "foo")).toThrow(/no such member/);
    expect(() => Reflect.get(cache, "max_size")).toThrow(/did you mean maxSize\?/);
    expect(() => {
      cache.maxSize = -2;
    }).toThrow(ArgumentError);
    expect(() => {
      Reflect.set(cache, "size", 3);
    }).toThrow(/read-only/);
  });
});

describe("scopes restore only their own keys", () => {
  it("a key set inside on another flag stays; the scope's own key comes back", () => {
    {
      using _ = backends.cudnn.flags({ benchmark: true });
      backends.cuda.matmul.allowTf32 = true;
    }
    expect(backends.cuda.matmul.allowTf32).toBe(true);
    expect(backends.cudnn.benchmark).toBe(false);
    backends.cuda.matmul.allowTf32 = false;
  });

  it("closing out of order: each scope's saved values are put back, none leaks", () => {
    const a = backends.cudnn.flags({ benchmark: true, benchmarkLimit: 3 });
    const c = backends.cudnn.flags({ benchmark: false, deterministic: true });
    a.restore(); // not the innermost: c's values stay in force
    expect(backends.cudnn.benchmark).toBe(false);
    expect(backends.cudnn.deterministic).toBe(true);
    expect(backends.cudnn.benchmarkLimit).toBe(10); // a's own key, which c did not touch
    c.restore();
    expect(backends.cudnn.benchmark).toBe(false);
    expect(backends.cudnn.deterministic).toBe(false);
    expect(backends.cudnn.benchmarkLimit).toBe(10);
  });

  it("random open/close orders over flags and kernel priorities always end where they began", () => {
    let seed = 12345;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const before = JSON.stringify(backends.cudnn.values());
    for (let round = 0; round < 200; round++) {
      const open: { restore(): void }[] = [];
      for (let i = 0; i < 6; i++) {
        const kind = rnd(3);
        if (kind === 0) open.push(backends.cudnn.flags({ benchmark: rnd(2) === 0 }));
        else if (kind === 1) open.push(backends.cudnn.flags({ benchmarkLimit: rnd(50) }));
        else open.push(kernelPriority("matmul", ["reference"]));
        if (rnd(3) === 0 && open.length > 0) open.splice(rnd(open.length), 1)[0].restore();
      }
      while (open.length > 0) open.splice(rnd(open.length), 1)[0].restore();
      expect(JSON.stringify(backends.cudnn.values())).toBe(before);
    }
  });
});

describe("every name in the seeds", () => {
  it("cuda.SDPBackend has PyTorch's members", () => {
    expect(Object.keys(backends.cuda.SDPBackend)).toEqual([
      "ERROR",
      "MATH",
      "FLASH_ATTENTION",
      "EFFICIENT_ATTENTION",
      "CUDNN_ATTENTION",
      "OVERRIDEABLE",
    ]);
    expect(backends.cuda.SDPBackend).toBe(SDPBackend);
  });

  it("quantized.supportedEngines lists what is present; other engines are refused", () => {
    expect(backends.quantized.supportedEngines).toEqual(["none"]);
    expect(() => {
      Reflect.set(backends.quantized, "engine", "fbgemm");
    }).toThrow(/one of "none", got "fbgemm"/);
    expect(() => {
      Reflect.set(backends.quantized, "supportedEngines", []);
    }).toThrow(FlagError);
    registerBackend(
      defineBackend({
        name: "test-qengine",
        packageName: "test-qengine-pkg",
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        provides: { "quantized.engine": ["qtest"] },
        reads: ["quantized.engine"],
      }),
    );
    expect(backends.quantized.supportedEngines).toEqual(["none", "qtest"]);
    expect(flagChoices("quantized.engine")).toContain("qtest");
    {
      using _ = backends.quantized.flags({ engine: "qtest" as "none" });
      expect(backends.quantized.engine).toBe("qtest");
    }
    expect(backends.quantized.engine).toBe("none");
  });

  it("mps.isMacosOrNewer is false where MPS is not built, and checks its arguments", () => {
    expect(backends.mps.isMacosOrNewer(14, 0)).toBe(false);
    expect(() => backends.mps.isMacosOrNewer(Number.NaN, 0)).toThrow(ArgumentError);
    expect(() => backends.mps.isMacosOrNewer(14, undefined as never)).toThrow(ArgumentError);
  });

  it("version() is an integer as in torch, versionString() the text", () => {
    expect(backends.cudnn.version()).toBeUndefined(); // no backend-cudnn here
    registerBackend(
      defineBackend({
        name: "test-versioned",
        namespaces: ["testVersioned"],
        devices: ["cpu"],
        version: () => "0.6.2",
        isAvailable: () => ({ available: false, reason: "test backend" }),
      }),
    );
    expect(backends.namespace("testVersioned").version()).toBe(602);
    expect(backends.namespace("testVersioned").versionString()).toBe("0.6.2");
  });

  it("version() and capability() of a backend whose queries throw answer undefined, as status()", () => {
    const boom = () => {
      throw new TypeError("libx.so has no symbol x_version");
    };
    registerBackend(
      defineBackend({
        name: "test-throwing-queries",
        namespaces: ["testThrowingQueries"],
        devices: ["cpu"],
        version: boom,
        versionNumber: boom,
        capability: boom,
        isAvailable: () => ({ available: true }),
      }),
    );
    const ns = backends.namespace("testThrowingQueries");
    expect(ns.status().version).toBeUndefined();
    expect(ns.version()).toBeUndefined();
    expect(ns.versionString()).toBeUndefined();
    expect(ns.capability()).toBeUndefined();
  });

  it("TORCH_NAMES maps every torch name of the seeds and API.md, and each target exists", () => {
    const g = host;
    const read = (rel: string): string | undefined => {
      try {
        const url = new URL(rel, import.meta.url);
        return g.Deno
          ? g.Deno.readTextFileSync(url)
          : builtinModule<typeof import("node:fs")>("node:fs")?.readFileSync(url, "utf8");
      } catch {
        return undefined;
      }
    };
    const listed = read("../../../docs/design/torch-names.txt") as string;
    const names = new Set(listed.split("\n").filter(Boolean));
    // Where the seeds are at hand (a development checkout), the list must match them.
    const fs = g.Deno ? undefined : builtinModule<typeof import("node:fs")>("node:fs");
    const seedDir = new URL("../../../../shared/seeds/", import.meta.url);
    if (fs?.existsSync(seedDir)) {
      const texts = fs
        .readdirSync(seedDir)
        .map((f: string) => fs.readFileSync(new URL(f, seedDir), "utf8"))
        .concat(read("../../../docs/design/API.md") as string);
      for (const t of texts)
        for (const m of t.matchAll(
          /torch\.(?:backends|nn\.attention)\.[A-Za-z0-9_.]*[A-Za-z0-9_]/g,
        ))
          expect(names.has(m[0]), `${m[0]} is in docs/design/torch-names.txt`).toBe(true);
    }
    for (const n of names)
      expect(fromTorchName(n), n).toMatch(/^(backends|nn)\.|^[a-z][A-Za-z0-9]+$/);
    const core = { backends, nn: backends.nn } as Record<string, unknown>;
    for (const [torch, ours] of Object.entries(TORCH_NAMES)) {
      if (!ours.includes(".")) continue; // a top-level export; api-walk checks those
      let cur: unknown = core;
      for (const part of ours.split(".")) {
        expect(cur !== null && part in Object(cur), `${torch} -> ${ours}`).toBe(true);
        cur = (cur as Record<string, unknown>)[part];
      }
    }
  });
});

describe("inert flags say so", () => {
  it("describe() tells type, default, value, torch name, readers and whether they are loaded", () => {
    const d = backends.describe("quantized.engine");
    expect(d).toMatchObject({
      name: "quantized.engine",
      default: "none",
      torch: "torch.backends.quantized.engine",
    });
    expect(backends.describe("torch.backends.cudnn.allow_tf32")).toMatchObject({
      name: "cudnn.allowTf32",
      type: "boolean",
      default: true,
      readBy: [{ package: "@backplane/backend-cudnn", loaded: false }],
      inert: true,
    });
    expect(backends.describe("backends.core.deterministic").inert).toBe(false);
    expect(backends.describe("mkldnn.verbose").env).toEqual(["ONEDNN_VERBOSE", "DNNL_VERBOSE"]);
    expect(() => backends.describe("cudnn.benchmrk")).toThrow(/did you mean/);
  });

  it("a log handler or verbose sink that is not a function is refused when set", () => {
    expect(() => setLogHandler(5 as never)).toThrow(
      /setLogHandler: the handler must be a function/,
    );
    expect(() => setVerboseSink("x" as never)).toThrow(
      /setVerboseSink: the sink must be a function/,
    );
    expect(() => setVerboseSink(undefined as never)).toThrow(ArgumentError);
    // Nothing was replaced: warnings and traces still work.
    expect(warningsOf(() => setLogHandler(null))).toEqual([]);
    const lines: string[] = [];
    const prev = setVerboseSink((l) => lines.push(l));
    try {
      using _ = backends.flags({ core: { verbose: true } });
      matmul(tensor([[1]]), tensor([[2]]));
    } finally {
      setVerboseSink(prev);
    }
    expect(lines).toHaveLength(1);
  });

  it("setting a flag nothing reads warns once through the log hook", () => {
    const seen = warningsOf(() => {
      backends.xnnpack.enabled = true;
      backends.xnnpack.enabled = false;
      using _ = backends.xnnpack.flags({ enabled: true });
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatch(/xnnpack\.enabled was set, but no Backplane package reads it/);
    const cudnn = warningsOf(() => {
      using _ = backends.cudnn.flags({ rnn: { fp32Precision: "ieee" } });
    });
    expect(cudnn[0]).toMatch(/@backplane\/backend-cudnn\) is not loaded/);
  });

  it("optEinsum.enabled is true only when the plugin is registered", () => {
    expect(getFlag("optEinsum.enabled")).toBe(true);
    expect(backends.optEinsum.enabled).toBe(backends.optEinsum.isAvailable());
  });
});

describe("which kernel ran", () => {
  it("record() returns every call: op, kernel, backend, device, time", () => {
    const a = randn([5, 3]);
    const c = randn([3, 7]);
    const { result, calls } = backends.record(() => matmul(a, c));
    expect(result.shape).toEqual([5, 7]);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ op: "matmul", device: "cpu", dtype: "float32" });
    expect(typeof calls[0].kernel).toBe("string");
    expect(calls[0].ms).toBeGreaterThanOrEqual(0);
    expect(formatCalls(calls)).toMatch(/^op\s+kernel\s+device/);
    // Outside the scope nothing is recorded.
    matmul(a, c);
    expect(calls).toHaveLength(1);
    expect(() => formatCalls(null as never)).toThrow(/calls must be the list record\(\) returns/);
    expect(() => formatCalls([null] as never)).toThrow(ArgumentError);
  });

  it("canUse*Attention and sdpaRefusals check their arguments", () => {
    const q = randn([1, 2, 4, 8]);
    const params = new SDPAParams(q, q, q);
    expect(typeof canUseFlashAttention(params)).toBe("boolean");
    expect(() => canUseFlashAttention(null as never)).toThrow(
      /canUseFlashAttention: params must be an SDPAParams/,
    );
    expect(() => canUseFlashAttention(params, null as never)).toThrow(ArgumentError);
    expect(() => canUseFlashAttention(params, { debgu: true } as never)).toThrow(/unknown option/);
    expect(() => sdpaRefusals(SDPBackend.MATH, null as never)).toThrow(
      /sdpaRefusals: params must be an SDPAParams/,
    );
    expect(() => sdpaRefusals("FLASH" as never, params)).toThrow(/unknown backend "FLASH"/);
    expect(sdpaRefusals(SDPBackend.MATH, params)).toEqual([]);
  });

  it("concurrent async records each see only their own calls", async () => {
    const x = randn([4, 4]);
    const task = (n: number) =>
      backends.record(async () => {
        for (let i = 0; i < n; i++) {
          await new Promise((r) => setTimeout(r, 1));
          matmul(x, x);
        }
      });
    const [r1, r2] = await Promise.all([task(3), task(5)]);
    expect(r1.calls).toHaveLength(3);
    expect(r2.calls).toHaveLength(5);
  });

  it("strict mode turns a silent fallback from the kernel the user asked for into FallbackError", () => {
    registerBackend(
      defineBackend({
        name: "test-square-only",
        devices: ["cpu"],
        isAvailable: () => ({ available: true }),
        kernels: [
          {
            op: "matmul",
            name: "square-only",
            device: "cpu",
            dtypes: ["float32"],
            deterministic: true,
            priority: -10,
            supports: (p: MatmulParams) =>
              p.a.shape[0] === p.a.shape[1] ? true : "takes square matrices only",
            run: () => {
              throw new Error("square-only must not run in this test");
            },
          },
        ],
      }),
    );
    const a = tensor([1, 2, 3, 4, 5, 6], { shape: [2, 3] });
    const c = tensor([1, 2, 3], { shape: [3, 1] });
    using _p = kernelPriority("matmul", ["square-only"]);
    // Default: the fallback runs, and explain() says why.
    expect(matmul(a, c).shape).toEqual([2, 1]);
    using _s = backends.core.flags({ strict: true });
    expect(() => matmul(a, c)).toThrow(FallbackError);
    expect(() => matmul(a, c)).toThrow(
      /square-only \(test-square-only\): takes square matrices only/,
    );
    try {
      matmul(a, c);
    } catch (e) {
      expect((e as FallbackError).candidates.map((x) => x.kernel)).toEqual(["square-only"]);
    }
  });
});

describe("environment variables PyTorch users set", () => {
  const g = host;
  const onNodeHost = g.Bun === undefined && g.Deno === undefined;
  const dist = new URL("../dist/index.js", import.meta.url);
  const fs = onNodeHost ? builtinModule<typeof import("node:fs")>("node:fs") : undefined;
  const run = onNodeHost && fs?.existsSync(dist) ? it : it.skip;
  if (run === it.skip && onNodeHost)
    console.log("[core] env test skipped: build @backplane/core first (npm run build)");

  run("DNNL_VERBOSE, MKL_VERBOSE, OMP_NUM_THREADS are read at start on Node, Bun and Deno", () => {
    const cp = builtinModule<typeof import("node:child_process")>("node:child_process");
    if (!cp) throw new Error("node:child_process is missing on Node");
    const { spawnSync } = cp;
    const bin = (tool: string) =>
      new URL(`../../../node_modules/.bin/${tool}`, import.meta.url).pathname;
    const script = `import("${dist.href}").then(({ getFlag }) => console.log(JSON.stringify([getFlag("mkldnn.verbose"), getFlag("mkl.verbose"), getFlag("openmp.numThreads")])))`;
    const env = { ...g.process?.env, DNNL_VERBOSE: "2", MKL_VERBOSE: "1", OMP_NUM_THREADS: "3" };
    const runs: [string, string[]][] = [
      [g.process?.execPath ?? "node", ["--input-type=module", "-e", script]],
      [bin("bun"), ["-e", script]],
      [bin("deno"), ["eval", "--quiet", script]],
    ];
    for (const [cmd, args] of runs) {
      const r = spawnSync(cmd, args, { env, encoding: "utf8" });
      expect(r.stdout.trim(), `${cmd}: ${r.stderr}`).toBe("[2,1,3]");
    }
    // ONEDNN_VERBOSE wins over DNNL_VERBOSE, as in oneDNN.
    const both = spawnSync(runs[0][0], runs[0][1], {
      env: { ...env, ONEDNN_VERBOSE: "1" },
      encoding: "utf8",
    });
    expect(both.stdout.trim()).toBe("[1,1,3]");
  });
});

describe("reasons are short", () => {
  it("every namespace's reason is at most 300 characters; a long failure keeps its text in detail", () => {
    for (const s of backends.status())
      expect(s.reason?.length ?? 0, s.namespace).toBeLessThanOrEqual(300);
    const long = `libfoo not found (tried: ${Array.from({ length: 200 }, (_, i) => `/lib${i}/libfoo.so`).join(", ")})`;
    registerBackend(
      defineBackend({
        name: "test-long-reason",
        namespaces: ["testLongReason"], // its own namespace: bun runs every file in one process
        devices: ["cpu"],
        isAvailable: () => ({ available: false, reason: long }),
      }),
    );
    const st = backends.namespace("testLongReason").status();
    expect(st.reason!.length).toBeLessThanOrEqual(300);
    expect(st.reason).toMatch(/^libfoo not found \(tried: \/lib0\/libfoo\.so.*status\(\)\.detail/);
    expect(st.detail).toBe(long);
  });
});

describe("withFlags runs change hooks for its own task (issue 21)", () => {
  it("a mirrored flag is set inside the scope only, and native settings are put back after", async () => {
    let native = -1; // what a hook pushed into a "native library"
    const off = onFlagChange("openmp.numThreads", (v) => {
      native = v as number;
    });
    try {
      const before = getFlag("openmp.numThreads");
      await backends.withFlags(
        { core: { float32MatmulPrecision: "high" }, openmp: { numThreads: 3 } },
        async () => {
          await new Promise((r) => setTimeout(r, 1));
          expect(getFlag("cuda.matmul.allowTf32")).toBe(true); // the mirror, in this task
          expect(native).toBe(3);
        },
      );
      expect(getFlag("core.float32MatmulPrecision")).toBe("highest");
      expect(getFlag("cuda.matmul.allowTf32")).toBe(false);
      expect(native).toBe(before);
      backends.withFlags({ cuda: { matmul: { allowTf32: true } } }, () => {
        expect(getFlag("core.float32MatmulPrecision")).toBe("high");
      });
      expect(getFlag("core.float32MatmulPrecision")).toBe("highest");
      expect(getFlag("cuda.matmul.allowTf32")).toBe(false);
    } finally {
      off();
    }
  });
});
