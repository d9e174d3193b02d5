/**
 * The WASM FFT kernels on a plain (unshared) CPU memory, as in a browser page that is not
 * cross-origin isolated. Growing such a memory detaches every view taken before; the kernels
 * took the output's view before allocating their workspace, so when that allocation grew the
 * memory every result was silently lost: rfft of 2^18 + 1 samples gave all zeros.
 */
import { loadOnPlainMemory, ownProcess } from "@backplane/testkit/plain-memory";
import { describe, expect, it } from "vitest";

// The core and this backend load on a plain memory (in a process of this file's own).
const { core, cpuMemory } = await loadOnPlainMemory(async () => {
  const core = await import("@backplane/core");
  const { cpuMemory } = await import("@backplane/core/cpu");
  await import("../src/index.ts");
  return { core, cpuMemory };
});

const OPS = { fft: core.fft, ifft: core.ifft, rfft: core.rfft, irfft: core.irfft } as const;
type Kind = keyof typeof OPS;

/** Uniform [-1, 1) values; complex kinds get a trailing (re, im) dim. */
function input(kind: Kind, len: number, seed: number) {
  const x = core.empty(kind === "rfft" ? [len] : [len, 2], { dtype: "float64" });
  const rng = core.seededRandom(seed);
  const h = x.hostData() as Float64Array;
  for (let i = 0; i < h.length; i++) h[i] = 2 * rng() - 1;
  return x;
}

function run(kind: Kind, kernel: string, x: ReturnType<typeof input>): Float64Array {
  return core.withKernelPriority(kind, [kernel], () => {
    expect(core.explain(kind, x).selected).toBe(kernel);
    return OPS[kind](x).toFloat64();
  });
}

describe.skipIf(!ownProcess)("WASM FFT kernels on a plain WASM memory", () => {
  it("the memory is plain here (else this file tests nothing)", async () => {
    await core.ready();
    expect(cpuMemory().shared).toBe(false);
  });

  // Bluestein lengths: their workspace (about 40 bytes per grid point, the grid >= 2n) is
  // more than the memory holds, so the kernel's first allocation grows it. Each case needs
  // twice the one before, as the memory keeps what it grew to.
  const cases: [Kind, number][] = [
    ["rfft", 2 ** 17 + 1],
    ["fft", 2 ** 18 + 3],
    ["ifft", 2 ** 19 + 5],
    ["irfft", 2 ** 20 + 4], // n = 2 * (len - 1): its half-length transform (2^20 + 3) is Bluestein
  ];
  for (const [kind, len] of cases) {
    it(`wasm-${kind} of length ${len} matches the reference when its workspace grows the memory`, async () => {
      await core.ready();
      const x = input(kind, len, len);
      const want = run(kind, "reference", x);
      const before = cpuMemory().memory.buffer.byteLength;
      const got = run(kind, `wasm-${kind}`, x);
      expect(cpuMemory().memory.buffer.byteLength, "the memory grew").toBeGreaterThan(before);
      let err = 0;
      let scale = 0;
      for (let i = 0; i < want.length; i++) {
        err = Math.max(err, Math.abs(got[i]! - want[i]!));
        scale = Math.max(scale, Math.abs(want[i]!));
      }
      expect(err / scale).toBeLessThan(1e-12);
    });
  }
});
