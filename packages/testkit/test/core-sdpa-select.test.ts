/**
 * Choosing the SDPA kernel: sdpaKernel()'s exclusive sets and priority, restoration,
 * concurrent async scopes, the error when nothing is left, the deprecated sdpKernel(),
 * and the canUse*() reasons. Fake kernels of every family live on a device of their own
 * ("sdpadev"), so registering them changes nothing for CPU tensors in other tests.
 */

import {
  asyncScopesIsolated,
  backends,
  canUseCudnnAttention,
  canUseEfficientAttention,
  canUseFlashAttention,
  explain,
  getFlag,
  NoKernelError,
  randn,
  SDPAParams,
  SDPBackend,
  type SdpaOptions,
  scaledDotProductAttention,
  sdpaKernel,
  sdpaRefusals,
  sdpKernel,
  type Tensor,
  tensor,
  withSdpaKernel,
} from "@backplane/core";
import { defineBackend, getOp, registerBackend, type SdpaParams } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { registerHostBackedDevice } from "../src/index.ts";

const DEV = "sdpadev";
const BACKEND = "sdpa-select-test";
registerHostBackedDevice(DEV);

/** A fake kernel of one family: returns its own name instead of a tensor. */
const fake = (
  name: string,
  family: string,
  flag: string,
  priority: number,
  supports: (p: SdpaParams) => true | string = () => true,
  dtypes: readonly ("float16" | "float32" | "float64" | "bfloat16")[] = ["float32", "float64"],
) => ({
  op: "scaledDotProductAttention",
  name,
  family,
  device: DEV,
  dtypes,
  deterministic: true,
  flags: [flag],
  priority,
  supports,
  run: () => name,
});

registerBackend(
  defineBackend({
    name: BACKEND,
    devices: [DEV],
    isAvailable: () => ({ available: true }),
    kernels: [
      fake("fake-flash", "FLASH_ATTENTION", "cuda.flashSdp", 40, (p) =>
        p.E > 64 ? `head dim ${p.E} > 64` : p.dropoutP > 0 ? "dropout > 0 is not supported" : true,
      ),
      fake("fake-efficient", "EFFICIENT_ATTENTION", "cuda.memEfficientSdp", 30, (p) =>
        p.maskKind === "bool" ? "mask kind bool is not supported (additive masks only)" : true,
      ),
      fake("fake-cudnn", "CUDNN_ATTENTION", "cuda.cudnnSdp", 20, undefined, [
        "float16",
        "bfloat16",
      ]),
      fake("fake-overrideable", "OVERRIDEABLE", "cuda.overrideableSdp", 15, (p) =>
        p.dropoutP > 0 ? `dropout ${p.dropoutP} > 0 is not supported` : true,
      ),
      fake("fake-math", "MATH", "cuda.mathSdp", 10),
    ],
  }),
);

const onDev = (shape: number[], seed: number, dtype: "float32" | "float64" = "float32") => {
  const host = randn(shape, { seed, dtype });
  const t = host.to(DEV);
  host.dispose();
  return t;
};
const qkv = (E = 16) => [onDev([2, 5, E], 1), onDev([2, 6, E], 2), onDev([2, 6, E], 3)] as const;
/** Which kernel ran (the fakes return their names). */
const who = (args: readonly Tensor[], opts?: SdpaOptions): string =>
  scaledDotProductAttention(args[0], args[1], args[2], opts) as unknown as string;

const familyOf = (kernel: string) =>
  getOp("scaledDotProductAttention")!.kernels.find((k) => k.name === kernel)?.family;

