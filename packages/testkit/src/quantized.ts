/**
 * Quantized conformance against PyTorch: cases computed by PyTorch 2.13
 * (scripts/quantized-cases.py wrote data/quantized-torch.json) for quantize, dequantize,
 * and the quantized ops linear, conv2d, relu, add and matmul. Quantizing and dequantizing
 * must give PyTorch's bits; an op must give PyTorch's integers exactly where PyTorch's own
 * engines agree with each other, and within 1 LSB where they do not (qnnpack rounds one
 * add and one depthwise conv2d output differently). matmul is held to 1 LSB everywhere:
 * PyTorch computes it in float32 (dequantize, matmul, quantize), so its last bit depends
 * on a float sum's order; backplane's sums are exact.
 */
import {
  backends,
  conv2dPrepack,
  dequantize,
  explain,
  kernelPriority,
  linearPrepack,
  makeQuantized,
  type PackedConv2d,
  type PackedLinear,
  type QDType,
  type QTensor,
  quantizedAdd,
  quantizedConv2d,
  quantizedLinear,
  quantizedMatmul,
  quantizedRelu,
  quantizePerChannel,
  quantizePerTensor,
  type Tensor,
  tensor,
} from "@backplane/core";
import DATA from "../data/quantized-torch.json" with { type: "json" };

interface QuantizeCase {
  name: string;
  kind: "per_tensor" | "per_channel";
  shape: number[];
  /** float32 values; NaN (which JSON lacks) as "NaN". */
  x: (number | string)[];
  dtype: QDType;
  scale?: number;
  zeroPoint?: number;
  scales?: number[];
  zeroPoints?: number[];
  axis?: number;
  intRepr: number[];
  /** null where PyTorch's dequantize overflows (qint32 q - zero_point past int32). */
  dequantized: (number | string)[] | null;
}

interface LinearCase {
  name: string;
  m: number;
  k: number;
  n: number;
  x: { intRepr: number[]; scale: number; zeroPoint: number };
  w: {
    intRepr: number[];
    scale?: number;
    zeroPoint?: number;
    scales?: number[];
    zeroPoints?: number[];
    axis?: number;
  };
  bias: number[] | null;
  outScale: number;
  outZeroPoint: number;
  torch: Record<string, number[] | string>;
  enginesAgree: boolean;
}

/** A quantized tensor as the data stores it: integers and parameters. */
interface QJson {
  shape: number[];
  dtype: QDType;
  intRepr: number[];
  scale?: number;
  zeroPoint?: number;
  scales?: number[];
  zeroPoints?: number[];
  axis?: number;
}

interface OpCaseData {
  name: string;
  op: "relu" | "add" | "matmul";
  a: QJson;
  b?: QJson;
  outScale?: number;
  outZeroPoint?: number;
  /** The output's shape (the cases with broadcasting give it). */
  outShape?: number[];
  torch: Record<string, number[] | string>;
  enginesAgree: boolean;
}

interface ConvCase {
  name: string;
  x: QJson;
  w: QJson;
  bias: number[] | null;
  stride: [number, number];
  padding: [number, number];
  dilation: [number, number];
  groups: number;
  outScale: number;
  outZeroPoint: number;
  torch: Record<string, number[] | string>;
  enginesAgree: boolean;
}

/**
 * A quantized tensor of `shape` whose every integer is `q` (the worst case of a sum's
 * range: every term at its largest, for int32 accumulator tests).
 */
export function uniformQuantized(
  q: number,
  shape: number[],
  dtype: "quint8" | "qint8",
  scale: number,
  zeroPoint: number,
): QTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const ints = dtype === "quint8" ? new Uint8Array(n).fill(q) : new Int8Array(n).fill(q);
  const repr = tensor(ints, { shape, dtype: dtype === "quint8" ? "uint8" : "int8" });
  return makeQuantized(repr, dtype, { scale, zeroPoint });
}

