/**
 * astype() on the device: a shader that reads a (strided) view and writes it contiguous in
 * another dtype, with the host's rounding (core's dtype.ts), so a webgpu tensor converts
 * without a read-back:
 * - float to float: round to nearest even, subnormals kept, overflow to infinity, NaN
 *   kept; float16 and bfloat16 widen exactly;
 * - integer to float: to float32 (nearest even), then to float16 or bfloat16 from there,
 *   as c10::Half and torch's cast do;
 * - float to integer: toward zero, wrapped to the width (NaN and infinities give 0), as the
 *   host's typed arrays store them;
 * - to bool: nonzero (NaN is true, -0 false).
 * Everything is done on the bits with integer arithmetic: WGSL lets a float conversion
 * round either way and flush subnormals (SwiftShader does), and float16 needs no
 * shader-f16 feature this way. float64 and int64 have no 8-byte type in WGSL: refused.
 */
import { type DType, DTypeError } from "@backplane/core";

/** The dtypes the shader converts, by the code it knows them by. */
const KINDS: Partial<Record<DType, number>> = {
  float32: 0,
  float16: 1,
  bfloat16: 2,
  int32: 3,
  uint8: 4,
  int8: 5,
  bool: 6,
};

const BYTES = [4, 2, 2, 4, 1, 1, 1];

/** The shader's code and element bytes of `dtype`, or a DTypeError. */
export function convertKind(dtype: DType, from: DType, to: DType): { kind: number; bytes: number } {
  const kind = KINDS[dtype];
  if (kind === undefined)
    throw new DTypeError(
      `astype ${from} to ${to} on webgpu: ${dtype} has no WGSL type to convert on the device; move the tensor first: (await t.toAsync("cpu")).astype("${to}")`,
    );
  return { kind, bytes: BYTES[kind]! };
}

/**
 * WGSL's source(i): the element of a view that output element i (row-major) reads, with
 * the view in prm from word `at`: rank, first element, shape[rank], strides[rank].
 */
export function viewWalk(at: number): string {
  return `
fn source(i: u32) -> u32 {
  let rank = prm[${at}u];
  var rem = i;
  var pos = prm[${at + 1}u];
  for (var d = i32(rank) - 1; d >= 0; d--) {
    let size = prm[${at + 2}u + u32(d)];
    pos += (rem % size) * prm[${at + 2}u + rank + u32(d)];
    rem = rem / size;
  }
  return pos;
}
`;
}

export const CONVERT = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
// words, numel, kindIn, bytesIn, kindOut, bytesOut, then the view (viewWalk)
@group(0) @binding(2) var<storage, read> prm: array<u32>;
${viewWalk(6)}
// The raw bits of source element p, zero-extended.
fn load(p: u32, bytes: u32) -> u32 {
  if (bytes == 4u) { return src[p]; }
  if (bytes == 2u) { return (src[p >> 1u] >> ((p & 1u) * 16u)) & 0xffffu; }
  return (src[p >> 2u] >> ((p & 3u) * 8u)) & 0xffu;
}

fn isFloat(kind: u32) -> bool { return kind <= 2u; }

// float16 bits to float32 bits, exactly.
fn halfToF32(h: u32) -> u32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0x1fu) { return sign | 0x7f800000u | (m << 13u); }
  if (e == 0u) {
    if (m == 0u) { return sign; }
    let msb = 31u - countLeadingZeros(m);
    return sign | ((msb + 103u) << 23u) | ((m << (23u - msb)) & 0x7fffffu);
  }
  return sign | ((e + 112u) << 23u) | (m << 13u);
}

fn toF32Bits(raw: u32, kind: u32) -> u32 {
  if (kind == 1u) { return halfToF32(raw); }
  if (kind == 2u) { return raw << 16u; }
  return raw;
}

// x without its low 'shift' bits (1..31), rounded to nearest even.
fn roundShift(x: u32, shift: u32) -> u32 {
  let keep = x >> shift;
  let rest = x & ((1u << shift) - 1u);
  let half = 1u << (shift - 1u);
  return keep + select(0u, 1u, rest > half || (rest == half && (keep & 1u) == 1u));
}

