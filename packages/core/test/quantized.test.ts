/**
 * Quantized tensors: validation (typed errors before any work), accessors, the round trip
 * dequantize(quantize(x)) within scale/2 of the clamped input, the quantized ops' argument
 * checks and engine selection, and what PyTorch's cases leave out (per-channel relu,
 * conv2d against the float convolution of the dequantized inputs). PyTorch's own numbers are the testkit's
 * (runQuantizedConformance), run by packages/testkit/test/quantized.test.ts.
 */
import {
  ArgumentError,
  backends,
  conv2d,
  conv2dPrepack,
  DisposedError,
  DTypeError,
  dequantize,
  explain,
  FlagError,
  linearPrepack,
  makeQuantized,
  memoryStats,
  QTensor,
  quantizedAdd,
  quantizedConv2d,
  quantizedLinear,
  quantizedMatmul,
  quantizedRelu,
  quantizePerChannel,
  quantizePerTensor,
  randn,
  ShapeError,
  Tensor,
  tensor,
} from "@backplane/core";
import { int32SumProblem, ops } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";

const RANGES = { quint8: [0, 255], qint8: [-128, 127], qint32: [-2147483648, 2147483647] } as const;

describe("quantized tensors", () => {
  it("round trip: dequantize(quantize(x)) is within scale/2 of x clamped to the range", () => {
    for (const dtype of ["quint8", "qint8", "qint32"] as const) {
      const [lo, hi] = RANGES[dtype];
      for (const [scale, zp] of [
        [0.05, dtype === "quint8" ? 128 : 0],
        [0.013, dtype === "quint8" ? 3 : -7],
      ] as const) {
        // Random values, beyond the range both ways, and the extremes of float32.
        const x = randn([40, 7], { seed: Math.round(scale * 1000) + zp });
        const xs = x.toFloat64().map((v) => v * 200 * scale);
        const values = [...xs, 3.4e38, -3.4e38, 0.5 * scale, -0.5 * scale];
        const t = tensor(Float32Array.from(values));
        const q = quantizePerTensor(t, scale, zp, dtype);
        const back = dequantize(q).toFloat64();
        const f = Float32Array.from(values);
        for (let i = 0; i < f.length; i++) {
          const clamped = Math.min((hi - zp) * scale, Math.max((lo - zp) * scale, f[i]));
          expect(Math.abs(back[i] - clamped)).toBeLessThanOrEqual(
            scale / 2 + 1e-6 * Math.abs(clamped),
          );
        }
        expect(q.qScale()).toBe(scale);
        expect(q.qZeroPoint()).toBe(zp);
        expect(q.intRepr().dtype).toBe({ quint8: "uint8", qint8: "int8", qint32: "int32" }[dtype]);
        q.dispose();
        t.dispose();
        x.dispose();
      }
    }
  });

  it("empty tensors quantize and dequantize to empty tensors", () => {
    const q = quantizePerTensor(tensor(new Float32Array(0), { shape: [0, 3] }), 0.1, 0, "qint8");
    expect(q.shape).toEqual([0, 3]);
    expect(dequantize(q).shape).toEqual([0, 3]);
    const c = quantizePerChannel(
      tensor(new Float32Array(0), { shape: [2, 0] }),
      [0.1, 0.2],
      [0, 1],
      0,
      "qint8",
    );
    expect(c.qPerChannelScales().toFloat64()).toEqual(Float64Array.from([0.1, 0.2]));
    expect(c.qPerChannelAxis()).toBe(0);
  });

  it("refuses bad parameters with typed errors that say what was wrong", () => {
    const x = randn([2, 3], { seed: 3 });
    expect(() => quantizePerTensor(x, 0, 0, "qint8")).toThrow(ArgumentError);
    expect(() => quantizePerTensor(x, Number.NaN, 0, "qint8")).toThrow(/finite number > 0/);
    expect(() => quantizePerTensor(x, 1e-50, 0, "qint8")).toThrow(/> 0 in float32/);
    expect(() => quantizePerTensor(x, 0.1, 300, "quint8")).toThrow(
      /\[0, 255\] for quint8, got 300/,
    );
    expect(() => quantizePerTensor(x, 0.1, 1.5, "qint8")).toThrow(ArgumentError);
    expect(() => quantizePerTensor(x, 0.1, 0, "int8" as never)).toThrow(DTypeError);
    expect(() => quantizePerTensor(x.astype("int32"), 0.1, 0, "qint8")).toThrow(/float tensor/);
    expect(() => quantizePerChannel(x, [0.1, 0.1], [0, 0], 1, "qint8")).toThrow(ShapeError);
    expect(() => quantizePerChannel(x, [0.1, 0.1], [0, 0], 2, "qint8")).toThrow(
      /axis must be an integer in \[-2, 1\]/,
    );
    expect(() => quantizePerChannel(x, [0.1, -1], [0, 0], 0, "qint8")).toThrow(/scales\[1\]/);
    // Scales and zero points given as tensors must be 1-D (torch: "must have dimension 1").
    expect(() => quantizePerChannel(x, tensor([[0.1, 0.2]]), [0, 0], 0, "qint8")).toThrow(
      /scales must be 1-D, got a tensor of shape \[1,2\]/,
    );
    const gone = tensor([0, 0]);
    gone.dispose();
    expect(() => quantizePerChannel(x, [0.1, 0.2], gone, 0, "qint8")).toThrow(
      /quantizePerChannel: zeroPoints was disposed/,
    );
    const q = quantizePerTensor(x, 0.1, 0, "qint8");
    expect(() => q.qPerChannelScales()).toThrow(/quantized per tensor/);
    expect(() => makeQuantized(tensor([1, 2, 3]), "qint8", { scale: 0.1, zeroPoint: 0 })).toThrow(
      /qint8 is stored as int8; intRepr is float32/,
    );
    expect(() => makeQuantized(null as never, "qint8", { scale: 0.1, zeroPoint: 0 })).toThrow(
      /makeQuantized: intRepr must be a Tensor, got null/,
    );
    expect(() => makeQuantized(tensor([1], { dtype: "uint8" }), "quint8", null as never)).toThrow(
      /params must be \{ scale, zeroPoint \} or \{ scales, zeroPoints, axis \}, got null/,
    );
    q.dispose();
    expect(() => q.intRepr()).toThrow(DisposedError);
    expect(() => linearPrepack(q)).toThrow(/linearPrepack: this quantized tensor was disposed/);
    expect(() => conv2dPrepack(q)).toThrow(/conv2dPrepack: this quantized tensor was disposed/);
    x.dispose();
    expect(() => quantizePerTensor(x, 0.1, 0, "qint8")).toThrow(DisposedError);
  });

  it("a QTensor says what it is", () => {
    const q = quantizePerChannel(
      randn([3, 2], { seed: 4 }),
      [0.1, 0.2, 0.3],
      [1, 2, 3],
      0,
      "quint8",
    );
    expect(q).toBeInstanceOf(QTensor);
    expect(String(q)).toBe(
      "QTensor(shape=[3,2], dtype=quint8, per_channel_affine, axis=0, 3 scales)",
    );
    expect(() => q.qScale()).toThrow(/quantized per channel \(axis 0\)/);
    expect(q.qPerChannelZeroPoints().toFloat64()).toEqual(Float64Array.from([1, 2, 3]));
  });

  it("new QTensor refuses integers it would misread: a strided view, a wrong dtype or params", () => {
    // Random integers in a [4, 6] storage; the transposed view [6, 4] has strides [1, 6].
    const base = quantizePerTensor(randn([4, 6], { seed: 11 }), 0.02, 3, "qint8").intRepr();
    const view = base.transpose(0, 1);
    const params = { scheme: "per_tensor_affine", scale: 0.02, zeroPoint: 3 } as const;
    // Each kernel reads the integers in storage order: a view gave the untransposed values.
    expect(() => new QTensor(view, "qint8", params)).toThrow(ArgumentError);
    expect(() => new QTensor(view, "qint8", params)).toThrow(/must be contiguous.*makeQuantized/);
    // makeQuantized copies the view: its values are the view's (x - 3) * 0.02, in order.
    const copied = dequantize(makeQuantized(view, "qint8", { scale: 0.02, zeroPoint: 3 }));
    const want = Array.from(view.toFloat64(), (v) => Math.fround(v - 3) * Math.fround(0.02));
    expect(Array.from(copied.toFloat64())).toEqual(want.map(Math.fround));
    // A row slice (offset, contiguous) is read right and kept.
    const rows = new Tensor(base.storage, "int8", [2, 6], [6, 1], 6);
    const q = new QTensor(rows, "qint8", params);
    expect(Array.from(q.intRepr().toFloat64())).toEqual(Array.from(rows.toFloat64()));
    expect(() => new QTensor(tensor([1, 2]), "qint8", params)).toThrow(DTypeError);
    expect(() => new QTensor(base, "qint8", { ...params, scale: 0 })).toThrow(/scale/);
    const pc = { scheme: "per_channel_affine", axis: 0 } as const;
    const scales = Float64Array.of(0.1, 0.2);
    const zeroPoints = Int32Array.of(0, 0);
    expect(() => new QTensor(base, "qint8", { ...pc, scales, zeroPoints })).toThrow(ShapeError);
    expect(() => new QTensor(base, "qint8", { ...pc, axis: 2, scales, zeroPoints })).toThrow(
      /axis/,
    );
    expect(() => new QTensor(base, "qint8", null as never)).toThrow(ArgumentError);
  });
});

