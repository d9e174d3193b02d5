/**
 * Every CPU kernel of this package and the core (reference kernels, tensor creation and
 * copies) on a plain (unshared) CPU memory, as in a browser page that is not cross-origin
 * isolated. Growing such a memory detaches every typed-array view taken on its old buffer:
 * writes through one are lost, reads give undefined, set() from one throws a TypeError.
 *
 * While a call runs here, every allocation in the CPU memory first grows it: the first by
 * a page (the buffer's size is checked to have grown), the others by 0 pages, which on a
 * plain memory detaches the buffer just as a real growth does. So a view taken before any
 * allocation a call makes (its output, scratch, a copy, a cache entry) is stale wherever
 * the call uses it after, whatever the sizes. Each kernel that takes a case must still
 * take it then (a supports() that threw refused it: onednn-conv refused every layer), and
 * give what it gives without the growths and what the float64 reference gives.
 */
import type { DType, Tensor } from "@backplane/core";
import type { GrowingRun } from "@backplane/testkit";
import { loadOnPlainMemory, ownProcess } from "@backplane/testkit/plain-memory";
import { describe, expect, it } from "vitest";

// The core and the backends load on a plain memory (in a process of this file's own).
const { core, cpuMemory, Scratch, dispatch, getOp, testkit } = await loadOnPlainMemory(async () => {
  const core = await import("@backplane/core");
  const { cpuMemory, Scratch } = await import("@backplane/core/cpu");
  const { dispatch, getOp } = await import("@backplane/core/backend");
  const testkit = await import("@backplane/testkit");
  await import("../src/index.ts");
  return { core, cpuMemory, Scratch, dispatch, getOp, testkit };
});
/** Each case runs every kernel four times; the math attention at S = 2100 took 6.6 s under Bun. */
const CASE_TIMEOUT = 120_000;
const describeIsolated = ownProcess ? describe : describe.skip;

type Outputs = Map<string, Float64Array>;

const tensorsIn = (x: unknown): Tensor[] =>
  x instanceof core.Tensor
    ? [x]
    : Array.isArray(x)
      ? x.flatMap(tensorsIn)
      : x !== null && typeof x === "object"
        ? Object.values(x).flatMap(tensorsIn)
        : [];

/** The op's outputs as float64 values by name (read, then disposed). */
function outputsOf(x: unknown): Outputs {
  const named: [string, Tensor][] =
    x instanceof core.Tensor
      ? [["out", x]]
      : Object.entries(x as Record<string, Tensor>).sort(([a], [b]) => (a < b ? -1 : 1));
  const out: Outputs = new Map(named.map(([k, t]) => [k, t.toFloat64()]));
  for (const [, t] of named) t.dispose();
  return out;
}

function call(op: string, args: unknown[]): unknown {
  const rec = getOp(op)!;
  return dispatch(rec, rec.prepare(...args));
}

const forced = <R>(op: string, kernel: string, fn: () => R): R =>
  core.withKernelPriority(op, [kernel], fn);

const accepted = (op: string, args: unknown[]): string[] =>
  core
    .explain(op, ...args)
    .candidates.filter((c) => c.accepted)
    .map((c) => c.kernel);

/** The float64 reference: the first of the core's kernels that takes the float64 params. */
function reference(op: string, args: unknown[]): Outputs {
  // One copy per distinct tensor: self-attention's query, key and value stay one tensor.
  const copies = new Map<Tensor, Tensor>();
  const to64 = (a: unknown): unknown => {
    if (!(a instanceof core.Tensor) || !core.isFloat(a.dtype)) return a;
    if (!copies.has(a)) copies.set(a, a.astype("float64"));
    return copies.get(a);
  };
  const args64 = args.map((a) =>
    a && typeof a === "object" && !(a instanceof core.Tensor) && !Array.isArray(a)
      ? Object.fromEntries(Object.entries(a).map(([k, v]) => [k, to64(v)]))
      : to64(a),
  );
  try {
    const rec = getOp(op)!;
    const p = rec.prepare(...args64);
    const k = rec.kernels.find(
      (x) => x.backend === "reference" && (x.supports?.(p) ?? true) === true,
    );
    return outputsOf(k!.run(p));
  } finally {
    for (const t of copies.values()) t.dispose();
  }
}