// An int32 (two's complement) to float32 bits, to nearest even.
fn intToF32(v: u32) -> u32 {
  if (v == 0u) { return 0u; }
  let sign = v & 0x80000000u;
  let mag = select(v, 0u - v, sign != 0u);
  let msb = 31u - countLeadingZeros(mag);
  if (msb <= 23u) { return sign | ((msb + 127u) << 23u) | ((mag << (23u - msb)) & 0x7fffffu); }
  // The carry of a rounding that overflows the mantissa lands in the exponent.
  return sign | (((msb + 127u) << 23u) + (roundShift(mag, msb - 23u) - 0x800000u));
}

fn f32ToHalf(b: u32) -> u32 {
  let sign = (b >> 16u) & 0x8000u;
  let e = i32((b >> 23u) & 0xffu);
  let m = b & 0x7fffffu;
  if (e == 255) { return sign | 0x7c00u; }
  let ex = e - 127;
  if (ex > 15) { return sign | 0x7c00u; }
  if (ex >= -14) {
    // Normal: the carry may reach the exponent, up to infinity (0x7c00).
    return sign | (roundShift((u32(ex + 15) << 23u) | m, 13u) & 0x7fffu);
  }
  if (e == 0) { return sign; }
  // Subnormal half: units of 2^-24, the value (m | 2^23) 2^(ex - 23) shifted right.
  let s = u32(-ex - 1);
  if (s > 24u) { return sign; }
  return sign | roundShift(m | 0x800000u, s);
}

// (NaN never reaches here nor f32ToHalf: convert() writes it first.)
fn f32ToBf16(b: u32) -> u32 {
  return ((b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u) & 0xffffu;
}

// Float32 bits toward zero, wrapped to 32 bits; NaN and infinities give 0.
fn f32ToInt(b: u32) -> u32 {
  let e = i32((b >> 23u) & 0xffu) - 127;
  if (e < 0 || e == 128) { return 0u; }
  let m = (b & 0x7fffffu) | 0x800000u;
  var mag = 0u;
  if (e <= 23) { mag = m >> u32(23 - e); } else if (e - 23 < 32) { mag = m << u32(e - 23); }
  return select(mag, 0u - mag, (b & 0x80000000u) != 0u);
}

// An int value as the host reads it: int8 sign-extended, bool 0 or 1.
fn intValue(raw: u32, kind: u32) -> u32 {
  if (kind == 5u) { return u32((i32(raw) << 24u) >> 24u); }
  if (kind == 6u) { return select(0u, 1u, raw != 0u); }
  return raw;
}

fn convert(raw: u32, kin: u32, kout: u32) -> u32 {
  if (kout == 6u) {
    if (isFloat(kin)) { return select(0u, 1u, (toF32Bits(raw, kin) & 0x7fffffffu) != 0u); }
    return select(0u, 1u, raw != 0u);
  }
  if (isFloat(kout)) {
    let b = select(intToF32(intValue(raw, kin)), toF32Bits(raw, kin), isFloat(kin));
    // NaN as the host writes it: the quiet NaN without sign or payload.
    if ((b & 0x7fffffffu) > 0x7f800000u) { return select(select(0x7fc0u, 0x7e00u, kout == 1u), 0x7fc00000u, kout == 0u); }
    if (kout == 1u) { return f32ToHalf(b); }
    if (kout == 2u) { return f32ToBf16(b); }
    return b;
  }
  let v = select(intValue(raw, kin), f32ToInt(toF32Bits(raw, kin)), isFloat(kin));
  if (kout == 3u) { return v; }
  return v & 0xffu;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = gid.x + gid.y * nw.x * 64u;
  if (w >= prm[0]) { return; }
  let bytesOut = prm[5];
  let per = 4u / bytesOut;
  var word = 0u;
  for (var k = 0u; k < per; k++) {
    let i = w * per + k;
    if (i >= prm[1]) { break; }
    let v = convert(load(source(i), prm[3]), prm[2], prm[4]);
    word = word | (v << (k * bytesOut * 8u));
  }
  dst[w] = word;
}`;
