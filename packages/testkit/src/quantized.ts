/**
 * Quantized conformance against PyTorch: cases computed by PyTorch 2.13
 * (scripts/quantized-cases.py wrote data/quantized-torch.json) for quantize, dequantize
 * and quantized linear. Quantizing and dequantizing must give PyTorch's bits; a linear
 * kernel must give PyTorch's integers exactly where PyTorch's own engines agree with each
 * other (every case so far), and within 1 LSB where they do not.
 */
import {
  backends,
  dequantize,
  kernelPriority,
  linearPrepack,
  makeQuantized,
  type QDType,
  type QTensor,
  quantizedLinear,
  quantizePerChannel,
  quantizePerTensor,
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

/** The PyTorch version and engines the data came from. */
export const QUANTIZED_DATA: { torch: string; engines: string[] } = {
  torch: DATA.torch,
  engines: DATA.engines,
};

export interface QuantizedResult {
  case: string;
  what: "quantize" | "linear";
  status: "pass" | "fail";
  /** The kernel that ran (linear). */
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

function linearCase(c: LinearCase, kernel: string | undefined): QuantizedResult {
  const want = Object.values(c.torch).find((v): v is number[] => Array.isArray(v));
  if (!want) return fail(c.name, "linear", new Error("no PyTorch engine ran this case"));
  const { xq, packed } = linearInputs(c);
  try {
    using _k = kernel ? kernelPriority("quantizedLinear", [kernel]) : undefined;
    const rec = backends.record(() => {
      const y = quantizedLinear(xq, packed, c.outScale, c.outZeroPoint);
      const ints = y.intRepr();
      const got = Array.from(ints.toFloat64());
      ints.dispose();
      y.dispose();
      return got;
    });
    const got = rec.result;
    const ran = rec.calls.find((k) => k.op === "quantizedLinear")?.kernel;
    const d = compareInts(got, want);
    const allowed = c.enginesAgree ? 0 : 1;
    const ok =
      got.length === want.length && d.worst <= allowed && (kernel === undefined || ran === kernel);
    return {
      case: c.name,
      what: "linear",
      status: ok ? "pass" : "fail",
      kernel: ran,
      mismatches: d.n,
      worst: d.worst,
      message: ok
        ? undefined
        : ran !== kernel && kernel !== undefined
          ? `ran ${ran}, not ${kernel}`
          : `${d.n} of ${want.length} outputs differ from PyTorch (worst ${d.worst} LSB, allowed ${allowed})`,
    };
  } catch (e) {
    return fail(c.name, "linear", e);
  } finally {
    xq.dispose();
    packed.dispose();
  }
}

/**
 * Runs the PyTorch cases: quantize/dequantize (the core's), and quantized linear on
 * `kernel` when given (kernelPriority puts it first; the result names the kernel that ran
 * and fails if another did), else on whatever the dispatcher picks.
 */
export function runQuantizedConformance(opts: { kernel?: string } = {}): QuantizedReport {
  const results = [
    ...(DATA.quantize as QuantizeCase[]).map(quantizeCase),
    ...(DATA.linear as LinearCase[]).map((c) => linearCase(c, opts.kernel)),
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