function tolerance(op: string, dtype: DType): number {
  const base = (testkit.DEFAULT_TOLERANCES as Record<string, number>)[dtype] ?? 1e-6;
  return dtype === "float64" ? base : base * (testkit.OP_TOLERANCE_FACTOR[op] ?? 1);
}

/** Outputs unique up to signs (QR, eigh, SVD factors) are left to the same kernel's run. */
const UNIQUE: Record<string, string[] | undefined> = {
  qr: [],
  eigh: ["eigenvalues"],
  svd: ["S"],
};

function expectClose(got: Outputs, want: Outputs, tol: number, what: string, only?: string[]) {
  for (const [name, w] of want) {
    if (only && !only.includes(name)) continue;
    const j = testkit.relativeError(got.get(name) ?? new Float64Array(0), w, name);
    expect(j.error, `${what}: ${j.where}`).toBeLessThanOrEqual(tol);
  }
}

/**
 * One case on every kernel that takes it: with the memory growing, each kernel is still
 * accepted (the list is the one without growths), writes its outputs as it does without
 * growths, and agrees with the float64 reference.
 */
function checkCase(op: string, args: unknown[], dtype: DType, sameRngOnly = false): void {
  const kernels = testkit.withGrowingMemory(() => accepted(op, args)).value;
  expect(kernels.length).toBeGreaterThan(0);
  const runs: [string, GrowingRun<Outputs>][] = [];
  for (const k of kernels) {
    // Twice: the second call finds what the first left in the caches (weights, plans).
    for (let i = 0; i < 2; i++)
      runs.push([
        k,
        testkit.withGrowingMemory(() => {
          expect(
            forced(op, k, () => core.explain(op, ...args).selected),
            k,
          ).toBe(k);
          return outputsOf(forced(op, k, () => call(op, args)));
        }),
      ]);
  }
  // Without growths: the same kernels, their own outputs, and the reference's.
  expect(accepted(op, args)).toEqual(kernels);
  const want = reference(op, args);
  const tol = tolerance(op, dtype);
  for (const [k, run] of runs) {
    const empty = [...run.value.values()].every((v) => v.length === 0);
    if (!empty) expect(run.allocations, `${k} allocated`).toBeGreaterThan(0);
    expect(run.grew, `${k}: the memory grew`).toBe(run.allocations > 0);
    expectClose(run.value, outputsOf(forced(op, k, () => call(op, args))), tol, `${k} (again)`);
    if (!sameRngOnly || k === "math")
      expectClose(run.value, want, tol, `${k} against the reference`, UNIQUE[op]);
  }
}

const OPS = [
  "matmul",
  "add",
  "mul",
  "relu",
  "gelu",
  "softmax",
  "logSoftmax",
  "conv2d",
  "scaledDotProductAttention",
  "multiHeadAttention",
  "einsum",
  "cholesky",
  "inv",
  "solve",
  "luFactor",
  "qr",
  "eigh",
  "svd",
  "fft",
  "ifft",
  "rfft",
  "irfft",
];
const R = testkit.randomTensor;
/** A case, and the dtypes it runs in when not every one the op takes (large float32 kernels' cases). */
type Case = (typeof testkit.CASES)[string][number] & { only?: DType };

/**
 * Larger cases than the testkit's, for the paths that sizes choose: oneDNN's 16-channel
 * layouts (WASM transposes), Winograd on cut 5x5 kernels, attention's key blocks of 2048
 * (oneDNN's softmax step from 1024 keys) and bounded-shift path, LAPACK on matrices of
 * tens of rows.
 */