describe("quantizedLinear", () => {
  const layer = () => {
    const w = quantizePerTensor(randn([4, 6], { seed: 5 }), 0.02, 0, "qint8");
    const packed = linearPrepack(w, tensor(Float32Array.from([0.1, 0.2, 0.3, 0.4])));
    w.dispose(); // the packed layer owns a copy
    return packed;
  };

  it("prepacking copies the bias (a strided view too) and keeps no hold on the caller's", () => {
    const w = quantizePerTensor(randn([4, 6], { seed: 12 }), 0.02, 0, "qint8");
    const cw = quantizePerTensor(randn([4, 6, 1, 1], { seed: 13 }), 0.02, 0, "qint8");
    const x = quantizePerTensor(randn([3, 6], { seed: 14 }), 0.02, 128, "quint8");
    const cx = quantizePerTensor(randn([1, 6, 2, 3], { seed: 15 }), 0.02, 128, "quint8");
    const before = memoryStats("cpu").liveBuffers;
    // Every other value of a random [8]: a 1-D view with stride 2.
    const wide = randn([8], { seed: 16 });
    const strided = new Tensor(wide.storage, "float32", [4], [2], 0);
    const dense = strided.clone();
    const run = (bias: Tensor) => {
      const l = linearPrepack(w, bias);
      const c = conv2dPrepack(cw, bias);
      const out = [quantizedLinear(x, l, 0.05, 100), quantizedConv2d(cx, c, 0.05, 100)];
      const ints = out.map((q) => {
        const r = q.intRepr();
        const v = Array.from(r.toFloat64());
        r.dispose();
        return v;
      });
      for (const t of [l, c, ...out]) t.dispose();
      return ints;
    };
    expect(run(strided)).toEqual(run(dense));
    // The layers are gone: the caller's bias storage is freed with its last tensor.
    wide.dispose();
    strided.dispose();
    dense.dispose();
    expect(memoryStats("cpu").liveBuffers).toBe(before);
    for (const t of [w, cw, x, cx]) t.dispose();
  });

  it("checks its arguments before any kernel runs", () => {
    const packed = layer();
    const x = quantizePerTensor(randn([2, 6], { seed: 6 }), 0.02, 128, "quint8");
    const xs = quantizePerTensor(randn([2, 6], { seed: 6 }), 0.02, 0, "qint8");
    const x5 = quantizePerTensor(randn([2, 5], { seed: 6 }), 0.02, 128, "quint8");
    expect(() => quantizedLinear(xs, packed, 0.1, 128)).toThrow(/x must be quint8, got qint8/);
    expect(() => quantizedLinear(x5, packed, 0.1, 128)).toThrow(
      /has 5 features; the layer takes 6/,
    );
    expect(() => quantizedLinear(x, packed, 0, 128)).toThrow(
      /outScale must be a finite number > 0/,
    );
    expect(() => quantizedLinear(x, packed, 0.1, 256)).toThrow(
      /outZeroPoint must be an integer in \[0, 255\]/,
    );
    expect(() => quantizedLinear(randn([2, 6]) as never, packed, 0.1, 128)).toThrow(
      /x must be a QTensor/,
    );
    const wq = quantizePerChannel(
      randn([4, 6], { seed: 7 }),
      Array(6).fill(0.1),
      Array(6).fill(0),
      1,
      "qint8",
    );
    expect(() => linearPrepack(wq)).toThrow(/along axis 0/);
    expect(() => linearPrepack(x)).toThrow(/weight must be qint8, got quint8/);
    expect(() =>
      linearPrepack(quantizePerTensor(randn([4, 6]), 0.1, 0, "qint8"), tensor([1, 2])),
    ).toThrow(/bias must be \[4\]/);
    const y = quantizedLinear(x, packed, 0.05, 120);
    expect(y.shape).toEqual([2, 4]);
    expect(y.dtype).toBe("quint8");
    expect(y.qScale()).toBe(0.05);
    packed.dispose();
    expect(() => quantizedLinear(x, packed, 0.1, 128)).toThrow(DisposedError);
  });

  it("keeps leading dimensions, and takes empty batches", () => {
    const packed = layer();
    const x = quantizePerTensor(randn([2, 3, 6], { seed: 8 }), 0.02, 128, "quint8");
    expect(quantizedLinear(x, packed, 0.05, 128).shape).toEqual([2, 3, 4]);
    const e = quantizePerTensor(
      tensor(new Float32Array(0), { shape: [0, 6] }),
      0.02,
      128,
      "quint8",
    );
    expect(quantizedLinear(e, packed, 0.05, 128).shape).toEqual([0, 4]);
  });

  it("quantized.engine takes only the engines packages provide, and says which", () => {
    expect(backends.quantized.engine).toBe("none");
    expect(backends.quantized.supportedEngines).toContain("none");
    expect(() => {
      (backends.quantized as { engine: string }).engine = "fbgemm";
    }).toThrow(FlagError);
    const packed = layer();
    const x = quantizePerTensor(randn([2, 6], { seed: 9 }), 0.02, 128, "quint8");
    expect(explain("quantizedLinear", x, packed, 0.05, 128).selected).toBe("reference");
  });
});

