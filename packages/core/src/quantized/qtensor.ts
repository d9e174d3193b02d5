/**
 * Quantized tensors (torch.quint8, torch.qint8, torch.qint32): integers in an ordinary CPU
 * tensor (uint8, int8, int32: the int repr) and the affine map back to real values,
 * per tensor (scale, zero point) or per channel (a scale and a zero point for each index
 * along one axis): real = (q - zero_point) * scale.
 *
 * Quantizing rounds as PyTorch 2.13 does on x86 (fl() rounds to float32, inv = fl(1 /
 * fl(scale)), rint rounds half to even, the zero point added before rounding):
 *
 *   per tensor, quint8 and qint8:  q = clamp(rint(fma(x, inv, zero_point)))   (fbgemm's FMA)
 *   per tensor, qint32:            q = clamp(rint(fl(fl(x · inv) + fl(zero_point))))
 *   per channel, every dtype:      q = clamp(rint(fl(fl(x · inv[c]) + fl(zero_point[c]))))
 *
 * with fma() rounding once. Scales are kept as given (float64, as torch keeps them) and
 * used in float32.
 */
import { ArgumentError, DeviceError, DisposedError, DTypeError, ShapeError } from "../errors.ts";
import { checkTensor } from "../ops/validate.ts";
import type { DType } from "../tensor/dtype.ts";
import { isFloat } from "../tensor/dtype.ts";
import { empty, type Tensor, tensor } from "../tensor/tensor.ts";
import { show } from "../util/format.ts";

export const QDTYPES = ["quint8", "qint8", "qint32"] as const;
export type QDType = (typeof QDTYPES)[number];
export type QScheme = "per_tensor_affine" | "per_channel_affine";

/** The integer dtype that stores each quantized dtype, and its range. */
export const Q_STORAGE: Readonly<Record<QDType, { dtype: DType; min: number; max: number }>> = {
  quint8: { dtype: "uint8", min: 0, max: 255 },
  qint8: { dtype: "int8", min: -128, max: 127 },
  qint32: { dtype: "int32", min: -2147483648, max: 2147483647 },
};

/** Per-tensor or per-channel parameters, as a quantized tensor carries them. */
export type QParams =
  | { scheme: "per_tensor_affine"; scale: number; zeroPoint: number }
  | {
      scheme: "per_channel_affine";
      scales: Float64Array;
      zeroPoints: Int32Array;
      axis: number;
    };

export class QTensor implements Disposable {
  readonly dtype: QDType;
  /** The integers (uint8, int8 or int32), owned by this tensor. */
  readonly #repr: Tensor;
  readonly #params: QParams;

  /**
   * Takes `repr` (contiguous, of dtype's storage) as its own. quantizePerTensor,
   * quantizePerChannel and makeQuantized (which copies any view) are the usual ways in.
   */
  constructor(repr: Tensor, dtype: QDType, params: QParams) {
    checkParts(repr, dtype, params);
    this.#repr = repr;
    this.dtype = dtype;
    this.#params = params;
  }

  get shape(): readonly number[] {
    return this.#repr.shape;
  }
  get rank(): number {
    return this.#repr.rank;
  }
  get numel(): number {
    return this.#repr.numel;
  }
  get device(): string {
    return this.#repr.device;
  }
  get disposed(): boolean {
    return this.#repr.disposed;
  }
  get qscheme(): QScheme {
    return this.#params.scheme;
  }
  /** The parameters (for kernels). */
  get qparams(): QParams {
    return this.#params;
  }