/** What againstReference saw: the kernels picked and run, the refusal, both outputs. */
export interface AgainstReference {
  /** explain()'s pick, and the kernel that ran the op. */
  selected: string | undefined;
  ran: string | undefined;
  /** explain()'s reason for `kernel` (its refusal, or why another came first). */
  reason: string | undefined;
  /** The output's integers from the dispatcher's pick, and from the reference. */
  got: number[];
  want: number[];
}

/**
 * A quantized linear or conv2d layer run as the dispatcher picks and again on the core's
 * reference: what ran, explain()'s reason for `kernel`, and both outputs' integers.
 */
export function againstReference(
  kernel: string,
  x: QTensor,
  layer: PackedLinear | PackedConv2d,
  outScale: number,
  outZeroPoint: number,
): AgainstReference {
  const linear = "inFeatures" in layer;
  const op = linear ? "quantizedLinear" : "quantizedConv2d";
  const run = () => {
    const y = linear
      ? quantizedLinear(x, layer as PackedLinear, outScale, outZeroPoint)
      : quantizedConv2d(x, layer as PackedConv2d, outScale, outZeroPoint);
    const ints = y.intRepr();
    const out = Array.from(ints.toFloat64());
    ints.dispose();
    y.dispose();
    return out;
  };
  const report = explain(op, x, layer, outScale, outZeroPoint);
  const recorded = backends.record(run);
  const want = (() => {
    using _ = kernelPriority(op, ["reference"]);
    return run();
  })();
  return {
    selected: report.selected,
    ran: recorded.calls.find((c) => c.op === op)?.kernel,
    reason: report.candidates.find((c) => c.kernel === kernel)?.reason,
    got: recorded.result,
    want,
  };
}

/** The quantized ops the cases cover (dispatcher op names). */
export type QuantizedOpName =
  | "quantizedLinear"
  | "quantizedConv2d"
  | "quantizedRelu"
  | "quantizedAdd"
  | "quantizedMatmul";

/** The PyTorch version and engines the data came from. */
export const QUANTIZED_DATA: { torch: string; engines: string[] } = {
  torch: DATA.torch,
  engines: DATA.engines,
};

export interface QuantizedResult {
  case: string;
  what: "quantize" | "linear" | "conv2d" | "relu" | "add" | "matmul";
  status: "pass" | "fail";
  /** The kernel that ran (the ops). */
  kernel?: string;
  /** Elements that differ from PyTorch, and by how much at most (in LSB or float32 ulps). */
  mismatches: number;
  worst: number;
  message?: string;
}

export interface QuantizedReport {
  torch: string;
  results: QuantizedResult[];
  failed: QuantizedResult[];
  toString(): string;
  assertPassed(): void;
}

function f32(values: readonly (number | string)[]): Float32Array {
  return Float32Array.from(values, (v) => (v === "NaN" ? Number.NaN : (v as number)));
}

/** Count and size of the differences between two integer lists. */
function compareInts(a: ArrayLike<number>, b: ArrayLike<number>): { n: number; worst: number } {
  let n = 0;
  let worst = 0;
  for (let i = 0; i < b.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (d > 0) {
      n++;
      worst = Math.max(worst, d);
    }
  }
  return { n, worst };
}

function quantizeCase(c: QuantizeCase): QuantizedResult {
  const x = tensor(f32(c.x), { shape: c.shape });
  let q: QTensor | undefined;
  try {
    q =
      c.kind === "per_tensor"
        ? quantizePerTensor(x, c.scale!, c.zeroPoint!, c.dtype)
        : quantizePerChannel(x, c.scales!, c.zeroPoints!, c.axis!, c.dtype);
    const ints = q.intRepr();
    const got = Array.from(ints.toFloat64());
    ints.dispose();
    const qi = compareInts(got, c.intRepr);
    const dq = dequantize(q);
    const deq = dq.hostData() as Float32Array;
    const want = f32(c.dequantized ?? []);
    let dn = 0;
    for (let i = 0; i < want.length; i++) if (!Object.is(deq[i], want[i])) dn++;
    dq.dispose();
    const mismatches = qi.n + dn;
    return {
      case: c.name,
      what: "quantize",
      status: mismatches === 0 && got.length === c.intRepr.length ? "pass" : "fail",
      mismatches,
      worst: qi.worst,
      message:
        mismatches > 0 ? `${qi.n} int(s) differ (worst ${qi.worst}), ${dn} dequantized` : undefined,
    };
  } catch (e) {
    return fail(c.name, "quantize", e);
  } finally {
    q?.dispose();
    x.dispose();
  }
}

