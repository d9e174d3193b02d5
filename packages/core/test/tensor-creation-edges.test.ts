/**
 * Creation and printing edges found by differential testing against torch 2.13 (CPU); the
 * expected values and refusals are torch's, measured with the oracle and written here.
 */
import {
  ArgumentError,
  add,
  DTypeError,
  empty,
  full,
  memoryStats,
  randn,
  ShapeError,
  seededRandom,
  Tensor,
  tensor,
  zeros,
} from "@backplane/core";
import { describe, expect, it } from "vitest";

/** Live CPU buffers after `f` throws: a refused creation must hold no memory. */
function liveAfterThrow(f: () => unknown, kind: new (...a: never[]) => Error): number {
  const before = memoryStats("cpu").liveBuffers;
  expect(f).toThrow(kind);
  return memoryStats("cpu").liveBuffers - before;
}

describe("full() refuses a value its float dtype cannot hold, as torch.full", () => {
  // torch.full((2,), v, dtype=...) raises "value cannot be converted to type ... without
  // overflow" for each of these (for any size but 1: see below); this filled with infinity.
  const overflowing: [string, number][] = [
    ["float16", 65504.5],
    ["float16", -65505],
    ["float16", 1e5],
    ["float32", 1e40],
    ["float32", 3.4028234663852886e38 * (1 + 2 ** -30)],
    ["bfloat16", 3.3895313892546182e38],
    ["bfloat16", -1e39],
  ];
  // Loops of it(), not it.each: Deno's vitest shim has no .each.
  for (const [dtype, v] of overflowing)
    it(`${dtype} ${v} is a DTypeError, nothing allocated`, () => {
      expect(liveAfterThrow(() => full([2], v, { dtype: dtype as "float16" }), DTypeError)).toBe(0);
      expect(() => full([0], v, { dtype: dtype as "float16" })).toThrow(/overflow/);
    });

  it("one element of float16 or bfloat16 overflows to inf, as torch 2.13", () => {
    // torch.full([1], 70000., dtype=torch.float16) and full([1], 1e39, dtype=torch.bfloat16)
    // are inf (a one-element fill skips the range check); float32's full([1], 1e40) raises.
    expect(full([1], 70000, { dtype: "float16" }).toArray()).toEqual([Number.POSITIVE_INFINITY]);
    expect(full([1, 1], -65520, { dtype: "float16" }).toArray()).toEqual([
      [Number.NEGATIVE_INFINITY],
    ]);
    expect(full([], 1e38 * 3.4, { dtype: "bfloat16" }).toArray()).toEqual(Number.POSITIVE_INFINITY);
    expect(full([1], 1e39, { dtype: "bfloat16" }).toArray()).toEqual([Number.POSITIVE_INFINITY]);
    expect(() => full([1], 1e40)).toThrow(DTypeError);
    expect(() => full([2], 70000, { dtype: "float16" })).toThrow(DTypeError);
  });

  it("the largest finite values and infinities still fill (torch's values)", () => {
    expect(full([2], 65504, { dtype: "float16" }).toArray()).toEqual([65504, 65504]);
    expect(full([1], -Infinity, { dtype: "float16" }).toArray()).toEqual([-Infinity]);
    expect(full([1], 3.3895313892515355e38, { dtype: "bfloat16" }).toArray()).toEqual([
      3.3895313892515355e38,
    ]);
    expect(full([1], 3.4028234663852886e38).toArray()).toEqual([3.4028234663852886e38]);
    // Rounding, not overflow: torch.full((1,), 65503.9, dtype=torch.float16) is 65504.
    expect(full([1], 65503.9, { dtype: "float16" }).toArray()).toEqual([65504]);
  });
});

