import {
  DeviceError,
  DisposedError,
  DTypeError,
  empty,
  full,
  memoryStats,
  randn,
  ShapeError,
  tensor,
  zeros,
} from "@backplane/core";
import { bf16ToNumber, f16ToNumber, numberToBf16, numberToF16 } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { registerHostBackedDevice } from "../src/index.ts";

describe("tensor", () => {
  it("is made from nested arrays and typed arrays, and reads back", () => {
    const t = tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(t.shape).toEqual([2, 3]);
    expect(t.dtype).toBe("float32");
    expect(t.toArray()).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(tensor(new Int32Array([1, 2])).dtype).toBe("int32");
    expect(tensor([true, false]).toArray()).toEqual([true, false]);
    expect(tensor(new Float64Array([1, 2, 3, 4]), { shape: [2, 2] }).toArray()).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(tensor([1n, 2n]).dtype).toBe("int64");
    expect(tensor(5, { dtype: "float64" }).toArray()).toBe(5);
  });

  it("rejects ragged data, bad shapes and dtypes with typed errors", () => {
    expect(() => tensor([[1, 2], [3]])).toThrow(ShapeError);
    expect(() => tensor([1, 2, 3], { shape: [2, 2] })).toThrow(/needs 4 elements, got 3/);
    expect(() => tensor([1], { dtype: "float8" as never })).toThrow(DTypeError);
    expect(() => tensor(["a"] as never)).toThrow(DTypeError);
    expect(() => empty([2, -1])).toThrow(ShapeError);
    expect(() => zeros([2], { device: "tpu:0" })).toThrow(DeviceError);
    expect(() => zeros([2], { device: "mps" })).toThrow(
      /Install and import @backplane\/backend-mps/,
    );
  });

  it("float16 and bfloat16 round to nearest even and come back", () => {
    for (const x of [0, 1, -2.5, 0.1, 65504, 1e-7, Math.PI]) {
      expect(Math.abs(f16ToNumber(numberToF16(x)) - x)).toBeLessThan(
        Math.max(Math.abs(x) * 2 ** -11, 2 ** -25),
      );
      expect(Math.abs(bf16ToNumber(numberToBf16(x)) - x)).toBeLessThan(
        Math.max(Math.abs(x) * 2 ** -8, 1e-38),
      );
    }
    expect(numberToF16(1e6)).toBe(0x7c00);
    expect(Number.isNaN(f16ToNumber(numberToF16(Number.NaN)))).toBe(true);
    expect(numberToF16(1 + 2 ** -11)).toBe(0x3c00); // tie goes to even
    expect(tensor([1.5, -0.25], { dtype: "float16" }).toArray()).toEqual([1.5, -0.25]);
    expect(tensor([1.5], { dtype: "bfloat16" }).astype("float64").toArray()).toEqual([1.5]);
  });

  it("transpose and permute are views; reshape of a view copies", () => {
    const t = tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const tt = t.transpose(0, 1);
    expect(tt.storage).toBe(t.storage);
    expect(tt.isContiguous).toBe(false);
    expect(tt.toArray()).toEqual([
      [1, 4],
      [2, 5],
      [3, 6],
    ]);
    expect(tt.reshape([6]).toArray()).toEqual([1, 4, 2, 5, 3, 6]);
    expect(t.reshape([3, -1]).storage).toBe(t.storage);
    expect(t.permute([1, 0]).toArray()).toEqual(tt.toArray());
    expect(() => t.permute([0, 0])).toThrow(/repeat a dimension/);
    expect(() => t.reshape([4, 2])).toThrow(ShapeError);
  });

  it("dispose frees storage once every view is gone; use after dispose is a typed error", () => {
    const before = memoryStats("cpu");
    const t = zeros([256]);
    const v = t.reshape([16, 16]);
    expect(memoryStats("cpu").allocatedBytes).toBe(before.allocatedBytes + 1024);
    t.dispose();
    expect(t.disposed).toBe(true);
    expect(() => t.toArray()).toThrow(DisposedError);
    expect(v.toArray()).toHaveLength(16);
    v.dispose();
    v.dispose();
    expect(memoryStats("cpu").allocatedBytes).toBe(before.allocatedBytes);
    {
      using _u = full([8], 2);
      expect(memoryStats("cpu").liveBuffers).toBe(before.liveBuffers + 1);
    }
    expect(memoryStats("cpu").liveBuffers).toBe(before.liveBuffers);
  });

  it("randn is reproducible from a seed and looks normal", () => {
    const a = randn([4000], { seed: 7, dtype: "float64" }).toFloat64();
    const b = randn([4000], { seed: 7, dtype: "float64" }).toFloat64();
    expect(a).toEqual(b);
    const mean = a.reduce((s, x) => s + x, 0) / a.length;
    const variance = a.reduce((s, x) => s + (x - mean) ** 2, 0) / a.length;
    expect(Math.abs(mean)).toBeLessThan(0.06);
    expect(Math.abs(variance - 1)).toBeLessThan(0.08);
  });

  it("a third-party device plugs in through the memory contract", async () => {
    // Host RAM behind opaque handles with async-only readback, as a GPU allocator behaves.
    registerHostBackedDevice("testdev");
    const before = memoryStats("testdev:1").liveBuffers;
    const t = tensor(
      [
        [1, 2],
        [3, 4],
      ],
      { device: "testdev:1" },
    );
    expect(t.device).toBe("testdev:1");
    expect(t.deviceType).toBe("testdev");
    expect(memoryStats("testdev:1").liveBuffers).toBe(before + 1);
    expect(() => t.toArray()).toThrow(/can only be read asynchronously; use await t.data\(\)/);
    expect(await t.array()).toEqual([
      [1, 2],
      [3, 4],
    ]);
    const back = await t.toAsync("cpu");
    expect(back.toArray()).toEqual([
      [1, 2],
      [3, 4],
    ]);
    t.dispose();
    expect(memoryStats("testdev:1").liveBuffers).toBe(before);
    expect(memoryStats("testdev:1").allocatedBytes).toBe(0);
  });

  it("astype on a device that converts nothing and reads back only asynchronously says how", () => {
    registerHostBackedDevice("testdev");
    const t = tensor([1.5, -2], { device: "testdev:1" });
    const live = memoryStats("testdev:1").liveBuffers;
    for (const convert of [(x: typeof t) => x.astype("float16"), (x: typeof t) => x.to("int32")]) {
      expect(() => convert(t)).toThrow(DeviceError);
      expect(() => convert(t)).toThrow(/await t\.toAsync\("cpu"\)\)\.astype/);
    }
    // The output allocated before the refusal is freed.
    expect(memoryStats("testdev:1").liveBuffers).toBe(live);
    t.dispose();
  });
});