describe("quantized relu, add, matmul", () => {
  it("relu clamps at each channel's zero point and keeps the quantization", () => {
    const x = randn([3, 4, 5], { seed: 11 });
    const q = quantizePerChannel(x, [0.01, 0.02, 0.03, 0.04], [120, 128, 7, 250], 1, "quint8");
    const r = quantizedRelu(q);
    expect(r.qscheme).toBe("per_channel_affine");
    const got = dequantize(r).hostData() as Float32Array;
    const want = dequantize(q).hostData() as Float32Array;
    expect(Array.from(got)).toEqual(Array.from(want, (v) => Math.max(v, 0)));
    const t = quantizePerTensor(x, 0.05, -3, "qint8");
    const rt = quantizedRelu(t);
    expect([rt.qScale(), rt.qZeroPoint(), rt.dtype]).toEqual([0.05, -3, "qint8"]);
    expect(() => quantizedRelu(x as never)).toThrow(/x must be a QTensor/);
  });

  it("add and matmul check their arguments before any kernel runs", () => {
    const a = quantizePerTensor(randn([2, 3], { seed: 12 }), 0.02, 128, "quint8");
    const b8 = quantizePerTensor(randn([2, 3], { seed: 13 }), 0.02, 0, "qint8");
    const b4 = quantizePerTensor(randn([2, 4], { seed: 13 }), 0.02, 128, "quint8");
    expect(() => quantizedAdd(a, b8, 0.1, 0)).toThrow(DTypeError);
    expect(() => quantizedAdd(a, b4, 0.1, 0)).toThrow(
      /shapes of a \[2,3\] and b \[2,4\] do not broadcast/,
    );
    expect(() => quantizedAdd(a, a, 0.1, -1)).toThrow(
      /outZeroPoint must be an integer in \[0, 255\]/,
    );
    expect(() => quantizedAdd(b8, b8, 0.1, 128)).toThrow(/in \[-128, 127\] \(qint8\)/);
    expect(() => quantizedMatmul(a, a, 0.1, 0)).toThrow(/has 3 columns, b \[2,3\] has 2 rows/);
    expect(() => quantizedMatmul(a, b8, 0.1, 0)).toThrow(DTypeError);
    const v = quantizePerTensor(randn([3]), 0.02, 128, "quint8");
    expect(() => quantizedMatmul(v, a, 0.1, 0)).toThrow(ShapeError);
    const y = quantizedMatmul(a, quantizePerTensor(randn([3, 5]), 0.02, 120, "quint8"), 0.1, 128);
    expect([y.shape, y.dtype, y.qScale()]).toEqual([[2, 5], "quint8", 0.1]);
    expect(quantizedAdd(b8, b8, 0.1, 3).dtype).toBe("qint8");
  });
});