describe("uint8 creation: only whole negatives wrap, as torch.tensor and torch.full", () => {
  it("a negative fraction is refused (torch: 'cannot be converted to type uint8')", () => {
    const r = seededRandom(11);
    for (let k = 0; k < 20; k++) {
      const v = -(Math.floor(r() * 255) + 0.05 + r() * 0.9); // -0.05 ... -255.95, never whole
      expect(() => tensor([v], { dtype: "uint8" })).toThrow(DTypeError);
      expect(liveAfterThrow(() => full([3], v, { dtype: "uint8" }), DTypeError)).toBe(0);
    }
    expect(() => tensor([-0.5], { dtype: "uint8" })).toThrow(/-0.5 is out of range/);
  });

  it("whole negatives to -255 wrap (torch.tensor([-255, -1, -7], dtype=torch.uint8))", () => {
    expect(tensor([-255, -1, -7], { dtype: "uint8" }).toArray()).toEqual([1, 255, 249]);
    expect(full([1], -200, { dtype: "uint8" }).toArray()).toEqual([56]);
    // Positive fractions truncate: torch.tensor([254.9], dtype=torch.uint8) is 254.
    expect(tensor([254.9, 0.5], { dtype: "uint8" }).toArray()).toEqual([254, 0]);
  });
});

describe("bigints past float64's range into a float dtype", () => {
  // torch.tensor([2**1024], dtype=...) raises OverflowError "int too large to convert to
  // float" for every float dtype; float32/16/bf16 gave a RangeError, float64 Infinity.
  for (const dtype of ["float64", "float32", "float16", "bfloat16"] as const)
    it(`${dtype}: a DTypeError`, () => {
      for (const x of [2n ** 1024n, -(2n ** 1024n) + 2n ** 970n, 2n ** 2000n + 12345n]) {
        expect(liveAfterThrow(() => tensor([1n, x], { dtype }), DTypeError)).toBe(0);
      }
    });

  it("the largest that fits converts as torch's (2**1024 - 2**971)", () => {
    const x = 2n ** 1024n - 2n ** 971n;
    expect(tensor([x, -x], { dtype: "float64" }).toArray()).toEqual([
      1.7976931348623157e308, -1.7976931348623157e308,
    ]);
    expect(tensor([x], { dtype: "float32" }).toArray()).toEqual([Infinity]);
    expect(tensor([-x], { dtype: "bfloat16" }).toArray()).toEqual([-Infinity]);
    expect(tensor([2n ** 2000n], { dtype: "bool" }).toArray()).toEqual([true]);
  });
});

describe("toString", () => {
  it("prints NaN, infinities and -0 as torch's repr (not null and 0)", () => {
    // torch: tensor([nan, inf, -inf, -0.]) in every float dtype.
    for (const dtype of ["float32", "float64", "float16", "bfloat16"] as const) {
      const t = tensor([Number.NaN, Infinity, -Infinity, -0], { dtype });
      expect(t.toString()).toBe(`Tensor(${dtype}, [4], cpu, [NaN,Infinity,-Infinity,-0])`);
    }
  });

  it("prints int64 past 2^53 exactly, as torch (it rounded through a number)", () => {
    const r = seededRandom(5);
    const values = Array.from(
      { length: 6 },
      (_, i) => (BigInt(Math.floor(r() * 2 ** 30)) << 32n) + BigInt(2 * i + 1),
    );
    const t = tensor(values);
    expect(t.toString()).toBe(`Tensor(int64, [6], cpu, [${values.join(",")}])`);
    expect(t.reshape([2, 3]).transpose().toString()).toBe(
      `Tensor(int64, [3,2], cpu, [[${values[0]},${values[3]}],[${values[1]},${values[4]}],[${values[2]},${values[5]}]])`,
    );
  });

  it("a size-0 tensor with large leading dims prints without building its arrays", () => {
    // torch: tensor([], size=(1048576, 1048576, 0)); this built 2^40 arrays until the heap ran out.
    const t = zeros([2 ** 20, 2 ** 20, 0]);
    expect(t.toString()).toBe("Tensor(float32, [1048576,1048576,0], cpu)");
    expect(zeros([65, 0]).toString()).toBe("Tensor(float32, [65,0], cpu)");
    expect(zeros([2, 0]).toString()).toBe("Tensor(float32, [2,0], cpu, [[],[]])");
  });

  it("bool and int8 values", () => {
    expect(tensor([true, false]).toString()).toBe("Tensor(bool, [2], cpu, [true,false])");
    expect(tensor([-128, 127], { dtype: "int8" }).transpose(0, 0).toString()).toBe(
      "Tensor(int8, [2], cpu, [-128,127])",
    );
  });
});

