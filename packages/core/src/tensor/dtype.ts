import { DTypeError } from "../errors.ts";
import { show } from "../util/format.ts";

export const DTYPES = [
  "float32",
  "float64",
  "float16",
  "bfloat16",
  "int32",
  "int64",
  "int8",
  "uint8",
  "bool",
] as const;
export type DType = (typeof DTYPES)[number];
export type FloatDType = "float32" | "float64" | "float16" | "bfloat16";
export const FLOAT_DTYPES: readonly FloatDType[] = ["float32", "float64", "float16", "bfloat16"];

/** The typed array that stores each dtype. float16 and bfloat16 are kept as raw bits. */
export type StorageArray =
  | Float32Array
  | Float64Array
  | Uint16Array
  | Int32Array
  | BigInt64Array
  | Int8Array
  | Uint8Array;

type ArrayCtor = {
  new (b: ArrayBufferLike, off: number, len: number): StorageArray;
  BYTES_PER_ELEMENT: number;
};

const CTORS: Record<DType, ArrayCtor> = {
  float32: Float32Array as unknown as ArrayCtor,
  float64: Float64Array as unknown as ArrayCtor,
  float16: Uint16Array as unknown as ArrayCtor,
  bfloat16: Uint16Array as unknown as ArrayCtor,
  int32: Int32Array as unknown as ArrayCtor,
  int64: BigInt64Array as unknown as ArrayCtor,
  // The storage of quantized tensors (quint8, qint8): conversions truncate and wrap, as C's.
  int8: Int8Array as unknown as ArrayCtor,
  uint8: Uint8Array as unknown as ArrayCtor,
  bool: Uint8Array as unknown as ArrayCtor,
};

export function isDType(x: unknown): x is DType {
  return typeof x === "string" && (DTYPES as readonly string[]).includes(x);
}

export function isFloat(d: DType): d is FloatDType {
  return d === "float32" || d === "float64" || d === "float16" || d === "bfloat16";
}

export function bytesPerElement(d: DType): number {
  // An unknown name read CTORS[d] as undefined: a TypeError instead of a DTypeError.
  return CTORS[checkDType("bytesPerElement", d)].BYTES_PER_ELEMENT;
}

/** A typed-array view of `length` elements of dtype `d` over `buffer` at `byteOffset`. */
export function viewOf(
  d: DType,
  buffer: ArrayBufferLike,
  byteOffset: number,
  length: number,
): StorageArray {
  return new CTORS[d](buffer, byteOffset, length);
}

export function checkDType(name: string, d: unknown): DType {
  if (!isDType(d)) {
    throw new DTypeError(`${name}: unknown dtype ${show(d)}; expected one of ${DTYPES.join(", ")}`);
  }
  return d;
}

// float16 / bfloat16 conversion, through a shared scratch word.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function bf16ToNumber(bits: number): number {
  u32[0] = bits << 16;
  return f32[0];
}

export function numberToBf16(x: number): number {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7fffffff) > 0x7f800000) return 0x7fc0; // NaN
  // Round to nearest even on the 16 dropped bits.
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