/** Runs fn with console.warn captured; returns what it printed. */
function captureWarnings(fn: () => void): string[] {
  const lines: string[] = [];
  const prev = console.warn;
  console.warn = (...args: unknown[]) => {
    lines.push(args.map(String).join(" "));
  };
  try {
    fn();
  } finally {
    console.warn = prev;
  }
  return lines;
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("sdpaKernel: exclusive selection", () => {
  it("by default the highest-priority kernel that supports the inputs runs", () => {
    expect(who(qkv())).toBe("fake-flash");
    expect(who(qkv(80))).toBe("fake-efficient"); // flash: head dim 80 > 64
  });

  it("inside sdpaKernel([MATH]) only MATH kernels may run", () => {
    const args = qkv();
    {
      using _ = sdpaKernel([SDPBackend.MATH]);
      expect(who(args)).toBe("fake-math");
      const e = explain("scaledDotProductAttention", ...args);
      expect(e.selected).toBe("fake-math");
      const reasons = Object.fromEntries(e.candidates.map((c) => [c.kernel, c.reason]));
      expect(reasons["fake-flash"]).toBe("disabled by flag cuda.flashSdp = false");
      expect(reasons["fake-efficient"]).toBe("disabled by flag cuda.memEfficientSdp = false");
      expect(reasons["fake-overrideable"]).toBe("disabled by flag cuda.overrideableSdp = false");
      for (const c of e.candidates.filter((x) => x.accepted))
        expect(familyOf(c.kernel)).toBe("MATH");
    }
    // CPU tensors too: whatever backends are installed, every accepted kernel is MATH.
    const q = randn([1, 2, 4, 8], { seed: 4 });
    using _ = sdpaKernel(SDPBackend.MATH);
    const e = explain("scaledDotProductAttention", q, q, q);
    expect(e.selected).toBe("math");
    for (const c of e.candidates.filter((x) => x.accepted)) expect(familyOf(c.kernel)).toBe("MATH");
    expect(scaledDotProductAttention(q, q, q).shape).toEqual([1, 2, 4, 8]);
  });

  it("a list enables exactly its families", () => {
    const args = qkv();
    using _ = sdpaKernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]);
    expect(who(args)).toBe("fake-efficient");
    expect(backends.cuda.flashSdpEnabled()).toBe(false);
    expect(backends.cuda.mathSdpEnabled()).toBe(false);
    expect(backends.cuda.memEfficientSdpEnabled()).toBe(true);
    expect(backends.cuda.cudnnSdpEnabled()).toBe(true);
  });

  it("unknown backends are refused with the list of known ones", () => {
    expect(() => sdpaKernel(["FAST" as never])).toThrow(
      /unknown backend "FAST"; use SDPBackend\.MATH/,
    );
    expect(() => sdpaKernel([SDPBackend.ERROR as never])).toThrow(/unknown backend "ERROR"/);
  });
});

describe("sdpaKernel: lists as torch 2.13 reads them", () => {
  it("an empty list switches every backend off (no kernel may run), as torch's", () => {
    const args = qkv();
    {
      using _ = sdpaKernel([]);
      for (const f of ["Flash", "Math", "MemEfficient", "Cudnn"] as const)
        expect(getFlag(`cuda.${f[0].toLowerCase()}${f.slice(1)}Sdp`)).toBe(false);
      expect(getFlag("cuda.overrideableSdp")).toBe(false);
      expect(() => who(args)).toThrow(NoKernelError);
    }
    expect(who(args)).toBe("fake-flash");
  });

  it("a backend named twice keeps its first place (torch's dict.fromkeys)", () => {
    const args = qkv();
    using _ = sdpaKernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.MATH], {
      setPriority: true,
    });
    const e = explain("scaledDotProductAttention", ...args);
    expect(e.candidates.filter((c) => c.accepted).map((c) => c.kernel)).toEqual([
      "fake-math",
      "fake-flash",
    ]);
  });
});

describe("sdpaKernel: priority", () => {
  it("setPriority makes the listed order win over the kernels' priorities", () => {
    const args = qkv();
    const order = [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION];
    {
      using _ = sdpaKernel(order);
      expect(who(args)).toBe("fake-flash"); // no setPriority: the kernels' own order
    }
    {
      using _ = sdpaKernel(order, { setPriority: true });
      expect(who(args)).toBe("fake-math");
      const e = explain("scaledDotProductAttention", ...args);
      const accepted = e.candidates.filter((c) => c.accepted).map((c) => c.kernel);
      expect(accepted).toEqual(["fake-math", "fake-flash", "fake-efficient"]);
    }
    {
      using _ = sdpaKernel(
        [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH, SDPBackend.FLASH_ATTENTION],
        { setPriority: true },
      );
      expect(who(args)).toBe("fake-efficient");
      // efficient refuses boolean masks: the next in the user's order (math, not flash) runs
      const mask = tensor(new Uint8Array(30).fill(1), { shape: [5, 6], dtype: "bool" }).to(DEV);
      expect(who(args, { attnMask: mask })).toBe("fake-math");
    }
    expect(who(args)).toBe("fake-flash");
  });
});