  /** The integers without a copy (for kernels; alive as long as this tensor). */
  storage(op?: string): Tensor {
    if (this.#repr.disposed)
      throw new DisposedError(
        `${op ? `${op}: ` : ""}this quantized tensor was disposed; it cannot be used any more`,
      );
    return this.#repr;
  }

  /** A copy with the same quantization (torch's clone()). */
  clone(): QTensor {
    const p = this.#params;
    return new QTensor(
      this.storage("clone").clone(),
      this.dtype,
      p.scheme === "per_tensor_affine"
        ? { ...p }
        : { ...p, scales: p.scales.slice(), zeroPoints: p.zeroPoints.slice() },
    );
  }

  /** A copy of the integers as an ordinary tensor (torch's int_repr()). */
  intRepr(): Tensor {
    return this.storage("intRepr").clone();
  }

  /** torch's q_scale(): per-tensor quantization only. */
  qScale(): number {
    return this.perTensor("qScale").scale;
  }
  /** torch's q_zero_point(): per-tensor quantization only. */
  qZeroPoint(): number {
    return this.perTensor("qZeroPoint").zeroPoint;
  }
  /** torch's q_per_channel_scales(): float64, one per index along the axis. */
  qPerChannelScales(): Tensor {
    return tensor(this.perChannel("qPerChannelScales").scales);
  }
  /** torch's q_per_channel_zero_points(): int32 here (torch gives int64). */
  qPerChannelZeroPoints(): Tensor {
    return tensor(this.perChannel("qPerChannelZeroPoints").zeroPoints);
  }
  /** torch's q_per_channel_axis(). */
  qPerChannelAxis(): number {
    return this.perChannel("qPerChannelAxis").axis;
  }

  /** Real values, float32 (torch's dequantize()). */
  dequantize(): Tensor {
    return dequantize(this);
  }

  dispose(): void {
    this.#repr.dispose();
  }
  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    const p = this.#params;
    const q =
      p.scheme === "per_tensor_affine"
        ? `scale=${p.scale}, zero_point=${p.zeroPoint}`
        : `axis=${p.axis}, ${p.scales.length} scales`;
    return `QTensor(shape=[${this.shape}], dtype=${this.dtype}, ${p.scheme}, ${q})`;
  }

