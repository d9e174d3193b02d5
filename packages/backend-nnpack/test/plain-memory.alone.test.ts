/**
 * Every nnpack convolution kernel on a plain (unshared) CPU memory, as in a browser page
 * that is not cross-origin isolated. Growing such a memory detaches every typed-array view
 * taken on its old buffer: writes through one are lost, reads give undefined.
 *
 * While a call runs here, every allocation in the CPU memory first grows it: the first by
 * a page (the buffer's size is checked to have grown), the others by 0 pages, which on a
 * plain memory detaches the buffer just as a real growth does. So a view taken before any
 * allocation a call makes (its output, im2col and transform buffers, the transform cache's
 * copy) is stale wherever the call uses it after, whatever the sizes. Each kernel that takes
 * a case must still take it then and give what it gives without the growths, and what the
 * float64 reference gives.
 */
import type { Conv2dOptions, DType, Tensor } from "@backplane/core";
import { loadOnPlainMemory, ownProcess } from "@backplane/testkit/plain-memory";
import { describe, expect, it } from "vitest";

// The core and the backends load on a plain memory (in a process of this file's own).
const { core, cpuMemory, testkit, TOLERANCE } = await loadOnPlainMemory(async () => {
  const core = await import("@backplane/core");
  const { cpuMemory } = await import("@backplane/core/cpu");
  const testkit = await import("@backplane/testkit");
  const { TOLERANCE } = await import("./helpers.ts"); // loads backend-cpu-mkl and this backend
  return { core, cpuMemory, testkit, TOLERANCE };
});
const describeIsolated = ownProcess ? describe : describe.skip;

type Args = [Tensor, Tensor, Conv2dOptions?];

function conv(args: Args): Float64Array {
  const y = core.conv2d(...args);
  try {
    return y.toFloat64();
  } finally {
    y.dispose();
  }
}

const onKernel = <R>(kernel: string, fn: () => R): R =>
  core.withKernelPriority("conv2d", [kernel], fn);

const nnpackKernels = (args: Args): string[] =>
  core
    .explain("conv2d", ...args)
    .candidates.filter((c) => c.accepted && c.backend === "nnpack")
    .map((c) => c.kernel);

/** The float64 reference kernel's output for the same values. */
function reference(args: Args): Float64Array {
  const [x, w, o] = args.map((a) =>
    a instanceof core.Tensor ? a.astype("float64") : a && { ...a, bias: a.bias?.astype("float64") },
  ) as Args;
  try {
    return onKernel("reference", () => conv([x, w, o]));
  } finally {
    for (const t of [x, w, o?.bias]) t?.dispose();
  }
}

function expectClose(got: Float64Array, want: Float64Array, tol: number, what: string) {
  const j = testkit.relativeError(got, want);
  expect(j.error, `${what}: ${j.where}`).toBeLessThanOrEqual(tol);
}

/**
 * One case on every nnpack kernel that takes it, each twice (cold, then with its transform
 * cached): accepted while the memory grows, and agreeing with its own output without the
 * growths and with the float64 reference.
 */
function checkCase(args: Args, dtype: DType): void {
  const kernels = testkit.withGrowingMemory(() => nnpackKernels(args)).value;
  expect(kernels.length).toBeGreaterThan(0);
  const runs = kernels.flatMap((k) =>
    [0, 1].map(() =>
      testkit.withGrowingMemory(() => {
        expect(onKernel(k, () => core.explain("conv2d", ...args).selected)).toBe(k);
        return { k, out: onKernel(k, () => conv(args)) };
      }),
    ),
  );
  expect(nnpackKernels(args)).toEqual(kernels);
  const want = reference(args);
  for (const { value, allocations, grew } of runs) {
    const { k, out } = value;
    const tol =
      dtype === "float64"
        ? testkit.DEFAULT_TOLERANCES.float64
        : TOLERANCE[k as keyof typeof TOLERANCE];
    expect(allocations, `${k} allocated`).toBeGreaterThan(0);
    expect(grew, `${k}: the memory grew`).toBe(true);
    expectClose(
      out,
      onKernel(k, () => conv(args)),
      tol,
      `${k} (again)`,
    );
    expectClose(out, want, tol, `${k} against the reference`);
  }
}

const R = testkit.randomTensor;
type Case = { name: string; make: (d: DType, r: () => number) => unknown[] };

/** Larger than the testkit's: several transform tiles, groups, depthwise and 1x1 layers. */
const LARGER: Case[] = [
  {
    name: "2x16x20x20 * 24x16x3x3, padding 1, bias",
    make: (d, r) => [
      R([2, 16, 20, 20], d, r),
      R([24, 16, 3, 3], d, r, 0.2),
      { padding: 1, bias: R([24], d, r) },
    ],
  },
  {
    name: "1x8x23x23 * 8x8x5x5",
    make: (d, r) => [R([1, 8, 23, 23], d, r), R([8, 8, 5, 5], d, r, 0.2)],
  },
  {
    name: "groups 4, 2x16x9x9 * 8x4x3x3, stride 2",
    make: (d, r) => [
      R([2, 16, 9, 9], d, r),
      R([8, 4, 3, 3], d, r),
      { groups: 4, stride: 2, padding: 1 },
    ],
  },
  {
    name: "depthwise 2x24x15x15, multiplier 2, bias",
    make: (d, r) => [
      R([2, 24, 15, 15], d, r),
      R([48, 1, 3, 3], d, r),
      { groups: 24, padding: 1, bias: R([48], d, r) },
    ],
  },
  {
    name: "1x1 2x48x7x7 -> 20",
    make: (d, r) => [R([2, 48, 7, 7], d, r), R([20, 48, 1, 1], d, r, 0.2)],
  },
];

describeIsolated("nnpack kernels on a plain WASM memory that grows mid-call", () => {
  it("the memory is plain here (else this file tests nothing)", async () => {
    await core.ready();
    expect(cpuMemory().shared).toBe(false);
  });

  for (const c of [...testkit.CASES.conv2d!, ...LARGER])
    for (const dtype of ["float32", "float64"] as const)
      it(`${c.name} ${dtype}`, async () => {
        await core.ready();
        const args = c.make(dtype, testkit.makeRng(c.name.length * 31 + dtype.length)) as Args;
        try {
          checkCase(args, dtype);
        } finally {
          for (const t of [args[0], args[1], args[2]?.bias]) t?.dispose();
        }
      });

  it("offset and transposed views of the typical case, float32", async () => {
    await core.ready();
    const typical = testkit.sampleCase("conv2d")!;
    for (const view of ["offset", "transposed"] as const) {
      const made = typical.make("float32", testkit.makeRng(7)) as Args;
      const args = made.map((a) =>
        a instanceof core.Tensor ? (testkit.viewOf("conv2d", a, view) ?? a) : a,
      ) as Args;
      try {
        checkCase(args, "float32");
      } finally {
        for (const t of new Set([...made, ...args])) if (t instanceof core.Tensor) t.dispose();
      }
    }
  });
});
