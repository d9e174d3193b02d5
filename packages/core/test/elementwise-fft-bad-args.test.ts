/**
 * Bad arguments to add/mul and the FFTs that torch refuses or handles differently:
 * - mixed dtypes: torch promotes, we do not (no implicit promotion); the DTypeError must say
 *   what to do, i.e. name the cast that gives torch's result dtype. It only said "they must
 *   match", and a b of a dtype add never takes was reported as a mismatch with a.
 * - fft's dim: null was taken as the default -1; torch raises ("argument 'dim' must be int,
 *   not NoneType"). n and norm of null stay the default, as torch's None.
 */
import {
  ArgumentError,
  add,
  DTypeError,
  fft,
  fromFloat64,
  ifft,
  irfft,
  mul,
  randn,
  rfft,
  type Tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

const DTYPES = ["int32", "bfloat16", "float16", "float32", "float64"] as const;
type D = (typeof DTYPES)[number];
// torch 2.13: (torch.ones(1, dtype=a) + torch.ones(1, dtype=b)).dtype, rows a, columns b.
const TORCH_PROMOTES: Record<D, readonly D[]> = {
  int32: ["int32", "bfloat16", "float16", "float32", "float64"],
  bfloat16: ["bfloat16", "bfloat16", "float32", "float32", "float64"],
  float16: ["float16", "float32", "float16", "float32", "float64"],
  float32: ["float32", "float32", "float32", "float32", "float64"],
  float64: ["float64", "float64", "float64", "float64", "float64"],
};

const ofDtype = (dtype: D, seed: number): Tensor =>
  fromFloat64(
    Float64Array.from(randn([2, 3], { seed, dtype: "float64" }).toFloat64(), (v) =>
      Math.round(v * 8),
    ),
    [2, 3],
    dtype,
  );

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error("did not throw");
}

describe("add and mul of mixed dtypes", () => {
  it("a DTypeError naming the cast to torch's promoted dtype", () => {
    for (const [i, x] of DTYPES.entries()) {
      for (const [j, y] of DTYPES.entries()) {
        if (x === y) continue;
        const want = TORCH_PROMOTES[x][j];
        for (const op of [add, mul]) {
          const e = thrown(() => op(ofDtype(x, i), ofDtype(y, j)));
          expect(e, `${x} with ${y}`).toBeInstanceOf(DTypeError);
          expect(e.message, `${x} with ${y}`).toContain(`.to("${want}")`);
        }
      }
    }
  });

  // torch 2.13: (torch.ones(3, dtype=a) + torch.ones((), dtype=b)).dtype, rows a (with
  // dimensions), columns b (0-d); the same with the operands swapped. A 0-d operand only
  // counts where it is a float beside an integer.
  const TORCH_PROMOTES_0D: Record<D, readonly D[]> = {
    int32: ["int32", "bfloat16", "float16", "float32", "float64"],
    bfloat16: ["bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16"],
    float16: ["float16", "float16", "float16", "float16", "float16"],
    float32: ["float32", "float32", "float32", "float32", "float32"],
    float64: ["float64", "float64", "float64", "float64", "float64"],
  };
  const scalarOf = (dtype: D, seed: number): Tensor =>
    fromFloat64(Float64Array.of(Math.round(randn([1], { seed }).toFloat64()[0] * 8)), [], dtype);

  it("beside a 0-d tensor, the cast named gives torch's dtype (float16 [3] + float32 0-d is float16)", () => {
    for (const [i, x] of DTYPES.entries()) {
      for (const [j, y] of DTYPES.entries()) {
        if (x === y) continue;
        const want = TORCH_PROMOTES_0D[x][j];
        const pairs: [Tensor, Tensor][] = [
          [ofDtype(x, i), scalarOf(y, j)],
          [scalarOf(y, j), ofDtype(x, i)],
        ];
        for (const [a, b] of pairs) {
          const e = thrown(() => add(a, b));
          const what = `${a.dtype} [${a.shape}] with ${b.dtype} [${b.shape}]`;
          expect(e, what).toBeInstanceOf(DTypeError);
          expect(e.message, what).toContain(`.to("${want}")`);
          // The operand the message names, cast as it says, gives torch's dtype.
          const which = /cast (a|b|both) with/.exec(e.message)?.[1];
          const ca = which === "b" ? a : a.astype(want);
          const cb = which === "a" ? b : b.astype(want);
          expect(add(ca, cb).dtype, what).toBe(want);
        }
      }
    }
  });

  it("a b of a dtype add never takes is named as such, not as a mismatch", () => {
    const b = fromFloat64(Float64Array.from([1, 0, 1]), [3], "int64");
    const e = thrown(() => add(randn([2, 3]), b));
    expect(e).toBeInstanceOf(DTypeError);
    expect(e.message).toMatch(/b has dtype int64; expected one of/);
  });
});

describe("fft dim", () => {
  it("null is an ArgumentError (torch: dim must be int), n and norm of null the default", () => {
    const c = randn([4, 5, 2], { dtype: "float64" });
    const r = randn([4, 5], { dtype: "float64" });
    const cases = [
      [fft, c],
      [ifft, c],
      [rfft, r],
      [irfft, c],
    ] as const;
    for (const [op, x] of cases) {
      const e = thrown(() => op(x, { dim: null as unknown as number }));
      expect(e, op.name).toBeInstanceOf(ArgumentError);
      expect(e.message, op.name).toMatch(/dim must be an integer, got null/);
      const dflt = op(x).toFloat64();
      const nulls = op(x, {
        n: null as unknown as number,
        norm: null as unknown as "backward",
      }).toFloat64();
      expect(Array.from(nulls), op.name).toEqual(Array.from(dflt));
    }
  });
});