/** The integers of a quantized tensor, as numbers. */
const ints = (q: QTensor) => Array.from(q.intRepr().toFloat64());
const f32 = (values: number[], shape = [values.length]) =>
  tensor(Float32Array.from(values), { shape });
const STORE = { quint8: "uint8", qint8: "int8", qint32: "int32" } as const;
/** A per-tensor quantized tensor over given integers. */
const qOf = (
  values: number[],
  shape: number[],
  dtype: keyof typeof STORE,
  scale: number,
  zeroPoint: number,
) => makeQuantized(tensor(values, { dtype: STORE[dtype], shape }), dtype, { scale, zeroPoint });

// Expected values: PyTorch 2.13.0+cpu on x86 (AVX512), torch.quantize_per_tensor /
// quantize_per_channel / dequantize / torch.ops.quantized.add / matmul on these inputs.
describe("rounding as PyTorch 2.13 on x86", () => {
  it("quint8 and qint8 per tensor add the zero point before rounding, in one FMA", () => {
    // rint(fma(x, fl(1 / fl(scale)), zp)): 0.5 + 1 rounds to 2, 2.5 + 1 to 4.
    expect(ints(quantizePerTensor(f32([0.5, 1.5, 2.5, -0.5]), 1, 1, "quint8"))).toEqual([
      2, 2, 4, 0,
    ]);
    expect(ints(quantizePerTensor(f32([0.5, 1.5, 2.5, -0.5, -1.5]), 1, -1, "qint8"))).toEqual([
      0, 0, 2, -2, -2,
    ]);
    // fl(-12.15) · 10 = -121.4999962: fused with + 128 it is 6.5000038, which rounds up
    // (rounded first, -121.5 + 128 = 6.5 would round to 6).
    expect(ints(quantizePerTensor(f32([-12.15]), 0.1, 128, "quint8"))).toEqual([7]);
  });

  it("qint32 per tensor adds the zero point in float32 before rounding", () => {
    const lo = -2147483648;
    const hi = 2147483647;
    expect(ints(quantizePerTensor(f32([1, 100, -1, 3e9]), 1, lo, "qint32"))).toEqual([
      -2147483648, -2147483520, -2147483648, 852516352,
    ]);
    // fl(2^31 - 1) = 2^31: clamped to 2^31 - 1; NaN is the bottom of the range.
    expect(
      ints(quantizePerTensor(f32([-1, 1, -100, -200, Number.NaN, -3e9]), 1, hi, "qint32")),
    ).toEqual([2147483647, 2147483647, 2147483520, 2147483392, -2147483648, -852516352]);
    expect(ints(quantizePerTensor(f32([0.5, 1.5, 2.5, -0.5]), 1, 7, "qint32"))).toEqual([
      8, 8, 10, 6,
    ]);
    expect(ints(quantizePerTensor(f32([16777216, 3]), 1, 5, "qint32"))).toEqual([16777220, 8]);
  });

  it("per channel adds the zero point in float32 before rounding; NaN is 0 for 8 bits", () => {
    const pc = (x: number[], shape: number[], s: number[], z: number[], d: "quint8" | "qint8") =>
      ints(quantizePerChannel(f32(x, shape), s, z, 0, d));
    expect(pc([0.5, 1.5, 2.5, Number.NaN], [1, 4], [1], [1], "quint8")).toEqual([2, 2, 4, 0]);
    expect(
      pc(
        [0.5, 1.5, 2.5, Number.NaN, 0.25, 0.75, 3.4e38, -3.4e38],
        [2, 4],
        [1, 0.5],
        [-1, 3],
        "qint8",
      ),
    ).toEqual([0, 0, 2, 0, 4, 4, 127, -128]);
    // Not fused per channel: -121.5 + 128 = 6.5 rounds to 6 (per tensor: 7).
    expect(pc([-12.15], [1, 1], [0.1], [128], "quint8")).toEqual([6]);
    const q32 = quantizePerChannel(
      f32([0.5, 1.5, 2.5, Number.NaN, 16777216], [1, 5]),
      [1],
      [5],
      0,
      "qint32",
    );
    expect(ints(q32)).toEqual([6, 6, 8, -2147483648, 16777220]);
  });

  it("per-channel qint32 dequantizes fl(fl(q) - fl(zp)) times the float64 scale", () => {
    const deq = (values: number[], scale: number, zp: number) =>
      Array.from(
        dequantize(
          makeQuantized(tensor(Int32Array.from(values), { shape: [1, values.length] }), "qint32", {
            scales: [scale],
            zeroPoints: [zp],
            axis: 0,
          }),
        ).toFloat64(),
      );
    // fl(16777217) = 16777216: 1677721.6 rounds to 1677721.625 (exactly: 1677721.75).
    expect(deq([16777217, 16777217, -16777219], 0.1, 0)).toEqual([
      1677721.625, 1677721.625, -1677722,
    ]);
    // fl(16777217) - 1 = 16777215 in float32 (q - zp exactly: 16777216).
    expect(deq([16777217, 33554435], 1, 1)).toEqual([16777215, 33554436]);
  });

  it("quantizedAdd broadcasts as torch.ops.quantized.add", () => {
    const y = quantizedAdd(
      qOf([1, 2, 3, 4, 5, 6], [2, 3], "quint8", 0.1, 0),
      qOf([1, 2, 3], [3], "quint8", 0.1, 0),
      0.1,
      0,
    );
    expect([y.shape, ints(y)]).toEqual([
      [2, 3],
      [2, 4, 6, 5, 7, 9],
    ]);
    const outer = quantizedAdd(
      qOf([10, 20], [2, 1], "qint8", 0.1, 0),
      qOf([1, 2, 3], [1, 3], "qint8", 0.1, 0),
      0.1,
      0,
    );
    expect([outer.shape, ints(outer)]).toEqual([
      [2, 3],
      [11, 12, 13, 21, 22, 23],
    ]);
    const scalar = qOf([7], [], "quint8", 0.1, 2);
    const rows = qOf([1, 2, 3, 4, 5, 6], [2, 3], "quint8", 0.1, 0);
    expect(ints(quantizedAdd(scalar, rows, 0.1, 1))).toEqual([7, 8, 9, 10, 11, 12]);
    const big = quantizedAdd(
      qOf(Array(120).fill(1), [4, 5, 6], "quint8", 0.1, 0),
      qOf(Array(30).fill(2), [5, 6], "quint8", 0.1, 0),
      0.1,
      0,
    );
    expect([big.shape, new Set(ints(big))]).toEqual([[4, 5, 6], new Set([3])]);
    expect(() =>
      quantizedAdd(rows, qOf([1, 2, 3, 4, 5, 6], [3, 2], "quint8", 0.1, 0), 0.1, 0),
    ).toThrow(ShapeError);
  });

  it("quantizedAdd takes qint32: fma dequantize, zero point added in float32", () => {
    const a = qOf([1000, -2000, 5, 1, 2, 3], [2, 3], "qint32", 0.5, 3);
    const b = qOf([7, 8, 9], [3], "qint32", 0.25, -4);
    const y = quantizedAdd(a, b, 0.3, 100);
    expect([y.dtype, y.shape, ints(y)]).toEqual([
      "qint32",
      [2, 3],
      [1771, -3228, 114, 106, 108, 111],
    ]);
    // 32 values in PyTorch's vector loop (its last 8 take its scalar loop).
    const x = Array.from({ length: 32 }, (_, i) => i * 1000003 - 20000000);
    const z = quantizedAdd(
      qOf(x, [32], "qint32", 0.7, 11),
      qOf(
        x.map((v) => Math.floor(v / 3)),
        [32],
        "qint32",
        0.3,
        -5,
      ),
      0.9,
      17,
    );
    expect(ints(z).slice(0, 4)).toEqual([-17777768, -16888876, -15999985, -15111095]);
    expect(ints(z).slice(20, 24)).toEqual([63, 888955, 1777846, 2666738]);
  });

  it("quantizedMatmul broadcasts leading dimensions and takes 1-D operands as torch.matmul", () => {
    const mm = (a: QTensor, b: QTensor, s: number, z: number) => {
      const y = quantizedMatmul(a, b, s, z);
      return [y.shape, ints(y)];
    };
    expect(
      mm(
        qOf([1, 2], [1, 1, 2], "quint8", 0.1, 0),
        qOf([1, 2, 3, 4], [2, 2, 1], "quint8", 0.1, 0),
        0.01,
        0,
      ),
    ).toEqual([
      [2, 1, 1],
      [5, 11],
    ]);
    expect(
      mm(
        qOf([10, 20, 30, 40], [4], "quint8", 0.1, 0),
        qOf([1, 2, 3, 4], [4], "quint8", 0.1, 0),
        0.1,
        5,
      ),
    ).toEqual([[], [35]]);
    expect(
      mm(
        qOf([10, 20], [2], "qint8", 0.1, 0),
        qOf([1, 2, 3, 4, 5, 6], [2, 3], "qint8", 0.1, 0),
        0.1,
        5,
      ),
    ).toEqual([[3], [14, 17, 20]]);
    expect(
      mm(
        qOf([1, 2, 3, 4, 5, 6], [3, 2], "qint8", 0.1, 0),
        qOf([10, 20], [2], "qint8", 0.1, 0),
        0.1,
        5,
      ),
    ).toEqual([[3], [10, 16, 22]]);
    expect(
      mm(
        qOf([1, 2, 3, 4, 5, 6], [3, 2], "quint8", 0.1, 0),
        qOf([1, 0, 0, 1, 2, 0, 0, 2], [2, 2, 2], "quint8", 0.1, 0),
        0.01,
        0,
      ),
    ).toEqual([
      [2, 3, 2],
      [1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12],
    ]);
    // An empty inner dimension sums to 0: the zero point.
    expect(mm(qOf([], [0], "quint8", 0.1, 0), qOf([], [0], "quint8", 0.1, 0), 0.5, 4)).toEqual([
      [],
      [4],
    ]);
    // What torch refuses.
    const q = (shape: number[]) =>
      qOf(Array(shape.reduce((x, y) => x * y, 1)).fill(1), shape, "quint8", 0.1, 0);
    expect(() => quantizedMatmul(q([]), q([3]), 0.1, 0)).toThrow(/at least 1 dimension/);
    expect(() => quantizedMatmul(q([2, 3, 4]), q([3, 4, 5]), 0.1, 0)).toThrow(/do not broadcast/);
    expect(() => quantizedMatmul(q([4]), q([5]), 0.1, 0)).toThrow(ShapeError);
    expect(() => quantizedMatmul(q([3, 4]), q([3, 4]), 0.1, 0)).toThrow(/has 4 columns/);
  });
});