function fail(name: string, what: QuantizedResult["what"], e: unknown): QuantizedResult {
  return {
    case: name,
    what,
    status: "fail",
    mismatches: -1,
    worst: -1,
    message: `threw ${(e as Error).name}: ${(e as Error).message}`,
  };
}

function linearInputs(c: LinearCase) {
  const xq = makeQuantized(
    tensor(Uint8Array.from(c.x.intRepr), { shape: [c.m, c.k], dtype: "uint8" }),
    "quint8",
    {
      scale: c.x.scale,
      zeroPoint: c.x.zeroPoint,
    },
  );
  const wInts = tensor(Int8Array.from(c.w.intRepr), { shape: [c.n, c.k] });
  const wq =
    c.w.scales !== undefined
      ? makeQuantized(wInts, "qint8", { scales: c.w.scales, zeroPoints: c.w.zeroPoints!, axis: 0 })
      : makeQuantized(wInts, "qint8", { scale: c.w.scale!, zeroPoint: c.w.zeroPoint! });
  wInts.dispose();
  const bias = c.bias ? tensor(f32(c.bias)) : undefined;
  const packed = linearPrepack(wq, bias);
  wq.dispose();
  bias?.dispose();
  return { xq, packed };
}

const STORAGE = {
  quint8: [Uint8Array, "uint8"],
  qint8: [Int8Array, "int8"],
  qint32: [Int32Array, "int32"],
} as const;

/** Rebuilds a quantized tensor from the data (a copy of the integers: makeQuantized's). */
function qtensor(j: QJson): QTensor {
  const [Storage, dtype] = STORAGE[j.dtype];
  const ints = tensor(Storage.from(j.intRepr), { shape: j.shape, dtype });
  try {
    return j.scales !== undefined
      ? makeQuantized(ints, j.dtype, { scales: j.scales, zeroPoints: j.zeroPoints!, axis: j.axis! })
      : makeQuantized(ints, j.dtype, { scale: j.scale!, zeroPoint: j.zeroPoint! });
  } finally {
    ints.dispose();
  }
}

/**
 * Runs `call` (the op `op`, on `kernel` when given) and compares its integers with
 * PyTorch's first engine's, `allowed` LSB apart at most, and its shape with `shape` when
 * given.
 */
function judge(
  name: string,
  what: QuantizedResult["what"],
  op: QuantizedOpName,
  torchOuts: Record<string, number[] | string>,
  allowed: number,
  kernel: string | undefined,
  call: () => QTensor,
  shape?: readonly number[],
): QuantizedResult {
  const want = Object.values(torchOuts).find((v): v is number[] => Array.isArray(v));
  if (!want) return fail(name, what, new Error("no PyTorch engine ran this case"));
  try {
    using _k = kernel ? kernelPriority(op, [kernel]) : undefined;
    let gotShape: readonly number[] = [];
    const rec = backends.record(() => {
      const y = call();
      gotShape = [...y.shape];
      const ints = y.intRepr();
      const got = Array.from(ints.toFloat64());
      ints.dispose();
      y.dispose();
      return got;
    });
    const got = rec.result;
    const ran = rec.calls.find((k) => k.op === op)?.kernel;
    const d = compareInts(got, want);
    const shapeOk = shape === undefined || `${gotShape}` === `${shape}`;
    const ok =
      got.length === want.length &&
      shapeOk &&
      d.worst <= allowed &&
      (kernel === undefined || ran === kernel);
    return {
      case: name,
      what,
      status: ok ? "pass" : "fail",
      kernel: ran,
      mismatches: d.n,
      worst: d.worst,
      message: ok
        ? undefined
        : ran !== kernel && kernel !== undefined
          ? `ran ${ran}, not ${kernel}`
          : !shapeOk
            ? `output shape [${gotShape}], PyTorch's [${shape}]`
            : `${d.n} of ${want.length} outputs differ from PyTorch (worst ${d.worst} LSB, allowed ${allowed})`,
    };
  } catch (e) {
    return fail(name, what, e);
  }
}