const LARGER: Record<string, Case[]> = {
  matmul: [
    { name: "130x257 @ 257x67", make: (d, r) => [R([130, 257], d, r), R([257, 67], d, r)] },
    {
      name: "batched 4x65x33 @ (17x33)^T",
      make: (d, r) => [R([4, 65, 33], d, r), R([17, 33], d, r).transpose(0, 1)],
    },
  ],
  add: [{ name: "1000x257 + 257", make: (d, r) => [R([1000, 257], d, r), R([257], d, r)] }],
  mul: [{ name: "300x300 * 300x300", make: (d, r) => [R([300, 300], d, r), R([300, 300], d, r)] }],
  relu: [{ name: "100003", make: (d, r) => [R([100003], d, r)] }],
  gelu: [{ name: "100003", make: (d, r) => [R([100003], d, r, 3)] }],
  softmax: [{ name: "64x3001 dim -1", make: (d, r) => [R([64, 3001], d, r, 5), -1] }],
  logSoftmax: [{ name: "64x3001 dim -1", make: (d, r) => [R([64, 3001], d, r, 5), -1] }],
  conv2d: [
    {
      name: "2x32x12x12 * 32x32x3x3, padding 1, bias",
      make: (d, r) => [
        R([2, 32, 12, 12], d, r),
        R([32, 32, 3, 3], d, r, 0.2),
        { padding: 1, bias: R([32], d, r) },
      ],
    },
    {
      name: "1x16x11x11 * 16x16x5x5, padding 2",
      make: (d, r) => [R([1, 16, 11, 11], d, r), R([16, 16, 5, 5], d, r, 0.1), { padding: 2 }],
    },
    {
      name: "depthwise 2x32x10x10, stride 2",
      make: (d, r) => [
        R([2, 32, 10, 10], d, r),
        R([32, 1, 3, 3], d, r),
        { groups: 32, padding: 1, stride: 2 },
      ],
    },
    {
      name: "1x1 64 -> 32 channels",
      make: (d, r) => [R([1, 64, 6, 6], d, r), R([32, 64, 1, 1], d, r, 0.2)],
    },
  ],
  scaledDotProductAttention: [
    {
      // Scores far below their Cauchy-Schwarz bound: flash-cpu-dnnl's bounded shift
      // underflows and its exact tiles run, their softmax on oneDNN (2048 keys a block).
      name: "1x1x64x16, S=2100, large queries and keys",
      only: "float32",
      make: (d, r) => [
        R([1, 1, 64, 16], d, r, 11),
        R([1, 1, 2100, 16], d, r, 11),
        R([1, 1, 2100, 16], d, r),
      ],
    },
    {
      name: "1x2x300x32, S=2100",
      only: "float32",
      make: (d, r) => [
        R([1, 2, 300, 32], d, r),
        R([1, 2, 2100, 32], d, r),
        R([1, 2, 2100, 32], d, r),
      ],
    },
    {
      name: "causal 1x1x700x32",
      only: "float32",
      make: (d, r) => {
        const x = () => R([1, 1, 700, 32], d, r, 0.5);
        return [x(), x(), x(), { isCausal: true }];
      },
    },
  ],
  multiHeadAttention: [
    {
      name: "self-attention B=2 L=40 E=64, 8 heads",
      make: (d, r) => {
        const x = R([2, 40, 64], d, r);
        const s = 64 ** -0.5;
        const w = {
          inProjWeight: R([192, 64], d, r, s),
          inProjBias: R([192], d, r),
          outProjWeight: R([64, 64], d, r, s),
          outProjBias: R([64], d, r),
          numHeads: 8,
        };
        return [x, x, x, w];
      },
    },
  ],
  cholesky: [{ name: "96x96", make: (d, r) => [testkit.spdTensor([], 96, d, r)] }],
  inv: [{ name: "80x80", make: (d, r) => [testkit.spdTensor([], 80, d, r)] }],
  solve: [
    {
      name: "64x64, B 64x5",
      make: (d, r) => [testkit.spdTensor([], 64, d, r), R([64, 5], d, r)],
    },
  ],
  luFactor: [{ name: "batch 2 of 70x70", make: (d, r) => [R([2, 70, 70], d, r)] }],
  qr: [{ name: "90x40", check: "qr", make: (d, r) => [R([90, 40], d, r)] }],
  eigh: [{ name: "60x60", check: "eigh", make: (d, r) => [testkit.spdTensor([], 60, d, r)] }],
  svd: [{ name: "50x30", check: "svd", make: (d, r) => [R([50, 30], d, r)] }],
};