describe("quantizedConv2d", () => {
  /** The float convolution of the dequantized inputs, quantized: within 1 LSB of the op. */
  const check = (shape: number[], wShape: number[], opts: Parameters<typeof conv2dPrepack>[2]) => {
    const x = quantizePerTensor(randn(shape, { seed: 14 }), 0.03, 128, "quint8");
    const w = quantizePerChannel(
      randn(wShape, { seed: 15 }),
      Array.from({ length: wShape[0] }, (_, i) => 0.01 + i * 0.001),
      Array(wShape[0]).fill(0),
      0,
      "qint8",
    );
    const bias = randn([wShape[0]], { seed: 16 });
    const packed = conv2dPrepack(w, bias, opts);
    const y = quantizedConv2d(x, packed, 0.05, 100);
    const f = conv2d(dequantize(x), dequantize(w), { ...opts, bias });
    const want = quantizePerTensor(f, 0.05, 100, "quint8").intRepr().toFloat64();
    const got = y.intRepr().toFloat64();
    expect(y.shape).toEqual(f.shape);
    expect(Math.max(0, ...Array.from(got, (g, i) => Math.abs(g - want[i])))).toBeLessThanOrEqual(1);
    return y;
  };

  it("matches the float convolution of its dequantized inputs within 1 LSB", () => {
    check([2, 3, 9, 8], [5, 3, 3, 3], { padding: 1 });
    check([1, 6, 11, 7], [6, 1, 3, 3], { stride: 2, padding: 1, groups: 6 });
    check([1, 4, 10, 10], [4, 2, 3, 3], { dilation: 2, padding: [3, 2], groups: 2 });
    check([1, 2, 7, 5], [3, 2, 5, 1], { stride: [2, 1] });
    expect(check([0, 3, 5, 5], [2, 3, 3, 3], {}).shape).toEqual([0, 2, 3, 3]);
  });

  it("checks its arguments before any kernel runs", () => {
    const w = quantizePerTensor(randn([4, 2, 3, 3], { seed: 17 }), 0.02, 0, "qint8");
    expect(() => conv2dPrepack(w, undefined, { groups: 3 })).toThrow(/dividing the 4 output/);
    expect(() => conv2dPrepack(w, undefined, { stride: 0 })).toThrow(
      /^conv2dPrepack: stride must be an integer in \[1, 2\^31 - 1\] or a pair of them/,
    );
    expect(() => conv2dPrepack(w, undefined, { padding: -1 })).toThrow(ArgumentError);
    expect(() => conv2dPrepack(w, tensor([1, 2]))).toThrow(/bias must be \[4\]/);
    // Extents past a 32-bit kernel's indexing are refused before any kernel, as in conv2d.
    const big = conv2dPrepack(w, undefined, { padding: 2 ** 30 });
    const x4 = quantizePerTensor(randn([1, 2, 5, 5]), 0.02, 128, "quint8");
    expect(() => quantizedConv2d(x4, big, 0.1, 0)).toThrow(/padded input extent would be/);
    const x = quantizePerTensor(randn([1, 2, 2, 2]), 0.02, 128, "quint8");
    expect(() => conv2dPrepack(x)).toThrow(/weight must be qint8/);
    const packed = conv2dPrepack(w);
    // Options and bias of the wrong type are ArgumentErrors, an unknown option too (as conv2d).
    expect(() => conv2dPrepack(w, undefined, null as never)).toThrow(ArgumentError);
    expect(() => conv2dPrepack(w, undefined, { strid: 1 } as never)).toThrow(
      /unknown option "strid"; known: stride, padding, dilation, groups/,
    );
    expect(() => conv2dPrepack(w, 5 as never)).toThrow(/bias must be a Tensor/);
    expect(() =>
      linearPrepack(quantizePerTensor(randn([2, 2]), 0.1, 0, "qint8"), 5 as never),
    ).toThrow(ArgumentError);
    expect(() => quantizedConv2d(x, packed, 0.1, 0)).toThrow(/smaller than the dilated kernel/);
    const x3 = quantizePerTensor(randn([1, 3, 5, 5]), 0.02, 128, "quint8");
    expect(() => quantizedConv2d(x3, packed, 0.1, 0)).toThrow(/has 3 channels; the layer takes 2/);
    const x5 = quantizePerTensor(randn([2, 5, 5]), 0.02, 128, "quint8");
    expect(() => quantizedConv2d(x5, packed, 0.1, 0)).toThrow(ShapeError);
    expect(
      explain(
        "quantizedConv2d",
        quantizePerTensor(randn([1, 2, 5, 5]), 0.02, 128, "quint8"),
        packed,
        0.1,
        0,
      ).selected,
    ).toBe("reference");
  });
});