export function f16ToNumber(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/**
 * float64 to float16 bits, through float32 as torch rounds (c10::Half is made from a
 * float): 1 + 2^-11 + 2^-40 gives 1, as torch's .half(), where a direct rounding gives
 * 1 + 2^-10. Each step rounds to nearest even, subnormals included.
 */
export function numberToF16(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.fround(Math.abs(x));
  if (a >= 65520) return sign | 0x7c00; // rounds to infinity
  if (a < 2 ** -24 / 2) return sign;
  let e = Math.floor(Math.log2(a));
  if (e < -14) return sign | roundHalfEven(a / 2 ** -24); // subnormal: units of 2^-24
  if (2 ** e > a) e -= 1; // log2 rounding guard
  let m = roundHalfEven((a / 2 ** e - 1) * 1024); // 10 fraction bits (both steps exact)
  if (m === 1024) {
    m = 0;
    e += 1;
  }
  if (e > 15) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | m;
}

/** m (>= 0, exact) to the nearest integer, ties to even: only an exact .5 is a tie. */
function roundHalfEven(m: number): number {
  const fl = Math.floor(m);
  const diff = m - fl;
  return diff > 0.5 || (diff === 0.5 && fl % 2 === 1) ? fl + 1 : fl;
}

/** Reads element i of a storage array as a JS number, whatever the dtype. */
export function readNumber(d: DType, a: StorageArray, i: number): number {
  switch (d) {
    case "float16":
      return f16ToNumber(a[i] as number);
    case "bfloat16":
      return bf16ToNumber(a[i] as number);
    case "int64":
      return Number(a[i] as bigint);
    default:
      return a[i] as number;
  }
}

/** Writes a JS number into element i, converting (and rounding) to the dtype. */
export function writeNumber(d: DType, a: StorageArray, i: number, x: number): void {
  switch (d) {
    case "float16":
      a[i] = numberToF16(x);
      return;
    case "bfloat16":
      a[i] = numberToBf16(x);
      return;
    case "int64":
      // BigInt() throws a RangeError on NaN and infinities: say it in our terms first.
      if (!Number.isFinite(x))
        throw new DTypeError(`int64 has no value for ${x}; replace NaN and infinities first`);
      // A BigInt64Array wraps what does not fit (2^63 would store -2^63): refuse instead.
      if (x < -(2 ** 63) || x >= 2 ** 63) throw int64Overflow(x);
      (a as BigInt64Array)[i] = BigInt(Math.trunc(x));
      return;
    case "int32":
      a[i] = Math.trunc(x) | 0;
      return;
    case "bool":
      // NaN is true, as in torch (x ? 1 : 0 made it false).
      a[i] = x !== 0 ? 1 : 0;
      return;
    default:
      a[i] = x;
  }
}

/** The values torch.tensor accepts for each small integer dtype (uint8 wraps negatives, as torch's does). */
const CREATION_RANGE: Partial<Record<DType, readonly [number, number]>> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  int8: [-128, 127],
  uint8: [-255, 255],
};

/**
 * A creation value that the integer dtype `d` cannot hold: NaN, an infinity or a value
 * past its range, refused as torch.tensor refuses it ("value cannot be converted to type
 * int32 without overflow"); a fraction truncates toward zero. Arithmetic results still
 * wrap (writeNumber), as torch's integer ops do.
 */
function checkCreationRange(d: DType, x: number): void {
  const range = CREATION_RANGE[d];
  // torch wraps only whole negatives into uint8 (-1 to 255): a negative fraction is a float
  // below 0, which it refuses (-0.5 and -1.5 gave 0 and 255).
  const fractionBelowZero = d === "uint8" && x < 0 && !Number.isInteger(x);
  if (!range || (x >= range[0] && x <= range[1] && !fractionBelowZero)) return;
  throw creationRangeError(d, range, x);
}

function creationRangeError(
  d: DType,
  range: readonly [number, number],
  x: number | bigint,
): DTypeError {
  const holds =
    d === "uint8" ? "0 ... 255 (whole negatives to -255 wrap, as in torch)" : range.join(" ... ");
  return new DTypeError(
    typeof x === "number" && Number.isNaN(x)
      ? `${d} has no value for NaN; replace it first, or use a float dtype`
      : `${d} holds ${holds}; ${show(x)} is out of range (use a wider dtype, or a value in range)`,
  );
}

const isNarrowFloat = (d: DType): boolean => d === "float32" || d === "float16" || d === "bfloat16";

const f64Word = new Float64Array(1);
const u64Word = new BigUint64Array(f64Word.buffer);

/**
 * A bigint as a float64 rounded to odd where it is inexact, so that rounding it again to
 * float32 (then to float16 or bfloat16, as torch does) is the correct rounding of the
 * bigint: through Number() alone, 2^60 + 2^36 + 1 rounded twice, to 2^60 instead of
 * torch's 2^60 + 2^37.
 */