function linearCase(c: LinearCase, kernel: string | undefined): QuantizedResult {
  const { xq, packed } = linearInputs(c);
  try {
    return judge(c.name, "linear", "quantizedLinear", c.torch, c.enginesAgree ? 0 : 1, kernel, () =>
      quantizedLinear(xq, packed, c.outScale, c.outZeroPoint),
    );
  } finally {
    xq.dispose();
    packed.dispose();
  }
}

function convCase(c: ConvCase, kernel: string | undefined): QuantizedResult {
  const xq = qtensor(c.x);
  const wq = qtensor(c.w);
  const bias: Tensor | undefined = c.bias ? tensor(f32(c.bias)) : undefined;
  const { stride, padding, dilation, groups } = c;
  const packed = conv2dPrepack(wq, bias, { stride, padding, dilation, groups });
  wq.dispose();
  bias?.dispose();
  try {
    return judge(c.name, "conv2d", "quantizedConv2d", c.torch, c.enginesAgree ? 0 : 1, kernel, () =>
      quantizedConv2d(xq, packed, c.outScale, c.outZeroPoint),
    );
  } finally {
    xq.dispose();
    packed.dispose();
  }
}

const OP_OF = { relu: "quantizedRelu", add: "quantizedAdd", matmul: "quantizedMatmul" } as const;

function opCase(c: OpCaseData, kernels: Kernels): QuantizedResult {
  const a = qtensor(c.a);
  const b = c.b ? qtensor(c.b) : undefined;
  const op = OP_OF[c.op];
  const allowed = c.op === "matmul" || !c.enginesAgree ? 1 : 0;
  try {
    return judge(
      c.name,
      c.op,
      op,
      c.torch,
      allowed,
      kernels[op],
      () =>
        c.op === "relu"
          ? quantizedRelu(a)
          : c.op === "add"
            ? quantizedAdd(a, b!, c.outScale!, c.outZeroPoint!)
            : quantizedMatmul(a, b!, c.outScale!, c.outZeroPoint!),
      c.outShape,
    );
  } finally {
    a.dispose();
    b?.dispose();
  }
}

type Kernels = Partial<Record<QuantizedOpName, string>>;

/**
 * Runs the PyTorch cases: quantize/dequantize (the core's), and each quantized op on the
 * kernel `kernels` names for it (kernelPriority puts it first; the result names the
 * kernel that ran and fails if another did), else on whatever the dispatcher picks.
 */
export function runQuantizedConformance(opts: { kernels?: Kernels } = {}): QuantizedReport {
  const kernels = opts.kernels ?? {};
  const results = [
    ...(DATA.quantize as QuantizeCase[]).map(quantizeCase),
    ...(DATA.linear as LinearCase[]).map((c) => linearCase(c, kernels.quantizedLinear)),
    ...(DATA.conv2d as unknown as ConvCase[]).map((c) => convCase(c, kernels.quantizedConv2d)),
    ...(DATA.ops as unknown as OpCaseData[]).map((c) => opCase(c, kernels)),
  ];
  const failed = results.filter((r) => r.status !== "pass");
  const line = (r: QuantizedResult) =>
    `${r.what} ${r.case}${r.kernel ? ` [${r.kernel}]` : ""}: ${r.status}${r.message ? ` (${r.message})` : ""}`;
  return {
    torch: DATA.torch,
    results,
    failed,
    toString: () =>
      `quantized conformance against PyTorch ${DATA.torch}: ${results.length - failed.length} of ${results.length} pass${failed.length ? `\n${failed.map(line).join("\n")}` : ""}`,
    assertPassed() {
      if (failed.length > 0)
        throw new Error(`quantized conformance failed:\n${failed.map(line).join("\n")}`);
    },
  };
}
