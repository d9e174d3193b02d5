/**
 * Views are checked where they are made (as torch's as_strided): a view that reaches past
 * its storage, or has a fractional, negative or NaN offset or stride, is a ShapeError, so no
 * kernel ever reads outside its memory (native BLAS segfaulted on such a view, WASM trapped,
 * the reference read NaN, wasm-relu returned a neighbouring tensor's values).
 */
import { matmul, randn, relu, ShapeError, Tensor, tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";

describe("views are bounds-checked where they are made", () => {
  const small = randn([64], { seed: 1, dtype: "float64" });

  it("past the storage, or with bad offsets and strides: a ShapeError that says why", () => {
    const bad: [string, () => Tensor][] = [
      ["row stride 1e6", () => new Tensor(small.storage, "float64", [400, 100], [1e6, 1], 0)],
      ["offset 2^28", () => new Tensor(small.storage, "float64", [2], [1], 2 ** 28)],
      ["offset 0.5", () => new Tensor(small.storage, "float64", [2], [1], 0.5)],
      ["negative stride", () => new Tensor(small.storage, "float64", [4], [-1], 3)],
      ["NaN stride", () => new Tensor(small.storage, "float64", [4], [Number.NaN], 0)],
      ["strides of the wrong rank", () => new Tensor(small.storage, "float64", [4, 4], [4], 0)],
      ["fractional size", () => new Tensor(small.storage, "float64", [2.5], [1], 0)],
      ["one past the end", () => new Tensor(small.storage, "float64", [65], [1], 0)],
      [
        "float32 view of 129 elements over 512 bytes",
        () => new Tensor(small.storage, "float32", [129], [1], 0),
      ],
    ];
    for (const [name, make] of bad) expect(make, name).toThrow(ShapeError);
    expect(() => new Tensor(small.storage, "float64", [400, 100], [1e6, 1], 0)).toThrow(
      /reaches element 399000099 of a float64 storage of 64 elements/,
    );
  });

  it("the largest legal views pass: last element, stride 0, overlapping rows, empty", () => {
    expect(new Tensor(small.storage, "float64", [64], [1], 0).numel).toBe(64);
    expect(new Tensor(small.storage, "float64", [1], [1], 63).toFloat64()[0]).toBe(
      small.toFloat64()[63],
    );
    expect(new Tensor(small.storage, "float32", [128], [1], 0).numel).toBe(128);
    expect(new Tensor(small.storage, "float64", [1000, 64], [0, 1], 0).numel).toBe(64000);
    expect(new Tensor(small.storage, "float64", [33, 32], [1, 1], 0).numel).toBe(1056);
    expect(new Tensor(small.storage, "float64", [0, 5], [5, 1], 64).numel).toBe(0);
  });

  it("an op never sees an out-of-bounds view: the reproducers of the segfault and the stray read", () => {
    expect(() => {
      const a = new Tensor(small.storage, "float64", [400, 100], [1e6, 1], 0);
      return matmul(a, randn([100, 3], { dtype: "float64" }));
    }).toThrow(ShapeError);
    const two = randn([2], { seed: 2 });
    expect(() => relu(new Tensor(two.storage, "float32", [64], [1], 0))).toThrow(ShapeError);
  });
});

describe("falsy option values are checked by type", () => {
  it("conv2d's bias and attention's attnMask of 0, false, '' or NaN are ArgumentErrors, not 'absent'", async () => {
    const { ArgumentError, conv2d, multiHeadAttention, scaledDotProductAttention } = await import(
      "@backplane/core"
    );
    const x = randn([1, 2, 5, 5]);
    const w = randn([3, 2, 3, 3]);
    const q = randn([1, 2, 4, 8]);
    const e = randn([4, 8]);
    const mha = {
      inProjWeight: randn([24, 8]),
      outProjWeight: randn([8, 8]),
      numHeads: 2,
    };
    for (const v of [0, false, "", Number.NaN]) {
      expect(() => conv2d(x, w, { bias: v as never }), `bias ${String(v)}`).toThrow(ArgumentError);
      expect(() => scaledDotProductAttention(q, q, q, { attnMask: v as never })).toThrow(
        /attnMask must be a Tensor/,
      );
      expect(() => multiHeadAttention(e, e, e, { ...mha, attnMask: v as never })).toThrow(
        ArgumentError,
      );
    }
    // Absent stays absent: undefined and null mean no bias / no mask.
    expect(conv2d(x, w, { bias: null }).shape).toEqual([1, 3, 3, 3]);
    expect(scaledDotProductAttention(q, q, q, { attnMask: undefined }).shape).toEqual([1, 2, 4, 8]);
  });
});

describe("a strided view made contiguous keeps every element's bits", () => {
  it("float32 signalling NaNs and payloads, float64, int64 and float16, as torch copies them", () => {
    // 0x7fa00001 is a signalling NaN: read through a JS number it came out quiet (0x7fe00001).
    const bits = [0x7fa00001, 0xffc01234, 0x7f800000, 0x80000000, 0x3f800000, 0x00000001];
    const f32 = new Tensor(fromBits(bits).storage, "float32", [3, 2], [1, 3], 0);
    const copy = new Uint32Array(f32.contiguous().dataSync().buffer.slice(0));
    // The transpose of [[a, b, c], [d, e, f]] read row-major: a, d, b, e, c, f.
    expect(Array.from(copy.slice(0, 6))).toEqual([0, 3, 1, 4, 2, 5].map((i) => bits[i]! >>> 0));
    for (const [dtype, words] of [
      ["float64", 2],
      ["int64", 2],
      ["float16", 0.5],
    ] as const) {
      const base = randn([4, 6], { dtype: dtype === "int64" ? "float64" : dtype, seed: 3 });
      const t = dtype === "int64" ? new Tensor(base.storage, "int64", [4, 6], [6, 1], 0) : base;
      const view = t.transpose(0, 1);
      const raw = (x: Tensor) => {
        const d = x.dataSync();
        return Array.from(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      };
      const got = raw(view.contiguous());
      // The same bytes, element by element, as the view addresses them.
      const src = new Uint8Array(t.hostData().buffer, t.hostData().byteOffset, 24 * words * 4);
      const want: number[] = [];
      const bpe = words * 4;
      for (let j = 0; j < 6; j++)
        for (let i = 0; i < 4; i++)
          want.push(...src.slice((i * 6 + j) * bpe, (i * 6 + j + 1) * bpe));
      expect(got, dtype).toEqual(want);
    }
  });
});

function fromBits(bits: number[]): Tensor {
  const t = tensor(new Float32Array(bits.length));
  new Uint32Array(t.hostData().buffer, t.hostData().byteOffset, bits.length).set(bits);
  return t;
}