describe("sdpaKernel: scopes", () => {
  it("restores flags and priorities when the scope's body throws", () => {
    const args = qkv();
    const boom = () => {
      using _ = sdpaKernel([SDPBackend.MATH], { setPriority: true });
      expect(who(args)).toBe("fake-math");
      throw new Error("boom");
    };
    expect(boom).toThrow("boom");
    expect(backends.cuda.flashSdpEnabled()).toBe(true);
    expect(backends.cuda.memEfficientSdpEnabled()).toBe(true);
    expect(getFlag("cuda.overrideableSdp")).toBe(true);
    expect(getFlag("cuda.mathSdp")).toBe(true);
    expect(who(args)).toBe("fake-flash");
    expect(() =>
      withSdpaKernel([SDPBackend.CUDNN_ATTENTION], () => {
        throw new Error("sync boom");
      }),
    ).toThrow("sync boom");
    expect(who(args)).toBe("fake-flash");
  });

  it("withSdpaKernel restores after a rejected promise", async () => {
    const args = qkv();
    await expect(
      withSdpaKernel([SDPBackend.MATH], async () => {
        await tick(1);
        expect(who(args)).toBe("fake-math");
        throw new Error("async boom");
      }),
    ).rejects.toThrow("async boom");
    expect(who(args)).toBe("fake-flash");
  });

  it("concurrent async scopes each see their own set, across awaits", async () => {
    const args = qkv();
    const task = (b: SDPBackend, delays: number[]) =>
      withSdpaKernel([b], async () => {
        const seen: string[] = [];
        for (const d of delays) {
          await tick(d);
          seen.push(who(args));
        }
        return seen;
      });
    const [flash, math, eff] = await Promise.all([
      task(SDPBackend.FLASH_ATTENTION, [3, 1, 4]),
      task(SDPBackend.MATH, [1, 5, 1]),
      task(SDPBackend.EFFICIENT_ATTENTION, [2, 2, 2]),
    ]);
    if (asyncScopesIsolated) {
      expect(flash).toEqual(["fake-flash", "fake-flash", "fake-flash"]);
      expect(math).toEqual(["fake-math", "fake-math", "fake-math"]);
      expect(eff).toEqual(["fake-efficient", "fake-efficient", "fake-efficient"]);
    }
    expect(who(args)).toBe("fake-flash");
  });
});

