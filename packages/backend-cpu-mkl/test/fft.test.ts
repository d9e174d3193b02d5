/**
 * The WASM FFT kernels (wasm-fft, wasm-ifft, wasm-rfft, wasm-irfft) against the core's float64
 * reference, and what they must refuse.
 */
import {
  empty,
  explain,
  fft,
  ifft,
  irfft,
  ready,
  rfft,
  seededRandom,
  Tensor,
  withKernelPriority,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import "../src/index.ts";

const OPS = { fft, ifft, rfft, irfft } as const;
type Kind = keyof typeof OPS;
/** Worst error relative to the reference's largest magnitude, per dtype. */
const TOL = { float32: 1e-5, float64: 1e-12 } as const;

/** A [3, len(, 2)] tensor of uniform [-1, 1) values, complex ones with a strided (re, im) pair. */
function input(kind: Kind, len: number, dtype: "float32" | "float64", seed: number): Tensor {
  const rng = seededRandom(seed);
  if (kind === "rfft") {
    const t = empty([3, len], { dtype });
    const h = t.hostData() as Float32Array;
    for (let i = 0; i < h.length; i++) h[i] = 2 * rng() - 1;
    return t;
  }
  // Stored as [2, 3, len]: the view [3, len, 2] has its re/im stride 3 * len.
  const base = empty([2, 3, len], { dtype });
  const h = base.hostData() as Float32Array;
  for (let i = 0; i < h.length; i++) h[i] = 2 * rng() - 1;
  return new Tensor(base.storage, dtype, [3, len, 2], [len, 1, 3 * len]);
}

function run(kind: Kind, kernel: string, x: Tensor): Float64Array {
  return withKernelPriority(kind, [kernel], () => {
    expect(explain(kind, x).selected).toBe(kernel);
    return OPS[kind](x).toFloat64();
  });
}

describe("WASM FFT kernels", () => {
  for (const kind of Object.keys(OPS) as Kind[]) {
    for (const dtype of ["float32", "float64"] as const) {
      it(`wasm-${kind} matches the float64 reference (${dtype}, even, odd, prime, power-of-two n)`, async () => {
        await ready();
        for (const len of [1, 2, 3, 8, 12, 97]) {
          if (kind === "irfft" && len === 1) continue; // n = 2 * (1 - 1) = 0
          const x = input(kind, len, dtype, 100 + len);
          const got = run(kind, `wasm-${kind}`, x);
          const want = run(kind, "reference", x);
          const scale = Math.max(...want.map(Math.abs));
          const err = Math.max(...got.map((g, i) => Math.abs(g - want[i]!)));
          expect(err / scale, `n=${len}`).toBeLessThan(TOL[dtype]);
        }
      });
    }
  }

  it("refuses a length whose workspace passes 2 GiB (it used to overrun a 64-byte block)", async () => {
    await ready();
    // n = 2^24 + 1 takes Bluestein on a 2^26 grid: 40 * 2^26 bytes. A stride-0 view keeps it cheap.
    const n = 2 ** 24 + 1;
    const base = empty([2], { dtype: "float32" });
    const x = new Tensor(base.storage, "float32", [n, 2], [0, 1]);
    const e = withKernelPriority("fft", ["wasm-fft"], () => explain("fft", x));
    expect(e.selected).toBe("reference");
    const wasm = e.candidates.find((c) => c.kernel === "wasm-fft")!;
    expect(wasm.accepted).toBe(false);
    expect(wasm.reason).toMatch(/2 GiB/);
    // 2^23 + 1 still fits (about 1.5 GiB of workspace).
    const fits = new Tensor(base.storage, "float32", [2 ** 23 + 1, 2], [0, 1]);
    expect(withKernelPriority("fft", ["wasm-fft"], () => explain("fft", fits).selected)).toBe(
      "wasm-fft",
    );
  });

  it("refuses lengths past 2^29 without hanging (the workspace size's power of two wrapped in i32)", async () => {
    await ready();
    // Bluestein needs a grid >= 2n - 1: for n in (2^29, 2^30] doubling an i32 past 2^30 wrapped
    // to 0 and looped forever, in supports(), so explain() and every call hung. rfft of even n
    // sizes its workspace for n / 2, so n = 2^31 - 2 hit the same loop.
    const base = empty([2], { dtype: "float32" });
    const views: [Kind, Tensor][] = [
      ["fft", new Tensor(base.storage, "float32", [2 ** 29 + 1, 2], [0, 1])],
      ["ifft", new Tensor(base.storage, "float32", [2 ** 30 - 1, 2], [0, 1])],
      ["rfft", new Tensor(base.storage, "float32", [2 ** 31 - 2], [0])],
      // Past i32: n = 2^31 + 2 wrapped to a negative length, which the kernel accepted.
      ["rfft", new Tensor(base.storage, "float32", [2 ** 31 + 2], [0])],
    ];
    for (const [kind, x] of views) {
      const e = withKernelPriority(kind, [`wasm-${kind}`], () => explain(kind, x));
      const wasm = e.candidates.find((c) => c.kernel === `wasm-${kind}`)!;
      expect(wasm.accepted, `${kind} [${x.shape}]`).toBe(false);
      expect(wasm.reason).toMatch(/2 GiB/);
    }
  });
});