/**
 * Ops also run in deterministic mode: oneDNN's Winograd then runs without timing it against
 * its direct kernel first (which refuses it where direct measures faster).
 */
const DETERMINISTIC_TOO = new Set(["conv2d"]);
/** Ops whose CPU kernels take bfloat16 (oneDNN's convolution): that dtype too. */
const BF16_OPS = new Set(["matmul", "conv2d"]);

describeIsolated("CPU kernels on a plain WASM memory that grows mid-call", () => {
  it("the memory is plain here (else this file tests nothing)", async () => {
    await core.ready();
    expect(cpuMemory().shared).toBe(false);
  });

  for (const op of OPS) {
    const dtypes: DType[] = [
      "float32",
      "float64",
      ...(BF16_OPS.has(op) ? ["bfloat16" as const] : []),
    ];
    describe(op, () => {
      for (const c of [...(testkit.CASES[op] ?? []), ...(LARGER[op] ?? [])])
        for (const dtype of (c as Case).only ? [(c as Case).only!] : dtypes)
          for (const deterministic of DETERMINISTIC_TOO.has(op) ? [false, true] : [false])
            it(
              `${c.name} ${dtype}${deterministic ? " (deterministic)" : ""}`,
              async () => {
                await core.ready();
                const args = c.make(dtype, testkit.makeRng(dtype.length * 7919 + c.name.length));
                try {
                  core.backends.withFlags({ core: { deterministic } }, () =>
                    checkCase(op, args, dtype, c.sameRngOnly),
                  );
                } finally {
                  for (const t of tensorsIn(args)) t.dispose();
                }
              },
              CASE_TIMEOUT,
            );
      const typical = testkit.sampleCase(op);
      for (const view of testkit.VIEW_KINDS)
        it(
          `${typical?.name} as ${view} views, float32`,
          async () => {
            await core.ready();
            const made = typical!.make("float32", testkit.makeRng(31));
            const args = made.map((a) =>
              a instanceof core.Tensor ? (testkit.viewOf(op, a, view) ?? a) : a,
            );
            try {
              checkCase(op, args, "float32", typical!.sameRngOnly);
            } finally {
              for (const t of new Set([...tensorsIn(made), ...tensorsIn(args)])) t.dispose();
            }
          },
          CASE_TIMEOUT,
        );
    });
  }
});

/** n seeded values in [-2, 2). */
const values = (n: number, seed: number) => {
  const rng = core.seededRandom(seed);
  return Float64Array.from({ length: n }, () => 4 * rng() - 2);
};

/** `make` with the memory growing at each allocation: its values, checked to have grown it. */
function grown(make: () => Tensor): Float64Array {
  const run = testkit.withGrowingMemory(() => {
    const t = make();
    try {
      return t.toFloat64();
    } finally {
      t.dispose();
    }
  });
  expect(run.grew, "the memory grew").toBe(true);
  return run.value;
}