describe("bad inputs are typed errors", () => {
  it("a DataView is refused with what to pass instead", () => {
    const dv = new DataView(new ArrayBuffer(8));
    expect(() => tensor(dv as never, { dtype: "float32" })).toThrow(ArgumentError);
    expect(() => tensor(dv as never)).toThrow(/typed array/);
  });

  it("nested arrays deeper than 128 levels: a ShapeError (torch: 'too many dimensions')", () => {
    const nested = (depth: number): unknown => {
      let x: unknown = 2.5;
      for (let i = 0; i < depth; i++) x = [x];
      return x;
    };
    expect(tensor(nested(128) as never).rank).toBe(128);
    expect(() => tensor(nested(129) as never)).toThrow(ShapeError);
    // Deep enough that the recursive walk overflowed the stack: a RangeError before.
    expect(() => tensor(nested(20000) as never)).toThrow(/128 levels/);
  });

  it("a NaN or infinite size is named as such in the message (JSON wrote null)", () => {
    expect(() => empty([2, Number.NaN])).toThrow(/got \[2,NaN\]/);
    expect(() => zeros([Infinity])).toThrow(/got \[Infinity\]/);
  });

  it("a size past 2^53 - 1 says so (torch takes [0, 2**53]; a JS number cannot count it)", () => {
    expect(() => zeros([0, 2 ** 53])).toThrow(ShapeError);
    expect(() => zeros([0, 2 ** 53])).toThrow(/up to 2\^53 - 1/);
    expect(zeros([0, 2 ** 53 - 1]).shape).toEqual([0, 2 ** 53 - 1]);
  });
});

describe("cpu:N is the CPU, as torch.device('cpu:0')", () => {
  it("tensors made on cpu:0 and cpu add, and report device cpu", () => {
    const r = seededRandom(3);
    const xs = Array.from({ length: 5 }, () => r() - 0.5);
    const ys = Array.from({ length: 5 }, () => r() - 0.5);
    const a = tensor(xs, { device: "cpu:0", dtype: "float64" });
    const b = tensor(ys, { dtype: "float64" }).to("cpu:1");
    expect(a.device).toBe("cpu");
    expect(b.device).toBe("cpu");
    expect(add(a, b).toArray()).toEqual(xs.map((x, i) => x + ys[i]!));
    expect(Object.keys(memoryStats()).filter((d) => d.startsWith("cpu:"))).toEqual([]);
  });
});

describe("new Tensor(storage, ...) keeps its own shape and strides", () => {
  it("changing the arrays passed in afterwards changes nothing (it made the view reach past its storage)", () => {
    const r = seededRandom(8);
    const xs = Array.from({ length: 12 }, () => r() - 0.5);
    const base = tensor(xs, { dtype: "float64" });
    const shape = [3, 2];
    const strides = [4, 1];
    base.storage.retain();
    const v = new Tensor(base.storage, "float64", shape, strides, 1);
    shape[0] = 1000;
    strides[0] = 400;
    // torch.as_strided(x, (3, 2), (4, 1), 1)
    expect(v.shape).toEqual([3, 2]);
    expect(v.strides).toEqual([4, 1]);
    expect(v.toArray()).toEqual([0, 1, 2].map((i) => [xs[4 * i + 1], xs[4 * i + 2]]));
  });
});

describe("random seeds", () => {
  it("seeds 2^32 apart draw different numbers; seeds below 2^32 draw what they did", () => {
    const first = (seed: number) => Array.from(randn([4], { seed, dtype: "float64" }).toFloat64());
    expect(first(2 ** 32)).not.toEqual(first(0));
    expect(first(2 ** 40 + 5)).not.toEqual(first(5));
    // mulberry32 from state 7, as seededRandom drew it before the fold.
    const r = seededRandom(7);
    let a = 7;
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    expect(r()).toBe(((t ^ (t >>> 14)) >>> 0) / 4294967296);
  });
});

describe("dtype null", () => {
  it("is torch's dtype=None for tensor() as for empty(): the dtype is inferred", () => {
    expect(tensor([1, 2], { dtype: null as never }).dtype).toBe("float32");
    expect(tensor(new Float64Array([1]), { dtype: null as never }).dtype).toBe("float64");
    expect(tensor([true], { dtype: null as never }).dtype).toBe("bool");
    expect(empty([2], { dtype: null as never }).dtype).toBe("float32");
  });
});
