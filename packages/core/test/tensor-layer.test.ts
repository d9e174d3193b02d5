/**
 * The Tensor and creation layer against torch 2.13 (values measured with the CPU oracle and
 * written here as constants). Casts are compared bit for bit: tolerance 0 for every dtype.
 */
import {
  ArgumentError,
  bytesPerElement,
  DTypeError,
  full,
  memoryStats,
  ones,
  rand,
  randn,
  ShapeError,
  softmax,
  Tensor,
  tensor,
  zeros,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import { normalizeDim } from "../src/tensor/tensor.ts";
import { show } from "../src/util/format.ts";

describe("shapes and dims as torch takes them", () => {
  it("a 0-d tensor transposes to itself; dim -1 of rank 0 is 0", () => {
    const s = tensor(1.5);
    // torch.tensor(1.5).transpose(0, 0) and .transpose(-1, 0) are tensor(1.5).
    expect(s.transpose(0, 0).toArray()).toBe(1.5);
    expect(s.transpose(-1, 0).shape).toEqual([]);
    expect(normalizeDim("dim", -1, 0)).toBe(0);
    expect(() => s.transpose(-2, 0)).toThrow(ShapeError);
  });

  it("reshape refuses a -1 next to a size 0, as torch does; [3, -1] of [0, 3] is [3, 0]", () => {
    expect(() => zeros([0]).reshape([0, -1])).toThrow(ShapeError);
    expect(() => zeros([2, 0]).reshape([-1, 0])).toThrow(/could be any size/);
    expect(zeros([0, 3]).reshape([3, -1]).shape).toEqual([3, 0]);
    expect(zeros([0, 3]).reshape([-1, 3]).shape).toEqual([0, 3]);
  });

  it("a dim that is not an integer is a ShapeError that says so, not 'out of range'", () => {
    const x = randn([2, 3]);
    for (const dim of [1.5, "1", null, Number.NaN])
      expect(() => softmax(x, dim as never), show(dim)).toThrow(/must be an integer/);
    expect(() => softmax(x, 2)).toThrow(/out of range/);
    // ...and names the dims it takes, as torch does ("expected to be in range of [-2, 1]").
    expect(() => softmax(x, -3)).toThrow(/expected a dimension in \[-2, 1\]/);
    expect(() => tensor(1.5).transpose(1, 0)).toThrow(/in \[-1, 0\]/);
    x.dispose();
  });

  it("new Tensor over something that is not a storage is an ArgumentError, not a TypeError", () => {
    const base = tensor([1, 2, 3]);
    // storage.retain() returns nothing: passing its result was a "reading 'byteLength'" TypeError.
    const retained = base.storage.retain();
    for (const storage of [undefined, null, retained, {}, 5])
      expect(() => new Tensor(storage as never, "float32", [1]), show(storage)).toThrow(
        ArgumentError,
      );
    base.storage.release(); // the reference retain() took
    base.dispose();
  });

  it("bytesPerElement of an unknown dtype is a DTypeError, not a TypeError", () => {
    expect(() => bytesPerElement("complex64" as never)).toThrow(DTypeError);
    expect(bytesPerElement("bfloat16")).toBe(2);
  });
});

describe("random creation", () => {
  it("rand and randn of an integer or bool dtype are a DTypeError, as in torch", () => {
    for (const dtype of ["int32", "int64", "int8", "uint8", "bool"] as const) {
      expect(() => rand([3], { dtype }), dtype).toThrow(DTypeError);
      expect(() => randn([3], { dtype }), dtype).toThrow(DTypeError);
    }
  });

  it("rand stays below 1 in every float dtype (bfloat16 rounded 1 in 512 values up to 1)", () => {
    for (const dtype of ["bfloat16", "float16", "float32", "float64"] as const) {
      const v = rand([100_000], { dtype, seed: 3 }).toFloat64();
      expect(
        v.every((x) => x >= 0 && x < 1),
        dtype,
      ).toBe(true);
    }
    // Values that did not round to 1 are as before: the seed still reproduces them.
    expect(rand([5], { seed: 9 }).toArray()).toEqual(rand([5], { seed: 9 }).toArray());
  });
});

describe("casts round as torch's", () => {
  it("int64 to float32 rounds once (through float64 it rounded twice)", () => {
    const x = 2n ** 60n + 2n ** 36n + 1n;
    const want = 2 ** 60 + 2 ** 37; // torch.tensor([x]).float()
    expect(tensor([x]).astype("float32").toFloat64()[0]).toBe(want);
    expect(tensor(new BigInt64Array([x]), { dtype: "float32" }).toFloat64()[0]).toBe(want);
    expect(tensor([-x]).astype("float32").toFloat64()[0]).toBe(-want);
    // int64 to bfloat16 goes through float32 in torch: 2^40 + 2^32 + 1 gives 2^40.
    expect(
      tensor([2n ** 40n + 2n ** 32n + 1n])
        .astype("bfloat16")
        .toFloat64()[0],
    ).toBe(2 ** 40);
    expect(
      tensor([2n ** 63n - 1n])
        .astype("float32")
        .toFloat64()[0],
    ).toBe(2 ** 63);
  });

  it("float64 to float16 goes through float32, as torch's .half()", () => {
    const x = new Float64Array([1 + 2 ** -11 + 2 ** -40, (2.5 + 2 ** -43) * 2 ** -24, 65519.99]);
    // torch.tensor(x, dtype=torch.float64).half(): [1.0, 2^-23, 65504]
    expect([...tensor(x).astype("float16").toFloat64()]).toEqual([1, 2 ** -23, 65504]);
    expect([...tensor(x, { dtype: "float16" }).toFloat64()]).toEqual([1, 2 ** -23, 65504]);
  });

  it("to(dtype) is astype, as torch's t.to(torch.float16)", () => {
    const t = tensor([1.5, -2.25]).transpose(0, 0);
    const h = t.to("float16");
    expect(h.dtype).toBe("float16");
    expect(h.toArray()).toEqual([1.5, -2.25]);
  });
});

describe("memory accounting", () => {
  it("a creation with a malformed device name holds no buffer", () => {
    const before = memoryStats("cpu").liveBuffers;
    expect(() => full([4], 1, { device: "Bad!" })).toThrow(/device must be a string/);
    expect(() => ones([4], { device: 5 as never })).toThrow(/device must be a string/);
    expect(() => rand([4], { device: "a b" })).toThrow(/device must be a string/);
    expect(() => randn([4], { device: "a b" })).toThrow(/device must be a string/);
    expect(memoryStats("cpu").liveBuffers).toBe(before);
  });

  it("asking for a device's stats does not add the device to memoryStats()", () => {
    expect(memoryStats("tpu:3").allocatedBytes).toBe(0);
    expect(Object.keys(memoryStats())).not.toContain("tpu:3");
  });
});

describe("show() in error messages", () => {
  it("writes a tensor in brief, not its storage as JSON", () => {
    expect(show(randn([2, 3]))).toBe("Tensor(float32, [2, 3])");
    expect(show({ dtype: 3, shape: [1] })).toBe('{"dtype":3,"shape":[1]}');
    expect(show([1, 2])).toBe("[1,2]");
  });
});
