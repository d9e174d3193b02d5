/**
 * The view and shape methods held to torch 2.13 (CPU): which reshapes are views and with
 * what strides (torch's computeStride), is_contiguous of empty tensors, and typed errors
 * for malformed views. Expected strides below were computed by torch
 * (torch.as_strided(base, shape, strides, offset).reshape(newShape).stride()).
 */
import { empty, relu, ShapeError, seededRandom, Tensor, tensor } from "@backplane/core";
import { describe, expect, it } from "vitest";

/** A float64 base of `n` random values, and those values. */
function randomBase(n: number, seed: number): { base: Tensor; values: Float64Array } {
  const r = seededRandom(seed);
  const values = Float64Array.from({ length: n }, () => r() * 2 - 1);
  return { base: tensor(values), values };
}

/** A view of `base` (the view holds its own reference to the storage). */
function viewOf(base: Tensor, shape: number[], strides: number[], offset: number): Tensor {
  base.storage.retain();
  return new Tensor(base.storage, base.dtype, shape, strides, offset);
}

/** The view's elements in row-major order, walked here from the raw values. */
function expectedElements(
  values: Float64Array,
  shape: number[],
  strides: number[],
  offset: number,
): number[] {
  const out: number[] = [];
  const walk = (d: number, pos: number): void => {
    if (d === shape.length) out.push(values[pos]!);
    else for (let i = 0; i < shape[d]!; i++) walk(d + 1, pos + i * strides[d]!);
  };
  walk(0, offset);
  return out;
}

// [shape, strides, offset, newShape, torch's strides (null: torch copies)]
const RESHAPES: [number[], number[], number, number[], number[] | null][] = [
  [[5], [3], 3, [5, 1, 1, 1], [3, 3, 3, 3]],
  [[7, 7, 5], [0, 3, 1], 0, [1, 7, 7, 5], [0, 0, 3, 1]],
  [[7, 7, 5], [0, 3, 1], 0, [7, 35], null],
  [[7, 7, 5], [0, 3, 1], 0, [49, 5], null],
  [[4, 3], [1, 4], 2, [2, 2, 3], [2, 1, 4]],
  [[4, 3], [1, 4], 2, [12], null],
  [[4, 3], [1, 4], 2, [4, 1, 3, 1], [1, 12, 4, 4]],
  [[2, 3, 5], [0, 5, 1], 1, [2, 15], [0, 1]],
  [[2, 3, 5], [0, 5, 1], 1, [6, 5], null],
  [[3, 1, 2], [1, 7, 3], 0, [3, 2], [1, 3]],
  [[3, 1, 2], [1, 7, 3], 0, [6], null],
  [[2, 2, 3], [24, 12, 2], 4, [4, 3, 1], [12, 2, 2]],
  [[2, 2, 3], [24, 12, 2], 4, [2, 6], null],
  [[], [], 5, [1, 1], [1, 1]],
];

describe("reshape is a view wherever torch's is", () => {
  it("non-contiguous views that torch reshapes without a copy share the storage, with torch's strides", () => {
    const { base, values } = randomBase(80, 7);
    for (const [shape, strides, offset, newShape, torchStrides] of RESHAPES) {
      const what = `[${shape}] strides [${strides}] offset ${offset} -> [${newShape}]`;
      const v = viewOf(base, shape, strides, offset);
      const r = v.reshape(newShape);
      expect(r.shape, what).toEqual(newShape);
      expect([...r.toFloat64()], what).toEqual(expectedElements(values, shape, strides, offset));
      expect(r.storage === base.storage, what).toBe(torchStrides !== null);
      if (torchStrides !== null) {
        expect(r.strides, what).toEqual(torchStrides);
        expect(r.offset, what).toBe(offset);
      } else {
        expect(r.isContiguous, what).toBe(true);
      }
      r.dispose();
      v.dispose();
    }
    base.dispose();
  });

  it("a write through the storage shows in the reshaped view, as in torch", () => {
    const { base } = randomBase(12, 3);
    const t = viewOf(base, [4, 3], [1, 4], 0); // a transpose of [3, 4]
    const r = t.reshape([2, 2, 3]);
    (base.hostData() as Float64Array)[5] = 42; // t[1][1], so r[0][1][1]
    expect((r.toArray() as number[][][])[0]![1]![1]).toBe(42);
    for (const x of [r, t, base]) x.dispose();
  });
});

describe("isContiguous", () => {
  it("is true for any empty tensor, whatever its strides (torch: is_contiguous of t(empty(3, 0)))", () => {
    const { base } = randomBase(8, 1);
    for (const [shape, strides] of [
      [
        [0, 3],
        [1, 1],
      ],
      [
        [7, 0],
        [0, 0],
      ],
      [
        [2, 0, 2],
        [0, 2, 1],
      ],
      [
        [3, 2, 7, 0, 2],
        [2, 1, 3, 3, 2],
      ],
    ] as [number[], number[]][]) {
      const v = viewOf(base, shape, strides, 0);
      expect(v.isContiguous, `[${shape}] strides [${strides}]`).toBe(true);
      v.dispose();
    }
    base.dispose();
  });
});

describe("strides of empty tensors", () => {
  it("count a size-0 dim as 1, as torch's (torch.empty(2, 0, 3).stride() is (3, 3, 1))", () => {
    expect(empty([2, 0, 3]).strides).toEqual([3, 3, 1]);
    expect(empty([0, 2, 0, 5]).strides).toEqual([10, 5, 5, 1]);
    expect(empty([7, 0]).strides).toEqual([1, 1]);
  });

  it("reshape of an empty view keeps its strides for the same shape, and its offset", () => {
    const { base } = randomBase(8, 5);
    const e = viewOf(base, [0], [4], 2);
    const same = e.reshape([0]);
    const other = e.reshape([2, 0, 3]);
    expect([same.strides, same.offset]).toEqual([[4], 2]);
    expect([other.strides, other.offset]).toEqual([[3, 3, 1], 2]);
    for (const x of [same, other, e, base]) x.dispose();
  });
});

describe("shape and strides are read-only", () => {
  it("a write to shape or strides is refused before anything reads the storage", () => {
    const { base } = randomBase(4, 4);
    const writes: ((t: Tensor) => void)[] = [
      // Unchecked, this made every later kernel read 64 elements of a 4-element storage.
      (t) => {
        (t.shape as number[])[0] = 64;
      },
      (t) => {
        (t.strides as number[])[1] = 9;
      },
      (t) => {
        (t.strides as number[])[0] = -1;
      },
      (t) => {
        (t.shape as number[]).push(2);
      },
      (t) => {
        (t.shape as number[])[1] = 1.5;
      },
    ];
    for (const write of writes) {
      const t = viewOf(base, [2, 2], [1, 2], 0);
      expect(t.toArray()).toEqual(t.contiguous().toArray());
      write(t);
      for (const use of [
        () => relu(t),
        () => t.dataSync(),
        () => t.contiguous(),
        () => t.reshape([4]),
        () => t.hostData(),
      ])
        expect(use).toThrow(/shape or strides changed after the tensor was made/);
      expect(() => relu(t)).toThrow(ShapeError);
      t.dispose();
    }
    base.dispose();
  });
});
