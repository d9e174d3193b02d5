/**
 * astype() / to(dtype) of webgpu tensors, converted on the device (convert.ts): every pair
 * of the dtypes WGSL can hold, bit for bit against the host's conversion of the same
 * elements (core's dtype.ts, itself checked against torch), on contiguous tensors and
 * on strided, offset and broadcast views. Values: the cases where rounding, wrapping
 * and special values differ (ties, subnormals, overflow, NaN, -0), and random ones.
 */
import { type DType, DTypeError, Tensor, tensor } from "@backplane/core";
import { describe, expect } from "vitest";
import { gpuIt } from "./helpers.ts";

const CONVERTED: DType[] = ["float32", "float16", "bfloat16", "int32", "uint8", "int8", "bool"];

/** A seeded generator, so a failure repeats. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const FLOAT_EDGES = [
  0,
  -0,
  1,
  -1,
  0.5,
  -0.99,
  0.99,
  255.7,
  -128.5,
  256,
  -129,
  65504,
  65519.99,
  65520,
  -65520,
  // float16 ties: 1 + 2^-11 rounds to 1, 1 + 3 2^-11 up to 1 + 2^-9
  1 + 2 ** -11,
  1 + 3 * 2 ** -11,
  // bfloat16 ties: 1 + 2^-8 to 1, 1 + 3 2^-8 up
  1 + 2 ** -8,
  1 + 3 * 2 ** -8,
  // float16 subnormals, the smallest, a tie at half of it, and just over the tie
  2 ** -24,
  2 ** -25,
  2 ** -25 * (1 + 2 ** -20),
  3 * 2 ** -25,
  6.1e-5,
  -6.09e-5,
  2 ** -14,
  // float32 subnormals
  1e-40,
  -1e-45,
  1.17e-38,
  2 ** 24 + 2,
  3e9,
  -3e9,
  2 ** 31,
  -(2 ** 31),
  2 ** 32 + 2 ** 9,
  1e20,
  -1e20,
  3.4e38,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.NaN,
];

const INT_EDGES = [
  0,
  1,
  -1,
  127,
  128,
  -128,
  -129,
  255,
  256,
  65504,
  65520,
  2 ** 24 + 1,
  2 ** 24 + 3,
  -(2 ** 24) - 1,
  2 ** 24 + 2 ** 16 + 1,
  2 ** 31 - 1,
  -(2 ** 31),
  123456789,
  -987654321,
];

/** A host tensor of `dtype` whose elements cover its edge cases and random values. */
function sample(dtype: DType, seed: number): Tensor {
  const r = lcg(seed);
  if (dtype === "float16" || dtype === "bfloat16") {
    // Every bit pattern: every value, subnormal, infinity and NaN of the format.
    return tensor(
      Uint16Array.from({ length: 65536 }, (_, i) => i),
      { dtype },
    );
  }
  if (dtype === "uint8" || dtype === "int8") {
    return tensor(
      Uint8Array.from({ length: 256 }, (_, i) => i),
      { dtype: "uint8" },
    ).astype(dtype);
  }
  if (dtype === "bool") return tensor(Array.from({ length: 37 }, () => r() < 0.5));
  if (dtype === "int32") {
    const rand = Array.from({ length: 200 }, () => Math.floor(r() * 2 ** 32) - 2 ** 31);
    return tensor([...INT_EDGES, ...rand], { dtype });
  }
  const rand = Array.from({ length: 300 }, (_, i) => (r() - 0.5) * 10 ** ((i % 14) - 6));
  return tensor([...FLOAT_EDGES, ...rand], { dtype: "float32" });
}

/** A format's NaN test on raw bits (its payload and sign are the engine's to choose). */
const IS_NAN: Partial<Record<DType, (bits: number) => boolean>> = {
  float32: (b) => (b & 0x7fffffff) > 0x7f800000,
  float16: (b) => (b & 0x7fff) > 0x7c00,
  bfloat16: (b) => (b & 0x7fff) > 0x7f80,
};