// Long: one test per creation or copy path, each a few lines.
describeIsolated("tensor creation and copies on a plain WASM memory that grows", () => {
  it("tensor() and fromFloat64() of a view of another tensor's data copy its values", () => {
    const want = values(1000, 1);
    const src = core.tensor(want, { dtype: "float64" });
    try {
      const view = () => src.hostData() as Float64Array;
      expect(grown(() => core.tensor(view()))).toEqual(want);
      expect(grown(() => core.fromFloat64(view(), [10, 100], "float64"))).toEqual(want);
      // Converted element by element (float32 rounds as Math.fround does).
      const f32 = want.map(Math.fround);
      expect(grown(() => core.tensor(view(), { dtype: "float32" }))).toEqual(f32);
      expect(grown(() => core.fromFloat64(view(), [1000], "float32"))).toEqual(f32);
    } finally {
      src.dispose();
    }
  });

  it("Scratch.f64 of a view of a tensor's data copies its values", () => {
    const want = values(257, 2);
    const src = core.tensor(want, { dtype: "float64" });
    const s = new Scratch();
    try {
      const got = testkit.withGrowingMemory(() => {
        const p = s.f64(src.hostData() as Float64Array);
        return new Float64Array(cpuMemory().memory.buffer, p, want.length).slice();
      });
      expect(got.grew).toBe(true);
      expect(got.value).toEqual(want);
    } finally {
      s.release();
      src.dispose();
    }
  });

  it("creation from arrays, fills and seeded randoms", () => {
    const v = values(24, 3);
    expect(grown(() => core.tensor(Array.from(v), { dtype: "float64" }))).toEqual(v);
    expect(grown(() => core.tensor(v, { shape: [2, 3, 4], dtype: "float32" }))).toEqual(
      v.map(Math.fround),
    );
    expect(grown(() => core.full([5, 7], 2.5, { dtype: "float64" }))).toEqual(
      new Float64Array(35).fill(2.5),
    );
    expect(grown(() => core.zeros([9]))).toEqual(new Float64Array(9));
    expect(grown(() => core.ones([3], { dtype: "int32" }))).toEqual(new Float64Array(3).fill(1));
    for (const make of [core.rand, core.randn]) {
      const plain = make([33], { seed: 5, dtype: "float64" });
      expect(grown(() => make([33], { seed: 5, dtype: "float64" }))).toEqual(plain.toFloat64());
      plain.dispose();
    }
  });

  it("contiguous(), clone(), reshape() and astype() of views", () => {
    const v = values(6 * 35, 4);
    const base = core.tensor(v, { shape: [6, 5, 7], dtype: "float64" });
    try {
      base.storage.retain(); // for the strided view below (its dispose() releases it)
      for (const view of [
        base.transpose(0, 2),
        base.permute([1, 0, 2]),
        new core.Tensor(base.storage, "float64", [4, 3], [7, 2], 11),
      ]) {
        const want = view.toFloat64();
        expect(grown(() => view.contiguous())).toEqual(want);
        expect(grown(() => view.clone())).toEqual(want);
        expect(grown(() => view.reshape([-1]))).toEqual(want);
        expect(grown(() => view.astype("float32"))).toEqual(want.map(Math.fround));
        for (const dtype of ["float16", "bfloat16", "int32", "int64", "uint8"] as const) {
          const plain = view.astype(dtype);
          expect(
            grown(() => view.astype(dtype)),
            dtype,
          ).toEqual(plain.toFloat64());
          plain.dispose();
        }
        view.dispose();
      }
      const i64 = base.astype("int64");
      expect(grown(() => i64.astype("int32"))).toEqual(i64.toFloat64());
      expect(grown(() => i64.to("cpu"))).toEqual(i64.toFloat64());
      i64.dispose();
    } finally {
      base.dispose();
    }
  });
  it("quantize and dequantize, per tensor and per channel", () => {
    const x = core.tensor(values(6 * 35, 5), { shape: [6, 35], dtype: "float32" });
    try {
      for (const make of [
        () => core.quantizePerTensor(x, 0.02, 3, "quint8"),
        () =>
          core.quantizePerChannel(
            x,
            [0.01, 0.02, 0.03, 0.04, 0.05, 0.06],
            [0, 1, -2, 3, 0, 5],
            0,
            "qint8",
          ),
      ]) {
        const q = make();
        const want = core.dequantize(q);
        expect(grown(() => core.dequantize(q))).toEqual(want.toFloat64());
        want.dispose();
        q.dispose();
      }
    } finally {
      x.dispose();
    }
  });
});