describe("exact sums: the bound on |acc| that int32 kernels check", () => {
  const ints = (values: number[], shape: number[], dtype: "uint8" | "int8") =>
    tensor(dtype === "uint8" ? Uint8Array.from(values) : Int8Array.from(values), { shape, dtype });

  it("is terms x max |x - x_zp| x the largest |w - w_zp| of the layer's actual weights", () => {
    // Per channel: |w - 0| <= 128 on channel 0, |w + 50| <= 150 on channel 1 (w = 100).
    const w = makeQuantized(ints([-128, 0, 5, 1, 2, 100, -3, 0, 0, 0], [2, 5], "int8"), "qint8", {
      scales: [0.1, 0.2],
      zeroPoints: [0, -50],
      axis: 0,
    });
    const packed = linearPrepack(w);
    const x = makeQuantized(ints([1, 2, 3, 4, 5], [1, 5], "uint8"), "quint8", {
      scale: 0.1,
      zeroPoint: 100,
    });
    // The activations' bound depends on their zero point only: max(100, 255 - 100) = 155.
    const p = ops.quantizedLinear.prepare(x, packed, 0.1, 0);
    expect(p.largestSum).toBe(5 * 155 * 150);
    expect(ops.quantizedLinear.prepare(x, packed, 0.1, 0).largestSum).toBe(p.largestSum);
    // conv: (c / groups) * kh * kw terms; weights 7 with zero point -3: 10.
    const cw = makeQuantized(ints(Array(4 * 3 * 2 * 3).fill(7), [4, 3, 2, 3], "int8"), "qint8", {
      scale: 0.1,
      zeroPoint: -3,
    });
    const conv = conv2dPrepack(cw, undefined, { groups: 2 });
    const cx = quantizePerTensor(randn([1, 6, 4, 4], { seed: 1 }), 0.1, 0, "quint8");
    expect(ops.quantizedConv2d.prepare(cx, conv, 0.1, 0).largestSum).toBe(3 * 2 * 3 * 255 * 10);
  });

  it("int32SumProblem refuses just past int32, with the worst case, and the reference stays exact", () => {
    expect(int32SumProblem({ largestSum: 2 ** 31 - 1 })).toBeUndefined();
    const why = int32SumProblem({ largestSum: 2 ** 31 });
    expect(why).toMatch(/2147483648/);
    expect(why).toMatch(/past int32's 2147483647/);
    expect(why).toMatch(/exact reference serves/);
    // 70000 terms of 255 x -128: -2.28e9, which int32 wraps to a positive sum. The reference
    // sums exactly: the output clamps to 0.
    const k = 70000;
    const x = makeQuantized(ints(Array(k).fill(255), [1, k], "uint8"), "quint8", {
      scale: 0.001,
      zeroPoint: 0,
    });
    const w = makeQuantized(ints(Array(2 * k).fill(-128), [2, k], "int8"), "qint8", {
      scale: 1e-4,
      zeroPoint: 0,
    });
    const packed = linearPrepack(w);
    expect(int32SumProblem(ops.quantizedLinear.prepare(x, packed, 1, 128))).toMatch(/2284800000/);
    expect(Array.from(quantizedLinear(x, packed, 1, 128).intRepr().toFloat64())).toEqual([0, 0]);
  });
});