/**
 * Each element's raw bits, read back to the host; every NaN as "NaN" (the host's typed
 * arrays may keep or drop a NaN's payload, so only that it is a NaN is compared).
 */
async function bitsOf(t: Tensor): Promise<(number | string)[]> {
  const d = await t.data();
  const bytes = d.BYTES_PER_ELEMENT;
  const view =
    bytes === 4
      ? new Uint32Array(d.buffer, d.byteOffset, d.length)
      : bytes === 2
        ? new Uint16Array(d.buffer, d.byteOffset, d.length)
        : new Uint8Array(d.buffer, d.byteOffset, d.length);
  const nan = IS_NAN[t.dtype];
  return Array.from(view, (b) => (nan?.(b) ? "NaN" : b));
}

describe("astype on the webgpu device", () => {
  gpuIt(
    "converts every pair bit for bit as the host does (any NaN a NaN), contiguous",
    async () => {
      for (const from of CONVERTED) {
        const host = sample(from, 7);
        const gpu = host.to("webgpu");
        for (const to of CONVERTED) {
          if (to === from) continue;
          const want = host.astype(to);
          const got = gpu.astype(to);
          expect(got.device).toBe("webgpu");
          expect(got.dtype).toBe(to);
          expect(got.shape).toEqual(host.shape);
          expect(await bitsOf(got), `${from} -> ${to}`).toEqual(await bitsOf(want));
          got.dispose();
          want.dispose();
        }
        gpu.dispose();
        host.dispose();
      }
    },
  );

  gpuIt("reads strided, offset and broadcast views, and to(dtype) is astype", async () => {
    const view = (t: Tensor, shape: number[], strides: number[], offset: number) => {
      t.storage.retain();
      return new Tensor(t.storage, t.dtype, shape, strides, offset);
    };
    const makers = [
      (t: Tensor) => t.transpose(0, 1),
      (t: Tensor) => view(t, [5, 3], [1, 6], 7), // rows 1-3, columns 1-5, transposed
      (t: Tensor) => view(t, [3, 6], [0, 1], 12), // row 2 broadcast
      (t: Tensor) => view(t, [], [], 29), // a 0-d view of the last element
    ];
    const r = lcg(11);
    const base = Array.from({ length: 30 }, () => (r() - 0.5) * 600);
    for (const from of CONVERTED) {
      const host = tensor(base, { shape: [5, 6] }).astype(from);
      const gpu = host.to("webgpu");
      for (const to of CONVERTED) {
        if (to === from) continue;
        for (const make of makers) {
          const [hv, gv] = [make(host), make(gpu)];
          const want = hv.astype(to);
          const got = gv.to(to);
          expect(got.isContiguous).toBe(true);
          expect(await bitsOf(got), `${from} -> ${to} [${hv.shape}]`).toEqual(await bitsOf(want));
          for (const t of [hv, gv, want, got]) t.dispose();
        }
      }
      gpu.dispose();
      host.dispose();
    }
  });

  gpuIt("keeps empty tensors empty", async () => {
    const e = tensor([], { dtype: "float32", shape: [0, 3] }).to("webgpu");
    const c = e.astype("float16");
    expect(c.shape).toEqual([0, 3]);
    expect(c.dtype).toBe("float16");
    expect(await c.array()).toEqual([]);
    c.dispose();
    e.dispose();
  });

  gpuIt("refuses 8-byte dtypes with a DTypeError that says how to convert", () => {
    const a = tensor([1.5, 2], { dtype: "float32" }).to("webgpu");
    for (const to of ["float64", "int64"] as const) {
      expect(() => a.astype(to)).toThrow(DTypeError);
      expect(() => a.astype(to)).toThrow(/toAsync\("cpu"\)/);
    }
    a.dispose();
  });
});