describe("no kernel left", () => {
  it("the error names every backend's kernel and why, with a suggestion", () => {
    // float32, head dim 80, a boolean mask, dropout 0.1, on sdpadev, MATH switched off.
    const [q, k, v] = qkv(80);
    const mask = tensor(new Uint8Array(30).fill(1), { shape: [5, 6], dtype: "bool" }).to(DEV);
    using _ = sdpaKernel([
      SDPBackend.FLASH_ATTENTION,
      SDPBackend.EFFICIENT_ATTENTION,
      SDPBackend.CUDNN_ATTENTION,
      SDPBackend.OVERRIDEABLE,
    ]);
    let err: unknown;
    try {
      who([q, k, v], { attnMask: mask, dropoutP: 0.1, seed: 1 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NoKernelError);
    const e = err as NoKernelError;
    const msg = e.message;
    expect(msg).toMatch(/^No kernel can run scaledDotProductAttention for these inputs/);
    const reasons = Object.fromEntries(e.candidates.map((c) => [c.kernel, c.reason]));
    expect(reasons["fake-flash"]).toBe("head dim 80 > 64"); // head dim
    expect(reasons["fake-efficient"]).toMatch(/mask kind bool/); // mask kind
    expect(reasons["fake-cudnn"]).toBe("dtype float32 not supported (supports float16, bfloat16)");
    expect(reasons["fake-overrideable"]).toBe("dropout 0.1 > 0 is not supported"); // dropout
    expect(reasons["fake-math"]).toBe("disabled by flag cuda.mathSdp = false"); // flag
    expect(reasons.math).toBe("runs on cpu, inputs are on sdpadev"); // device
    // Every registered SDPA kernel is listed, each line naming its backend.
    const all = getOp("scaledDotProductAttention")!.kernels;
    expect(e.candidates.length).toBe(all.length);
    for (const kd of all) expect(msg).toContain(`  - ${kd.name} (${kd.backend}): `);
    expect(msg).toContain(
      "Hint: fake-math would run if you set cuda.mathSdp to true (it is false).",
    );
    expect(e.candidates.every((c) => !c.accepted)).toBe(true);
  });
});

describe("sdpKernel (deprecated)", () => {
  it("warns once, and switches backends off for its scope", () => {
    const args = qkv();
    const lines = captureWarnings(() => {
      {
        using _ = sdpKernel({ enableFlash: false });
        expect(who(args)).toBe("fake-efficient");
      }
      {
        using _ = sdpKernel({ enableFlash: false, enableMemEfficient: false });
        // cudnn refuses float32; OVERRIDEABLE is off too: torch 2.13's sdp_kernel is an
        // sdpa_kernel of the enabled backends, which switches every other one off
        expect(getFlag("cuda.overrideableSdp")).toBe(false);
        expect(who(args)).toBe("fake-math");
      }
      using _ = backends.cuda.sdpKernel({ enableMath: true });
      expect(who(args)).toBe("fake-flash");
    });
    const deprecations = lines.filter((l) => l.includes("deprecated"));
    expect(deprecations.length).toBe(1);
    expect(deprecations[0]).toMatch(/sdpKernel\(\) is deprecated; use nn\.attention\.sdpaKernel/);
    expect(who(args)).toBe("fake-flash");
  });
});

describe("canUse*()", () => {
  it("canUseFlashAttention(params, { debug: true }) says why each kernel refuses", () => {
    const [q, k, v] = qkv(80);
    const params = new SDPAParams(q, k, v, null, 0, false);
    let ok = true;
    const lines = captureWarnings(() => {
      ok = canUseFlashAttention(params, { debug: true });
    });
    expect(ok).toBe(false);
    expect(lines).toContain(
      `[backplane] FLASH_ATTENTION refused: fake-flash (${BACKEND}): head dim 80 > 64`,
    );
    // One line per FLASH_ATTENTION kernel of any backend (flash-cpu too, when installed).
    const flashKernels = getOp("scaledDotProductAttention")!.kernels.filter(
      (x) => x.family === "FLASH_ATTENTION",
    );
    expect(lines.length).toBe(flashKernels.length);
    expect(sdpaRefusals(SDPBackend.FLASH_ATTENTION, params)).toEqual(
      lines.map((l) => l.replace("[backplane] FLASH_ATTENTION refused: ", "")),
    );
    // Without debug: the same answer, silently.
    expect(captureWarnings(() => canUseFlashAttention(params))).toEqual([]);
  });

  it("is true, silently, when a kernel of the family accepts", () => {
    const [q, k, v] = qkv(32);
    const params = new SDPAParams(q, k, v);
    let ok = false;
    expect(captureWarnings(() => (ok = canUseFlashAttention(params, { debug: true })))).toEqual([]);
    expect(ok).toBe(true);
    expect(sdpaRefusals(SDPBackend.FLASH_ATTENTION, params)).toEqual([]);
  });

  it("mask kind, dropout, dtype and flag refusals come back as reasons", () => {
    const [q, k, v] = qkv(32);
    const mask = tensor(new Uint8Array(30).fill(1), { shape: [5, 6], dtype: "bool" }).to(DEV);
    const lines = captureWarnings(() => {
      expect(canUseEfficientAttention(new SDPAParams(q, k, v, mask), { debug: true })).toBe(false);
      expect(canUseCudnnAttention(new SDPAParams(q, k, v), { debug: true })).toBe(false);
      expect(canUseFlashAttention(new SDPAParams(q, k, v, null, 0.2), { debug: true })).toBe(false);
    });
    expect(lines).toContain(
      `[backplane] EFFICIENT_ATTENTION refused: fake-efficient (${BACKEND}): mask kind bool is not supported (additive masks only)`,
    );
    expect(lines).toContain(
      `[backplane] CUDNN_ATTENTION refused: fake-cudnn (${BACKEND}): dtype float32 not supported (supports float16, bfloat16)`,
    );
    expect(lines).toContain(
      `[backplane] FLASH_ATTENTION refused: fake-flash (${BACKEND}): dropout > 0 is not supported`,
    );
    using _ = sdpaKernel([SDPBackend.MATH]);
    expect(sdpaRefusals(SDPBackend.FLASH_ATTENTION, new SDPAParams(q, k, v))).toContain(
      `fake-flash (${BACKEND}): disabled by flag cuda.flashSdp = false`,
    );
  });

  it("kernels for another device are listed with the device as the reason", () => {
    const q = randn([1, 3, 8], { seed: 9 });
    const reasons = sdpaRefusals(SDPBackend.EFFICIENT_ATTENTION, new SDPAParams(q, q, q));
    expect(reasons).toContain(`fake-efficient (${BACKEND}): runs on ${DEV}, inputs are on cpu`);
  });
});
