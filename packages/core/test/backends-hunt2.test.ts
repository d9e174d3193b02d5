/**
 * The torch.backends surface against torch's semantics, where earlier versions differed:
 * sdpaKernel()/sdpKernel() switch kernel families off also for a kernel whose `flags` do
 * not name its family's switch (torch.nn.attention.sdpa_kernel([MATH]) runs math only),
 * a second backend registered under a taken name by another package or with other
 * kernels is a RegistrationError, not silently dropped, and addKernels() after a backend's
 * registration checks the kernels as registration does and is seen by the next call.
 */
import {
  backends,
  explain,
  nn,
  RegistrationError,
  randn,
  record,
  relu,
  SDPBackend,
  scaledDotProductAttention,
  type Tensor,
  withSdpaKernel,
  zeros,
} from "@backplane/core";
import {
  addKernels,
  getKernel,
  ops,
  registerBackend,
  type SdpaParams,
} from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

/**
 * The tensors this file makes. Its fake kernels take only these: bun test and deno test load
 * every test file of the package into one process, where a fake kernel left registered
 * (zeros for attention, a fast relu) ran in other files' tests.
 */
const mine = new WeakSet<Tensor>();
const own = <T extends Tensor>(t: T): T => {
  mine.add(t);
  return t;
};
const onlyMine = (t: Tensor): true | string =>
  mine.has(t) || "a test kernel of backends-hunt2.test.ts (takes its own tensors only)";

/** softmax(Q K^T / sqrt(E)) V in float64, for [B, L, E] inputs. */
function attentionRef(q: Tensor, k: Tensor, v: Tensor): number[] {
  const [B, L, E] = q.shape;
  const S = k.shape[1];
  const Ev = v.shape[2];
  const Q = Array.from(q.hostData() as Float64Array);
  const K = Array.from(k.hostData() as Float64Array);
  const V = Array.from(v.hostData() as Float64Array);
  const out: number[] = [];
  for (let b = 0; b < B; b++)
    for (let i = 0; i < L; i++) {
      const s = Array.from({ length: S }, (_, j) => {
        let d = 0;
        for (let e = 0; e < E; e++) d += Q[(b * L + i) * E + e] * K[(b * S + j) * E + e];
        return d / Math.sqrt(E);
      });
      const m = Math.max(...s);
      const w = s.map((x) => Math.exp(x - m));
      const sum = w.reduce((a, x) => a + x, 0);
      for (let c = 0; c < Ev; c++) {
        let acc = 0;
        for (let j = 0; j < S; j++) acc += (w[j] / sum) * V[(b * S + j) * Ev + c];
        out.push(acc);
      }
    }
  return out;
}

/** A fake SDPA kernel that answers zeros: running it instead of math gives a wrong result. */
const zerosKernel = (name: string, family: string | undefined, priority: number) =>
  ops.scaledDotProductAttention.kernel({
    name,
    ...(family === undefined ? {} : { family }),
    device: "cpu",
    dtypes: ["float64"],
    deterministic: true,
    priority,
    supports: (p: SdpaParams) => onlyMine(p.query),
    // No `flags`: the family's switch must gate it all the same.
    run: (p: SdpaParams) => zeros([...p.batchShape, p.L, p.Ev], { dtype: "float64" }),
  });

registerBackend({
  name: "hunt2-sdpa",
  devices: ["cpu"],
  isAvailable: () => ({ available: true }),
  kernels: [
    zerosKernel("hunt2-flash", "FLASH_ATTENTION", 900),
    zerosKernel("hunt2-third-party", undefined, 800),
  ],
});

const SDPA = "scaledDotProductAttention";
const ran = (fn: () => unknown): string[] => record(fn).calls.map((c) => c.kernel);

describe("sdpaKernel gates kernel families whose flags do not name their switch", () => {
  const q = own(randn([2, 5, 4], { dtype: "float64" }));
  const k = own(randn([2, 7, 4], { dtype: "float64" }));
  const v = own(randn([2, 7, 3], { dtype: "float64" }));
  const want = attentionRef(q, k, v);
  const close = (t: Tensor) =>
    Array.from(t.hostData() as Float64Array).every((x, i) => Math.abs(x - want[i]) < 1e-12);

  it("sdpaKernel([MATH]) runs math only, with the float64 reference's values", () => {
    using _ = nn.attention.sdpaKernel([SDPBackend.MATH]);
    const calls = record(() => scaledDotProductAttention(q, k, v));
    expect(calls.calls.map((c) => c.kernel)).toEqual(["math"]);
    expect(close(calls.result)).toBe(true);
    const why = explain(SDPA, q, k, v).candidates.filter((c) => c.kernel.startsWith("hunt2-"));
    expect(why.map((c) => c.reason)).toEqual([
      "disabled by flag cuda.flashSdp = false",
      "disabled by flag cuda.overrideableSdp = false",
    ]);
  });

  it("withSdpaKernel([MATH]) holds across an await for this task", async () => {
    const out = await withSdpaKernel([SDPBackend.MATH], async () => {
      await null;
      return scaledDotProductAttention(q, k, v);
    });
    expect(close(out)).toBe(true);
  });

  it("the deprecated sdpKernel({ enableFlash: false }) stops the flash kernel too", () => {
    using _ = backends.cuda.sdpKernel({ enableFlash: false });
    expect(ran(() => scaledDotProductAttention(q, k, v))).toEqual(["math"]);
  });

  it("a kernel of no family is SDPBackend.OVERRIDEABLE; outside a scope the priorities hold", () => {
    {
      using _ = nn.attention.sdpaKernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH]);
      expect(ran(() => scaledDotProductAttention(q, k, v))).toEqual(["hunt2-third-party"]);
    }
    expect(ran(() => scaledDotProductAttention(q, k, v))).toEqual(["hunt2-flash"]);
    expect(getKernel(SDPA, "hunt2-flash")?.flags).toEqual(["cuda.flashSdp"]);
  });

  it("canUseFlashAttention answers false while flash is switched off, as torch's", () => {
    const params = new backends.cuda.SDPAParams(q, k, v);
    expect(backends.cuda.canUseFlashAttention(params)).toBe(true);
    using _ = nn.attention.sdpaKernel([SDPBackend.MATH]);
    expect(backends.cuda.canUseFlashAttention(params)).toBe(false);
  });
});