  private perTensor(what: string) {
    if (this.#params.scheme !== "per_tensor_affine")
      throw new ArgumentError(
        `${what}: this tensor is quantized per channel (axis ${this.#params.axis}); use qPerChannelScales(), qPerChannelZeroPoints()`,
      );
    return this.#params;
  }
  private perChannel(what: string) {
    if (this.#params.scheme !== "per_channel_affine")
      throw new ArgumentError(
        `${what}: this tensor is quantized per tensor; use qScale(), qZeroPoint()`,
      );
    return this.#params;
  }
}

/**
 * The constructor's checks: every kernel reads the integers in order from the first, so
 * a strided view (a transpose) would be read wrongly, and parameters that do not fit the
 * shape would give NaN.
 */
function checkParts(repr: Tensor, dtype: QDType, params: QParams): void {
  const op = "QTensor";
  checkTensor(op, "repr", repr);
  const d = checkQDType(op, dtype);
  if (repr.dtype !== Q_STORAGE[d].dtype)
    throw new DTypeError(`${op}: ${d} is stored as ${Q_STORAGE[d].dtype}; repr is ${repr.dtype}`);
  if (repr.deviceType !== "cpu")
    throw new DeviceError(`${op}: quantized tensors live on the CPU; repr is on ${repr.device}`);
  if (!repr.isContiguous)
    throw new ArgumentError(
      `${op}: repr must be contiguous, got strides [${repr.strides}] for shape [${repr.shape}]; use makeQuantized(), which copies a view`,
    );
  if (params === null || typeof params !== "object")
    throw new ArgumentError(`${op}: params must be a QParams object, got ${show(params)}`);
  if (params.scheme === "per_tensor_affine") {
    checkScale(op, "scale", params.scale);
    checkZeroPoint(op, "zeroPoint", params.zeroPoint, d);
  } else if (params.scheme === "per_channel_affine") {
    const ax = checkAxis(op, params.axis, repr.rank);
    if (ax !== params.axis)
      throw new ArgumentError(`${op}: axis must be in [0, ${repr.rank - 1}], got ${params.axis}`);
    if (!(params.scales instanceof Float64Array) || !(params.zeroPoints instanceof Int32Array))
      throw new ArgumentError(
        `${op}: per-channel scales must be a Float64Array and zeroPoints an Int32Array`,
      );
    const n = repr.shape[ax];
    if (params.scales.length !== n || params.zeroPoints.length !== n)
      throw new ShapeError(
        `${op}: ${params.scales.length} scales and ${params.zeroPoints.length} zero points for the ${n} indices along axis ${ax}`,
      );
    for (let c = 0; c < n; c++) {
      checkScale(op, `scales[${c}]`, params.scales[c]);
      checkZeroPoint(op, `zeroPoints[${c}]`, params.zeroPoints[c], d);
    }
  } else
    throw new ArgumentError(
      `${op}: params.scheme must be "per_tensor_affine" or "per_channel_affine", got ${show((params as { scheme: unknown }).scheme)}`,
    );
}

export function isQDType(x: unknown): x is QDType {
  return typeof x === "string" && (QDTYPES as readonly string[]).includes(x);
}

function checkQDType(op: string, d: unknown): QDType {
  if (!isQDType(d))
    throw new DTypeError(
      `${op}: dtype ${show(d)} is not quantized; expected ${QDTYPES.join(", ")}`,
    );
  return d;
}

function checkScale(op: string, name: string, s: unknown): number {
  if (typeof s !== "number" || !Number.isFinite(s) || s <= 0 || Math.fround(s) <= 0)
    throw new ArgumentError(
      `${op}: ${name} must be a finite number > 0 (and > 0 in float32), got ${show(s)}`,
    );
  return s;
}

function checkZeroPoint(op: string, name: string, z: unknown, dtype: QDType): number {
  const { min, max } = Q_STORAGE[dtype];
  if (typeof z !== "number" || !Number.isInteger(z) || z < min || z > max)
    throw new ArgumentError(
      `${op}: ${name} must be an integer in [${min}, ${max}] for ${dtype}, got ${show(z)}`,
    );
  return z;
}

function checkFloatInput(op: string, x: unknown): Tensor {
  const t = x as Tensor;
  if (!t || typeof t !== "object" || typeof t.hostData !== "function")
    throw new ArgumentError(`${op}: x must be a Tensor, got ${show(x)}`);
  t.assertAlive("x", op);
  if (!isFloat(t.dtype)) throw new DTypeError(`${op}: x must be a float tensor, got ${t.dtype}`);
  if (t.deviceType !== "cpu")
    throw new DeviceError(
      `${op}: quantized tensors live on the CPU; x is on ${t.device} (x.to("cpu") first)`,
    );
  return t;
}

/** rint: nearest integer, ties to even (C's nearbyint in the default rounding mode). */
export function rint(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * fl(a · b + c) rounded once, as an FMA gives it in float32: a, b and c float32 values.
 * a · b is exact in float64 (two 24-bit significands); the sum may round there, and when
 * that lands on a float32 halfway point the part it lost (TwoSum, exact) says which way.
 */
export function fmaf(a: number, b: number, c: number): number {
  const p = a * b;
  const s = p + c;
  const r = Math.fround(s);
  if (r === s || !Number.isFinite(s)) return r;
  const other = 2 * s - r; // the float32 on s's other side, if s lies halfway
  if ((r + other) / 2 !== s || Math.fround(other) !== other) return r;
  const bp = s - p;
  const lost = p - (s - bp) + (c - bp);
  if (lost === 0) return r;
  return lost > 0 ? Math.max(r, other) : Math.min(r, other);
}

/** The reciprocal PyTorch quantizes with: fl(1 / fl(scale)). */
export function inverseScale(scale: number): number {
  return Math.fround(1 / Math.fround(scale));
}

function clampTo(q: number, min: number, max: number): number {
  return q < min ? min : q > max ? max : q;
}

/**
 * One value quantized per tensor as PyTorch does (see the header). NaN gives what PyTorch
 * 2.13 gives on x86: the top of the range for the 8-bit types (its vector clamp), the
 * bottom for qint32 (C's conversion of NaN to an integer).
 */
export function quantizeValue(x: number, scale: number, zeroPoint: number, dtype: QDType): number {
  return quantizeWith(x, inverseScale(scale), zeroPoint, dtype);
}

/** quantizeValue with inv = inverseScale(scale) computed once by the caller. */
export function quantizeWith(x: number, inv: number, zeroPoint: number, dtype: QDType): number {
  const { min, max } = Q_STORAGE[dtype];
  if (dtype === "qint32") {
    const r = rint(Math.fround(Math.fround(Math.fround(x) * inv) + Math.fround(zeroPoint)));
    return Number.isNaN(r) ? min : clampTo(r, min, max);
  }
  const r = rint(fmaf(Math.fround(x), inv, zeroPoint));
  return Number.isNaN(r) ? max : clampTo(r, min, max);
}

/**
 * One value quantized per channel as PyTorch does (its scalar quantize_val, see the
 * header), given inv = inverseScale(scale[c]). NaN gives 0 for the 8-bit types and the
 * bottom of the range for qint32 (C's conversion of NaN to int32, INT_MIN, whose low byte
 * is 0).
 */
export function quantizeChannelValue(
  x: number,
  inv: number,
  zeroPoint: number,
  dtype: QDType,
): number {
  const { min, max } = Q_STORAGE[dtype];
  const r = rint(Math.fround(Math.fround(Math.fround(x) * inv) + Math.fround(zeroPoint)));
  if (Number.isNaN(r)) return dtype === "qint32" ? min : 0;
  return clampTo(r, min, max);
}

/** x quantized with one scale and zero point (torch.quantize_per_tensor). */
export function quantizePerTensor(
  x: Tensor,
  scale: number,
  zeroPoint: number,
  dtype: QDType,
): QTensor {
  const op = "quantizePerTensor";
  const t = checkFloatInput(op, x);
  const d = checkQDType(op, dtype);
  checkScale(op, "scale", scale);
  checkZeroPoint(op, "zeroPoint", zeroPoint, d);
  const src = t.toFloat64();
  const repr = empty(t.shape, { dtype: Q_STORAGE[d].dtype });
  const out = repr.hostData();
  const inv = inverseScale(scale);
  for (let i = 0; i < src.length; i++) out[i] = quantizeWith(src[i], inv, zeroPoint, d);
  return new QTensor(repr, d, { scheme: "per_tensor_affine", scale, zeroPoint });
}

/** A Tensor of scales or zero points: alive and 1-D, as torch requires. */
function vectorOf(op: string, name: string, v: Tensor): number[] {
  checkTensor(op, name, v);
  if (v.rank !== 1)
    throw new ShapeError(`${op}: ${name} must be 1-D, got a tensor of shape [${v.shape}]`);
  return Array.from(v.toFloat64());
}

function numbersOf(op: string, name: string, v: unknown, n: number): number[] {
  const arr =
    Array.isArray(v) || ArrayBuffer.isView(v)
      ? Array.from(v as ArrayLike<number>)
      : v && typeof (v as Tensor).toFloat64 === "function"
        ? vectorOf(op, name, v as Tensor)
        : undefined;
  if (!arr) throw new ArgumentError(`${op}: ${name} must be numbers or a Tensor, got ${show(v)}`);
  if (arr.length !== n)
    throw new ShapeError(`${op}: ${name} has ${arr.length} values; the axis has ${n} indices`);
  return arr;
}

function checkAxis(op: string, axis: unknown, rank: number): number {
  if (typeof axis !== "number" || !Number.isInteger(axis) || axis < -rank || axis >= rank)
    throw new ArgumentError(
      `${op}: axis must be an integer in [${-rank}, ${rank - 1}] for a rank-${rank} tensor, got ${show(axis)}`,
    );
  return axis < 0 ? axis + rank : axis;
}

/** The index along `axis` of each element of a contiguous tensor of `shape`. */
function channelOf(shape: readonly number[], axis: number): (i: number) => number {
  const inner = shape.slice(axis + 1).reduce((a, b) => a * b, 1);
  const size = shape[axis];
  return (i) => Math.floor(i / inner) % size;
}

/** x quantized with a scale and zero point per index along `axis` (torch.quantize_per_channel). */
export function quantizePerChannel(
  x: Tensor,
  scales: Tensor | readonly number[],
  zeroPoints: Tensor | readonly number[],
  axis: number,
  dtype: QDType,
): QTensor {
  const op = "quantizePerChannel";
  const t = checkFloatInput(op, x);
  const d = checkQDType(op, dtype);
  const ax = checkAxis(op, axis, t.rank);
  const n = t.shape[ax];
  const s = numbersOf(op, "scales", scales, n).map((v, i) => checkScale(op, `scales[${i}]`, v));
  const z = numbersOf(op, "zeroPoints", zeroPoints, n).map((v, i) =>
    checkZeroPoint(op, `zeroPoints[${i}]`, v, d),
  );
  const src = t.toFloat64();
  const repr = empty(t.shape, { dtype: Q_STORAGE[d].dtype });
  const out = repr.hostData();
  const ch = channelOf(t.shape, ax);
  const inv = s.map(inverseScale);
  for (let i = 0; i < src.length; i++) {
    const c = ch(i);
    out[i] = quantizeChannelValue(src[i], inv[c], z[c], d);
  }
  return new QTensor(repr, d, {
    scheme: "per_channel_affine",
    scales: Float64Array.from(s),
    zeroPoints: Int32Array.from(z),
    axis: ax,
  });
}

/** A contiguous copy of t that nothing else shares. */
function ownCopy(t: Tensor): Tensor {
  return t.isContiguous ? t.clone() : t.contiguous();
}

/**
 * A quantized tensor over given integers (torch._make_per_tensor_quantized_tensor and
 * _make_per_channel_quantized_tensor): `intRepr` is copied; its dtype must be the storage
 * of `dtype` (uint8 for quint8, int8 for qint8, int32 for qint32).
 */
export function makeQuantized(
  intRepr: Tensor,
  dtype: QDType,
  params:
    | { scale: number; zeroPoint: number }
    | { scales: readonly number[]; zeroPoints: readonly number[]; axis: number },
): QTensor {
  const op = "makeQuantized";
  checkTensor(op, "intRepr", intRepr);
  const d = checkQDType(op, dtype);
  if (params === null || typeof params !== "object")
    throw new ArgumentError(
      `${op}: params must be { scale, zeroPoint } or { scales, zeroPoints, axis }, got ${show(params)}`,
    );
  if (intRepr.dtype !== Q_STORAGE[d].dtype)
    throw new DTypeError(
      `${op}: ${d} is stored as ${Q_STORAGE[d].dtype}; intRepr is ${intRepr.dtype}`,
    );
  if (intRepr.deviceType !== "cpu")
    throw new DeviceError(
      `${op}: quantized tensors live on the CPU; intRepr is on ${intRepr.device}`,
    );
  if ("scale" in params) {
    checkScale(op, "scale", params.scale);
    checkZeroPoint(op, "zeroPoint", params.zeroPoint, d);
    return new QTensor(ownCopy(intRepr), d, {
      scheme: "per_tensor_affine",
      scale: params.scale,
      zeroPoint: params.zeroPoint,
    });
  }
  const ax = checkAxis(op, params.axis, intRepr.rank);
  const n = intRepr.shape[ax];
  const s = numbersOf(op, "scales", params.scales, n).map((v, i) =>
    checkScale(op, `scales[${i}]`, v),
  );
  const z = numbersOf(op, "zeroPoints", params.zeroPoints, n).map((v, i) =>
    checkZeroPoint(op, `zeroPoints[${i}]`, v, d),
  );
  return new QTensor(ownCopy(intRepr), d, {
    scheme: "per_channel_affine",
    scales: Float64Array.from(s),
    zeroPoints: Int32Array.from(z),
    axis: ax,
  });
}

/**
 * A new per-tensor quantized tensor for a kernel to fill (its integers uninitialised;
 * `q.storage()` is the tensor to write). The parameters are the op's, checked by it.
 */
export function emptyQuantized(
  shape: readonly number[],
  dtype: QDType,
  scale: number,
  zeroPoint: number,
): QTensor {
  const repr = empty([...shape], { dtype: Q_STORAGE[dtype].dtype });
  return new QTensor(repr, dtype, { scheme: "per_tensor_affine", scale, zeroPoint });
}

/** The real values of q, float32: (q - zero_point) * scale (torch.dequantize). */
export function dequantize(q: QTensor): Tensor {
  if (!(q instanceof QTensor))
    throw new ArgumentError(`dequantize: expected a QTensor, got ${show(q)}`);
  const repr = q.storage("dequantize");
  const out = empty(repr.shape, { dtype: "float32" });
  // Both views after the allocation: growing a plain (unshared) memory detaches older ones.
  const src = repr.hostData() as Int8Array | Uint8Array | Int32Array;
  const dst = out.hostData() as Float32Array;
  const p = q.qparams;
  if (p.scheme === "per_tensor_affine") {
    // As PyTorch's vector path: float(q - zero_point) * scale in float32 (exact for the
    // 8-bit types; a qint32 difference past 2^24 rounds first, as there). PyTorch takes
    // that difference in int32 and wraps it past the range; this does not.
    const s = Math.fround(p.scale);
    for (let i = 0; i < dst.length; i++) dst[i] = Math.fround(src[i] - p.zeroPoint) * s;
  } else {
    // Per channel, PyTorch's scalar code: fl(fl(q) - fl(zero_point)) (exact for the 8-bit
    // types; qint32 values past 2^24 round first), times the float64 scale, rounded once
    // (per tensor, by the scale in float32: the bits differ in about one element of ten).
    const ch = channelOf(repr.shape, p.axis);
    const zps = Float32Array.from(p.zeroPoints);
    for (let i = 0; i < dst.length; i++) {
      const c = ch(i);
      dst[i] = Math.fround(Math.fround(src[i]) - zps[c]) * p.scales[c];
    }
  }
  return out;
}