export function bigintToOddNumber(x: bigint): number {
  const n = Number(x);
  const rest = x - BigInt(n); // Number(x) is integral past 2^53, where it can be inexact
  if (rest === 0n) return n;
  f64Word[0] = n;
  // Truncate toward zero (one step down in magnitude when Number() rounded away), then odd.
  if (x > 0n === rest < 0n) u64Word[0] -= 1n;
  u64Word[0] |= 1n;
  return f64Word[0];
}

/**
 * A bigint past float64's range (2^1024 and up) has no float value: torch raises "int too
 * large to convert to float". Number() made it Infinity (float64), and bigintToOddNumber a
 * RangeError (BigInt(Infinity)) for float32, float16 and bfloat16.
 */
function checkBigintFitsFloat64(x: bigint): void {
  if (Number.isFinite(Number(x))) return;
  const bits = (x < 0n ? -x : x).toString(2).length; // its digits would fill screens
  throw new DTypeError(
    `a bigint of ${bits} bits is too large for any float dtype (float64 holds magnitudes below 2^1024); use a smaller value, or Infinity`,
  );
}

/** The largest finite value of each narrow float dtype. */
const FLOAT_MAX: Partial<Record<DType, number>> = {
  float32: 3.4028234663852886e38,
  float16: 65504,
  bfloat16: 3.3895313892515355e38,
};

/**
 * A fill value that float32, float16 or bfloat16 cannot hold: a finite value past the
 * dtype's largest, which torch.full refuses ("value cannot be converted to type c10::Half
 * without overflow") instead of filling with infinity. Infinity itself is allowed.
 */
export function checkFloatFill(name: string, d: DType, x: number): void {
  const max = FLOAT_MAX[d];
  if (max === undefined || !Number.isFinite(x) || Math.abs(x) <= max) return;
  throw new DTypeError(
    `${name}: ${d} holds finite values up to ±${max}; ${show(x)} would overflow (use a wider dtype, or Infinity for an infinite fill)`,
  );
}

/** A bigint cast to int32, int8 or uint8: its low bits (through Number() they rounded past 2^53). */
const lowBits = (d: DType, x: bigint): number =>
  Number(d === "uint8" ? BigInt.asUintN(8, x) : BigInt.asIntN(d === "int8" ? 8 : 32, x));

function int64Overflow(x: number | bigint): DTypeError {
  return new DTypeError(
    `int64 holds -2^63 ... 2^63-1; ${show(x)} is out of range (use float64, or a smaller value)`,
  );
}

/**
 * Writes a creation value (number, boolean or bigint) into element i. A bigint goes into
 * int64 exactly: through Number() it would round past 2^53. `checked` (JS values, as
 * torch.tensor of a list): what an int32, int8 or uint8 cannot hold is a DTypeError;
 * unchecked (typed arrays, as torch.tensor of a numpy array): cast, wrapping.
 */
export function writeValue(
  d: DType,
  a: StorageArray,
  i: number,
  x: number | boolean | bigint,
  checked = true,
): void {
  const range = CREATION_RANGE[d];
  if (typeof x === "bigint" && range) {
    if (checked && (x < BigInt(range[0]) || x > BigInt(range[1])))
      throw creationRangeError(d, range, x);
    a[i] = lowBits(d, x);
    return;
  }
  if (typeof x !== "bigint" || d !== "int64") {
    if (typeof x === "bigint" && isFloat(d)) checkBigintFitsFloat64(x);
    const n = typeof x === "bigint" && isNarrowFloat(d) ? bigintToOddNumber(x) : Number(x);
    if (checked) checkCreationRange(d, n);
    writeNumber(d, a, i, n);
    return;
  }
  if (BigInt.asIntN(64, x) !== x) throw int64Overflow(x);
  (a as BigInt64Array)[i] = x;
}