describe("a second backend under a registered name", () => {
  const def = (packageName: string | undefined, kernel: string) => ({
    name: "hunt2-dup",
    ...(packageName === undefined ? {} : { packageName }),
    devices: ["cpu"],
    isAvailable: () => ({ available: true as const }),
    kernels: [
      ops.relu.kernel({
        name: kernel,
        device: "cpu",
        dtypes: ["float64"],
        deterministic: true,
        priority: -5,
        supports: (p) => onlyMine(p.x),
        run: () => zeros([1], { dtype: "float64" }),
      }),
    ],
  });

  it("from another package is a RegistrationError naming both, and nothing of it is recorded", () => {
    const first = registerBackend(def("pkg-one", "hunt2-dup-relu"));
    expect(() => registerBackend(def("pkg-two", "hunt2-other-relu"))).toThrow(RegistrationError);
    expect(() => registerBackend(def("pkg-two", "hunt2-other-relu"))).toThrow(
      /already registered by "pkg-one", and "pkg-two" registers another backend/,
    );
    expect(getKernel("relu", "hunt2-other-relu")).toBeUndefined();
    // A second copy of the same package (same version, same kernels) still joins the first.
    expect(registerBackend(def("pkg-one", "hunt2-dup-relu"))).toBe(first);
    // The relu of random inputs is still the reference's (the priority -5 kernel stays behind).
    const x = own(randn([9], { dtype: "float64" }));
    const got = Array.from(relu(x).hostData() as Float64Array);
    expect(got).toEqual(Array.from(x.hostData() as Float64Array, (a) => Math.max(a, 0)));
  });

  it("from the same package with other kernels and no version is refused too", () => {
    expect(() => registerBackend(def("pkg-one", "hunt2-third-relu"))).toThrow(/other kernels/);
    expect(getKernel("relu", "hunt2-third-relu")).toBeUndefined();
  });
});

describe("addKernels after registration", () => {
  registerBackend({
    name: "hunt2-late",
    devices: ["cpu"],
    isAvailable: () => ({ available: true }),
  });
  /** A relu of float64 inputs, exact: max(x, 0) element by element (contiguous inputs). */
  const reluKernel = (name: string, extra: object = {}) => ({
    ...ops.relu.kernel({
      name,
      device: "cpu",
      dtypes: ["float64"],
      deterministic: true,
      priority: 700,
      supports: (p) => onlyMine(p.x),
      run: (p) => {
        const src = p.x.hostData() as Float64Array;
        const out = zeros(p.x.shape, { dtype: "float64" });
        const dst = out.hostData() as Float64Array;
        for (let i = 0; i < src.length; i++) dst[i] = Math.max(src[i], 0);
        return out;
      },
    }),
    ...extra,
  });

  it("a kernel added after the op's first call runs at the next call", () => {
    const x = own(randn([11], { dtype: "float64" }));
    expect(ran(() => relu(x))).toEqual(["reference"]);
    addKernels("hunt2-late", ["cpu"], [reluKernel("hunt2-late-relu")]);
    const r = record(() => relu(x));
    expect(r.calls.map((c) => c.kernel)).toEqual(["hunt2-late-relu"]);
    const want = Array.from(x.hostData() as Float64Array, (a) => Math.max(a, 0));
    expect(Array.from(r.result.hostData() as Float64Array)).toEqual(want);
  });

  it("refuses what registerBackend refuses, naming the fix, and adds nothing", () => {
    const cases: [string, () => void, RegExp][] = [
      [
        "an unregistered backend",
        () => addKernels("hunt2-nobody", ["cpu"], [reluKernel("hunt2-a")]),
        /no backend is named "hunt2-nobody"; register it/,
      ],
      [
        "a device the backend does not declare",
        () => addKernels("hunt2-late", ["cuda"], [{ ...reluKernel("hunt2-b"), device: "cuda" }]),
        /does not declare device cuda/,
      ],
      [
        "flags given as a string",
        () =>
          addKernels("hunt2-late", ["cpu"], [reluKernel("hunt2-c", { flags: "nnpack.enabled" })]),
        /flags must be a list of flag keys/,
      ],
      [
        "a misspelt flag",
        () =>
          addKernels("hunt2-late", ["cpu"], [reluKernel("hunt2-d", { flags: ["nnpack.enabld"] })]),
        /"nnpack.enabld" is not defined; did you mean nnpack.enabled/,
      ],
      [
        "an integer flag",
        () =>
          addKernels(
            "hunt2-late",
            ["cpu"],
            [reluKernel("hunt2-e", { flags: ["cudnn.benchmarkLimit"] })],
          ),
        /cudnn.benchmarkLimit is an int flag; a kernel's flags must be boolean/,
      ],
    ];
    for (const [what, add, message] of cases) {
      expect(add, what).toThrow(RegistrationError);
      expect(add, what).toThrow(message);
    }
    for (const name of ["hunt2-a", "hunt2-b", "hunt2-c", "hunt2-d", "hunt2-e"])
      expect(getKernel("relu", name)).toBeUndefined();
  });
});
