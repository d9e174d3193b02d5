// qnnpack: quantized linear and conv2d (uint8 activations, int8 weights, exact int32 sums)
// in WASM SIMD128, requantized to uint8 with the core's float32 formula.
//
// Both operands are widened to int16 with their zero points subtracted ((x - x_zp) and
// (w - w_zp) lie in [-255, 255]), so i32x4.dot_i16x8_s sums pairs of products of at most
// 65025 each: exact, never saturating, on every engine (unlike u8 x s8 pair sums in int16).
// K is padded to a multiple of 8 with zeros.
//
// Layouts (byte offsets into the imported memory):
//   packed weights: for each block of 4 output channels, for each 8 k: 4 rows x 8 int16
//                   (64 bytes); channels past n are zero.
//   packed x:       m rows of k8 int16.
//   output:         m rows of n uint8.
//
// Requantization, per output (m, c), all in float32 (bit-identical to the core's
// requantizeLinear in TypeScript):
//   v = f32(acc) * mult[c]; v = v + bias[c]; q = zp + nearest(v * inv); clamp to [0, 255]

/** Bytes of the packed weights for n outputs and k inputs. */
export function qpack_w_bytes(n: i32, k: i32): i32 {
  return ((n + 3) >> 2) * (((k + 7) >> 3) << 3) * 4 * 2;
}

/** Packs int8 weights w (n x k, row-major) minus their zero points (i32 per channel). */
export function qpack_w(w: usize, n: i32, k: i32, wzp: usize, dst: usize): void {
  const k8 = ((k + 7) >> 3) << 3;
  let d = dst;
  for (let nb = 0; nb < n; nb += 4) {
    for (let kb = 0; kb < k8; kb += 8) {
      for (let r = 0; r < 4; r++) {
        const c = nb + r;
        for (let t = 0; t < 8; t++) {
          const kk = kb + t;
          let v: i32 = 0;
          if (c < n && kk < k)
            v = <i32>load<i8>(w + <usize>c * <usize>k + <usize>kk) - load<i32>(wzp + (<usize>c << 2));
          store<i16>(d, <i16>v);
          d += 2;
        }
      }
    }
  }
}

/** Widens uint8 rows x (m x k) minus the zero point into int16 rows of k8 (zero padded). */
export function qpack_x(x: usize, m: i32, k: i32, xzp: i32, dst: usize, start: i32, count: i32): void {
  const k8 = ((k + 7) >> 3) << 3;
  const zp = i16x8.splat(<i16>xzp);
  for (let i = start; i < start + count; i++) {
    const src = x + <usize>i * <usize>k;
    const row = dst + ((<usize>i * <usize>k8) << 1);
    let t = 0;
    for (; t + 8 <= k; t += 8) {
      const v = v128.load64_zero(src + <usize>t);
      v128.store(row + (<usize>t << 1), i16x8.sub(i16x8.extend_low_i8x16_u(v), zp));
    }
    for (; t < k8; t++) {
      const v: i32 = t < k ? <i32>load<u8>(src + <usize>t) - xzp : 0;
      store<i16>(row + (<usize>t << 1), <i16>v);
    }
  }
}

// @ts-ignore: decorator
@inline function hsum(v: v128): i32 {
  return i32x4.extract_lane(v, 0) + i32x4.extract_lane(v, 1) + i32x4.extract_lane(v, 2) + i32x4.extract_lane(v, 3);
}

// @ts-ignore: decorator
@inline function requant(acc: i32, c: i32, mult: usize, bias: usize, inv: f32, zp: i32): u8 {
  let v = <f32>acc * load<f32>(mult + (<usize>c << 2));
  if (bias != 0) v = v + load<f32>(bias + (<usize>c << 2));
  // Clamped as a float first: NaN and values past the range never reach the conversion
  // (the same results as the core's TypeScript: NaN gives 0).
  const q = nearest<f32>(v * inv) + <f32>zp;
  if (!(q >= 0)) return 0;
  if (q >= 255) return 255;
  return <u8><i32>q;
}

/** Writes the 4 sums of a tile row (channels nb..nb+3, those < n) requantized. */
// @ts-ignore: decorator
@inline function storeRow(
  y: usize, n: i32, nb: i32, a0: v128, a1: v128, a2: v128, a3: v128,
  mult: usize, bias: usize, inv: f32, zp: i32,
): void {
  store<u8>(y + <usize>nb, requant(hsum(a0), nb, mult, bias, inv, zp));
  if (nb + 1 < n) store<u8>(y + <usize>(nb + 1), requant(hsum(a1), nb + 1, mult, bias, inv, zp));
  if (nb + 2 < n) store<u8>(y + <usize>(nb + 2), requant(hsum(a2), nb + 2, mult, bias, inv, zp));
  if (nb + 3 < n) store<u8>(y + <usize>(nb + 3), requant(hsum(a3), nb + 3, mult, bias, inv, zp));
}

/**
 * Rows [start, start + count) of the output: 2 x 4 tiles (8 i32x4 accumulators, 2 x and
 * 4 w vectors per 8 k: 14 of the 15 vector registers V8 keeps), a 1 x 4 tile for an odd
 * last row.
 */
export function qlinear(
  xp: usize, wp: usize, m: i32, n: i32, k8: i32, mult: usize, bias: usize, inv: f32, zp: i32,
  y: usize, start: i32, count: i32,
): void {
  const rowX = <usize>k8 << 1;
  const blockW = <usize>k8 << 3; // 4 rows x k8 int16
  const end = start + count;
  let i = start;
  for (; i + 2 <= end; i += 2) {
    const x0 = xp + <usize>i * rowX;
    const x1 = x0 + rowX;
    let w = wp;
    for (let nb = 0; nb < n; nb += 4) {
      let c00 = i32x4.splat(0); let c01 = i32x4.splat(0); let c02 = i32x4.splat(0); let c03 = i32x4.splat(0);
      let c10 = i32x4.splat(0); let c11 = i32x4.splat(0); let c12 = i32x4.splat(0); let c13 = i32x4.splat(0);
      let pw = w;
      for (let t: usize = 0; t < rowX; t += 16) {
        const a = v128.load(x0 + t);
        const b = v128.load(x1 + t);
        const w0 = v128.load(pw);
        const w1 = v128.load(pw, 16);
        const w2 = v128.load(pw, 32);
        const w3 = v128.load(pw, 48);
        c00 = i32x4.add(c00, i32x4.dot_i16x8_s(a, w0));
        c01 = i32x4.add(c01, i32x4.dot_i16x8_s(a, w1));
        c02 = i32x4.add(c02, i32x4.dot_i16x8_s(a, w2));
        c03 = i32x4.add(c03, i32x4.dot_i16x8_s(a, w3));
        c10 = i32x4.add(c10, i32x4.dot_i16x8_s(b, w0));
        c11 = i32x4.add(c11, i32x4.dot_i16x8_s(b, w1));
        c12 = i32x4.add(c12, i32x4.dot_i16x8_s(b, w2));
        c13 = i32x4.add(c13, i32x4.dot_i16x8_s(b, w3));
        pw += 64;
      }
      storeRow(y + <usize>i * <usize>n, n, nb, c00, c01, c02, c03, mult, bias, inv, zp);
      storeRow(y + <usize>(i + 1) * <usize>n, n, nb, c10, c11, c12, c13, mult, bias, inv, zp);
      w += blockW;
    }
  }
  if (i < end) {
    const x0 = xp + <usize>i * rowX;
    let w = wp;
    for (let nb = 0; nb < n; nb += 4) {
      let c00 = i32x4.splat(0); let c01 = i32x4.splat(0); let c02 = i32x4.splat(0); let c03 = i32x4.splat(0);
      let pw = w;
      for (let t: usize = 0; t < rowX; t += 16) {
        const a = v128.load(x0 + t);
        c00 = i32x4.add(c00, i32x4.dot_i16x8_s(a, v128.load(pw)));
        c01 = i32x4.add(c01, i32x4.dot_i16x8_s(a, v128.load(pw, 16)));
        c02 = i32x4.add(c02, i32x4.dot_i16x8_s(a, v128.load(pw, 32)));
        c03 = i32x4.add(c03, i32x4.dot_i16x8_s(a, v128.load(pw, 48)));
        pw += 64;
      }
      storeRow(y + <usize>i * <usize>n, n, nb, c00, c01, c02, c03, mult, bias, inv, zp);
      w += blockW;
    }
  }
}

// ------------------------------------------------------------------ depthwise convolution
//
// One channel at a time (groups = channels, one output channel each): the channel's plane
// is widened into a zero-bordered buffer ((x - x_zp) inside, 0 in the padding, so the
// taps need no bounds checks), then 8 outputs of a row at once: per tap one vector of 8
// inputs (strided lanes gathered for stride 2 and up) times the tap's weight, widened to
// i32 (i32x4.extmul_*_i16x8_s: exact), and the requantization in f32x4 with the same
// roundings as requant() (convert, multiply, add, multiply, nearest; the saturating
// narrows are the clamp).

/** Bytes of qdwconv's per-thread buffer: (h + 2 ph) rows of wpad int16. */
export function qdw_buffer_bytes(h: i32, ph: i32, wpad: i32): i32 {
  return (h + 2 * ph) * wpad * 2 + 16;
}

// @ts-ignore: decorator
@inline function tapVector(at: usize, sw: i32): v128 {
  if (sw == 1) return v128.load(at);
  if (sw == 2)
    return i8x16.shuffle(v128.load(at), v128.load(at, 16),
      0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29);
  const s = <usize>sw << 1;
  let v = i16x8.splat(load<i16>(at));
  v = i16x8.replace_lane(v, 1, load<i16>(at + s));
  v = i16x8.replace_lane(v, 2, load<i16>(at + 2 * s));
  v = i16x8.replace_lane(v, 3, load<i16>(at + 3 * s));
  v = i16x8.replace_lane(v, 4, load<i16>(at + 4 * s));
  v = i16x8.replace_lane(v, 5, load<i16>(at + 5 * s));
  v = i16x8.replace_lane(v, 6, load<i16>(at + 6 * s));
  return i16x8.replace_lane(v, 7, load<i16>(at + 7 * s));
}

/**
 * 8 sums (lo, hi) requantized to uint8, in the low 8 bytes, for a channel whose multiplier,
 * bias and inverse scale are finite (the values are then never NaN); zp is the output zero
 * point in each 16-bit lane. The zero point is added after narrowing to 16 bits, with
 * saturation, so a value past the int32 range stays at its end (255 or 0), as in requant().
 */
// @ts-ignore: decorator
@inline function requant8(lo: v128, hi: v128, m: v128, b: v128, inv: v128, zp: v128): v128 {
  const a = f32x4.add(f32x4.mul(f32x4.convert_i32x4_s(lo), m), b);
  const c = f32x4.add(f32x4.mul(f32x4.convert_i32x4_s(hi), m), b);
  const qa = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(a, inv)));
  const qc = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(c, inv)));
  const h = i16x8.add_sat_s(i16x8.narrow_i32x4_s(qa, qc), zp);
  return i8x16.narrow_i16x8_u(h, h);
}

/** Adds tap vector v times weight w to the 8 sums (lo, hi). */
// @ts-ignore: decorator
@inline function mac8(lo: v128, hi: v128, v: v128, w: v128, high: bool): v128 {
  return high ? i32x4.add(hi, i32x4.extmul_high_i16x8_s(v, w)) : i32x4.add(lo, i32x4.extmul_low_i16x8_s(v, w));
}

/**
 * One channel of a 3 x 3 depthwise layer (the common one): the nine weights splatted once
 * per channel instead of once per 8 outputs.
 */
function dw3x3(
  buf: usize, rowBytes: usize, sh: i32, sw: i32, dh: i32, dw: i32, oh: i32, ow: i32, wc: usize,
  m: v128, b: v128, vi: v128, vz: v128, out: usize, tail: usize,
): void {
  const w0 = i16x8.splat(load<i16>(wc)); const w1 = i16x8.splat(load<i16>(wc, 2));
  const w2 = i16x8.splat(load<i16>(wc, 4)); const w3 = i16x8.splat(load<i16>(wc, 6));
  const w4 = i16x8.splat(load<i16>(wc, 8)); const w5 = i16x8.splat(load<i16>(wc, 10));
  const w6 = i16x8.splat(load<i16>(wc, 12)); const w7 = i16x8.splat(load<i16>(wc, 14));
  const w8 = i16x8.splat(load<i16>(wc, 16));
  const d1 = <usize>dw << 1;
  const d2 = <usize>(2 * dw) << 1;
  for (let oy = 0; oy < oh; oy++) {
    const r0 = buf + <usize>(oy * sh) * rowBytes;
    const r1 = r0 + <usize>dh * rowBytes;
    const r2 = r1 + <usize>dh * rowBytes;
    for (let ox = 0; ox < ow; ox += 8) {
      const o = <usize>(ox * sw) << 1;
      let lo = i32x4.splat(0);
      let hi = i32x4.splat(0);
      let v = tapVector(r0 + o, sw); lo = mac8(lo, hi, v, w0, false); hi = mac8(lo, hi, v, w0, true);
      v = tapVector(r0 + o + d1, sw); lo = mac8(lo, hi, v, w1, false); hi = mac8(lo, hi, v, w1, true);
      v = tapVector(r0 + o + d2, sw); lo = mac8(lo, hi, v, w2, false); hi = mac8(lo, hi, v, w2, true);
      v = tapVector(r1 + o, sw); lo = mac8(lo, hi, v, w3, false); hi = mac8(lo, hi, v, w3, true);
      v = tapVector(r1 + o + d1, sw); lo = mac8(lo, hi, v, w4, false); hi = mac8(lo, hi, v, w4, true);
      v = tapVector(r1 + o + d2, sw); lo = mac8(lo, hi, v, w5, false); hi = mac8(lo, hi, v, w5, true);
      v = tapVector(r2 + o, sw); lo = mac8(lo, hi, v, w6, false); hi = mac8(lo, hi, v, w6, true);
      v = tapVector(r2 + o + d1, sw); lo = mac8(lo, hi, v, w7, false); hi = mac8(lo, hi, v, w7, true);
      v = tapVector(r2 + o + d2, sw); lo = mac8(lo, hi, v, w8, false); hi = mac8(lo, hi, v, w8, true);
      const q = requant8(lo, hi, m, b, vi, vz);
      const at = out + <usize>oy * <usize>ow + <usize>ox;
      if (ox + 8 <= ow) v128.store64_lane(at, q, 0);
      else {
        v128.store64_lane(tail, q, 0);
        memory.copy(at, tail, <usize>(ow - ox));
      }
    }
  }
}

/** Copies channel plane `src` (h x w uint8) minus x_zp into buf at (ph, pw), zeros around. */
function widenPlane(src: usize, h: i32, w: i32, ph: i32, pw: i32, wpad: i32, xzp: i32, buf: usize): void {
  const rowBytes = <usize>wpad << 1;
  // Zeros only where the plane does not land: the padding rows, and each row's margins.
  memory.fill(buf, 0, <usize>ph * rowBytes);
  memory.fill(buf + <usize>(h + ph) * rowBytes, 0, <usize>ph * rowBytes);
  const right = (<usize>(pw + w) << 1);
  const zpv = i16x8.splat(<i16>xzp);
  for (let r = 0; r < h; r++) {
    const s = src + <usize>r * <usize>w;
    const line = buf + <usize>(r + ph) * rowBytes;
    memory.fill(line, 0, <usize>pw << 1);
    memory.fill(line + right, 0, rowBytes - right);
    const d = line + (<usize>pw << 1);
    let t = 0;
    for (; t + 8 <= w; t += 8)
      v128.store(d + (<usize>t << 1), i16x8.sub(i16x8.extend_low_i8x16_u(v128.load64_zero(s + <usize>t)), zpv));
    for (; t < w; t++) store<i16>(d + (<usize>t << 1), <i16>(<i32>load<u8>(s + <usize>t) - xzp));
  }
}

/** One depthwise channel, output by output, requantized by requant(). */
function dwScalar(
  buf: usize, rowBytes: usize, kh: i32, kw: i32, sh: i32, sw: i32, dh: i32, dw: i32, oh: i32,
  ow: i32, wc: usize, c: i32, mult: usize, bias: usize, inv: f32, zp: i32, out: usize,
): void {
  for (let oy = 0; oy < oh; oy++) {
    for (let ox = 0; ox < ow; ox++) {
      let acc = 0;
      for (let ky = 0; ky < kh; ky++) {
        const row = buf + <usize>(oy * sh + ky * dh) * rowBytes;
        for (let kx = 0; kx < kw; kx++)
          acc += <i32>load<i16>(row + (<usize>(ox * sw + kx * dw) << 1)) *
            <i32>load<i16>(wc + (<usize>(ky * kw + kx) << 1));
      }
      store<u8>(out + <usize>oy * <usize>ow + <usize>ox, requant(acc, c, mult, bias, inv, zp));
    }
  }
}

/**
 * Depthwise channels [start, start + count) of one image: x and y point at the image's
 * first plane; wq holds kh x kw int16 taps per channel (w - w_zp); buf is the thread's
 * buffer (qdw_buffer_bytes), wpad its row length (room for 8 outputs past the last).
 */
export function qdwconv(
  x: usize, h: i32, w: i32, kh: i32, kw: i32, sh: i32, sw: i32, ph: i32, pw: i32, dh: i32,
  dw: i32, oh: i32, ow: i32, wpad: i32, xzp: i32, wq: usize, mult: usize, bias: usize,
  inv: f32, zp: i32, y: usize, buf: usize, start: i32, count: i32,
): void {
  const rowBytes = <usize>wpad << 1;
  const taps = kh * kw;
  const tail = buf + <usize>(h + 2 * ph) * rowBytes; // 16 bytes for a row's last outputs
  const vi = f32x4.splat(inv);
  const vz = i16x8.splat(<i16>zp);
  for (let c = start; c < start + count; c++) {
    widenPlane(x + <usize>c * <usize>h * <usize>w, h, w, ph, pw, wpad, xzp, buf);
    const wc = wq + ((<usize>c * <usize>taps) << 1);
    const m = f32x4.splat(load<f32>(mult + (<usize>c << 2)));
    const b = f32x4.splat(bias != 0 ? load<f32>(bias + (<usize>c << 2)) : 0);
    const out = y + <usize>c * <usize>oh * <usize>ow;
    const finite = isFinite<f32>(f32x4.extract_lane(m, 0)) && isFinite<f32>(f32x4.extract_lane(b, 0)) &&
      isFinite<f32>(inv);
    if (!finite) {
      // A NaN or infinite multiplier, bias or scale (NaN sums are possible): one output at
      // a time through requant(), the reference's roundings; requant8 assumes finite values.
      dwScalar(buf, rowBytes, kh, kw, sh, sw, dh, dw, oh, ow, wc, c, mult, bias, inv, zp, out);
      continue;
    }
    if (kh == 3 && kw == 3) {
      dw3x3(buf, rowBytes, sh, sw, dh, dw, oh, ow, wc, m, b, vi, vz, out, tail);
      continue;
    }
    for (let oy = 0; oy < oh; oy++) {
      for (let ox = 0; ox < ow; ox += 8) {
        let lo = i32x4.splat(0);
        let hi = i32x4.splat(0);
        for (let ky = 0; ky < kh; ky++) {
          const row = buf + <usize>(oy * sh + ky * dh) * rowBytes;
          for (let kx = 0; kx < kw; kx++) {
            const v = tapVector(row + (<usize>(ox * sw + kx * dw) << 1), sw);
            const wv = i16x8.splat(load<i16>(wc + (<usize>(ky * kw + kx) << 1)));
            lo = i32x4.add(lo, i32x4.extmul_low_i16x8_s(v, wv));
            hi = i32x4.add(hi, i32x4.extmul_high_i16x8_s(v, wv));
          }
        }
        const q = requant8(lo, hi, m, b, vi, vz);
        const at = out + <usize>oy * <usize>ow + <usize>ox;
        if (ox + 8 <= ow) v128.store64_lane(at, q, 0);
        else {
          v128.store64_lane(tail, q, 0);
          memory.copy(at, tail, <usize>(ow - ox));
        }
      }
    }
  }
}

// ------------------------------------------------------------------ convolution as W · cols
//
// Per image and group: out[c][p] = Σ_k W[c][k] · col[k][p], where col is the im2col of
// (x - x_zp) laid out [K, P] (one row of the P output positions per k = (channel, kernel
// row, kernel column)): for NCHW input each row is made of shifted runs of input rows, so
// it is built with vector loads. Pairs of k are interleaved for i32x4.dot_i16x8_s: pair
// row kp holds, per position p, (col[2kp][p], col[2kp+1][p]) as two int16; rows are P
// rounded up to 8 positions (zeros past P), K is rounded up to pairs with a zero row.
// The weights pack the same pairs: per block of 4 output channels and pair kp, 4 int32
// (two int16 each), so one load32_splat gives a channel's pair for 4 positions.

/** Bytes of the column pairs for k inputs and p positions. */
export function qcols_bytes(k: i32, p: i32): i32 {
  return ((k + 1) >> 1) * (((p + 7) >> 3) << 3) * 4;
}

/** Bytes of the weight pairs for n outputs and k inputs. */
export function qwpairs_bytes(n: i32, k: i32): i32 {
  return ((n + 3) >> 2) * ((k + 1) >> 1) * 16;
}

/** Packs int8 weights w (n x k, row-major) minus their zero points (i32 per channel) in pairs. */
export function qpack_wpairs(w: usize, n: i32, k: i32, wzp: usize, dst: usize): void {
  const k2 = (k + 1) >> 1;
  let d = dst;
  for (let nb = 0; nb < n; nb += 4) {
    for (let kp = 0; kp < k2; kp++) {
      for (let r = 0; r < 4; r++) {
        const c = nb + r;
        for (let t = 0; t < 2; t++) {
          const kk = 2 * kp + t;
          let v: i32 = 0;
          if (c < n && kk < k)
            v = <i32>load<i8>(w + <usize>c * <usize>k + <usize>kk) - load<i32>(wzp + (<usize>c << 2));
          store<i16>(d, <i16>v);
          d += 2;
        }
      }
    }
  }
}

/**
 * Writes im2col row k for output rows [oy0, oy0 + rows) (rows * ow int16: x - x_zp, 0 in
 * the padding) at dst.
 */
function colRow(
  x: usize, h: i32, w: i32, kh: i32, kw: i32, sh: i32, sw: i32, ph: i32, pw: i32, dh: i32,
  dw: i32, oy0: i32, rows: i32, ow: i32, xzp: i32, k: i32, dst: usize,
): void {
  const taps = kh * kw;
  const ci = k / taps;
  const ky = (k - ci * taps) / kw;
  const kx = k - ci * taps - ky * kw;
  const off = kx * dw - pw; // ix = ox * sw + off
  // Output columns whose input column is inside the image: [lo, hi).
  let lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
  let hi = w - 1 - off < 0 ? 0 : (w - 1 - off) / sw + 1;
  if (hi > ow) hi = ow;
  if (lo > hi) lo = hi;
  const zpv = i16x8.splat(<i16>xzp);
  for (let oy = oy0; oy < oy0 + rows; oy++) {
    const d = dst + ((<usize>(oy - oy0) * <usize>ow) << 1);
    const iy = oy * sh - ph + ky * dh;
    if (iy < 0 || iy >= h) {
      memory.fill(d, 0, <usize>ow << 1);
      continue;
    }
    const src = x + (<usize>ci * <usize>h + <usize>iy) * <usize>w;
    memory.fill(d, 0, <usize>lo << 1);
    let ox = lo;
    if (sw == 1) {
      for (; ox + 8 <= hi; ox += 8) {
        const v = v128.load64_zero(src + <usize>(ox + off));
        v128.store(d + (<usize>ox << 1), i16x8.sub(i16x8.extend_low_i8x16_u(v), zpv));
      }
    }
    for (; ox < hi; ox++)
      store<i16>(d + (<usize>ox << 1), <i16>(<i32>load<u8>(src + <usize>(ox * sw + off)) - xzp));
    memory.fill(d + (<usize>hi << 1), 0, <usize>(ow - hi) << 1);
  }
}

/**
 * Pair rows [start, start + count) of one image's group (x at its first channel), for the
 * output rows [oy0, oy0 + rows): two im2col rows into the thread's buffer (2 x P8 int16),
 * interleaved into dst.
 */
export function qcol_pairs(
  x: usize, h: i32, w: i32, kh: i32, kw: i32, sh: i32, sw: i32, ph: i32, pw: i32, dh: i32,
  dw: i32, oy0: i32, rows: i32, ow: i32, xzp: i32, k: i32, dst: usize, buf: usize,
  start: i32, count: i32,
): void {
  const p = rows * ow;
  const p8 = ((p + 7) >> 3) << 3;
  const rowA = buf;
  const rowB = buf + (<usize>p8 << 1);
  for (let kp = start; kp < start + count; kp++) {
    colRow(x, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oy0, rows, ow, xzp, 2 * kp, rowA);
    if (2 * kp + 1 < k)
      colRow(x, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oy0, rows, ow, xzp, 2 * kp + 1, rowB);
    else memory.fill(rowB, 0, <usize>p << 1);
    memory.fill(rowA + (<usize>p << 1), 0, <usize>(p8 - p) << 1);
    memory.fill(rowB + (<usize>p << 1), 0, <usize>(p8 - p) << 1);
    const out = dst + ((<usize>kp * <usize>p8) << 2);
    for (let q = 0; q < p8; q += 8) {
      const a = v128.load(rowA + (<usize>q << 1));
      const b = v128.load(rowB + (<usize>q << 1));
      const o = out + (<usize>q << 2);
      v128.store(o, i8x16.shuffle(a, b, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23));
      v128.store(o, i8x16.shuffle(a, b, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31), 16);
    }
  }
}

/** 4 sums of one channel requantized (the same roundings as requant()), in the low 4 bytes. */
// @ts-ignore: decorator
@inline function requant4(acc: v128, m: v128, b: v128, hasBias: bool, inv: v128, zp: v128): v128 {
  let v = f32x4.mul(f32x4.convert_i32x4_s(acc), m);
  if (hasBias) v = f32x4.add(v, b);
  let q = f32x4.add(f32x4.nearest(f32x4.mul(v, inv)), zp);
  q = f32x4.pmin(f32x4.splat(255), f32x4.pmax(f32x4.splat(0), q));
  const t = i32x4.trunc_sat_f32x4_s(q);
  return i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(t, t), i16x8.splat(0));
}

/** Stores the first n (< 4) bytes of q at y. */
function storePartial(y: usize, q: v128, n: i32): void {
  if (n > 0) store<u8>(y, <u8>i8x16.extract_lane_u(q, 0));
  if (n > 1) store<u8>(y + 1, <u8>i8x16.extract_lane_u(q, 1));
  if (n > 2) store<u8>(y + 2, <u8>i8x16.extract_lane_u(q, 2));
}

/**
 * Channel c's 8 sums (a: positions p0..p0+3, b: p0+4..p0+7, of p) requantized into its
 * plane (planes `ldy` bytes apart).
 */
// @ts-ignore: decorator
@inline function storeChannel(
  y: usize, ldy: i32, c: i32, p: i32, p0: i32, a: v128, b: v128, mult: usize, bias: usize,
  inv: v128, zp: v128,
): void {
  const m = f32x4.splat(load<f32>(mult + (<usize>c << 2)));
  const bv = f32x4.splat(bias != 0 ? load<f32>(bias + (<usize>c << 2)) : 0);
  const row = y + <usize>c * <usize>ldy + <usize>p0;
  const qa = requant4(a, m, bv, bias != 0, inv, zp);
  const qb = requant4(b, m, bv, bias != 0, inv, zp);
  if (p0 + 8 <= p) {
    v128.store32_lane(row, qa, 0);
    v128.store32_lane(row + 4, qb, 0);
  } else if (p0 + 4 <= p) {
    v128.store32_lane(row, qa, 0);
    storePartial(row + 4, qb, p - p0 - 4);
  } else storePartial(row, qa, p - p0);
}

/**
 * Position blocks [start, start + count) (8 positions each, of the p in cols) of out =
 * W · cols for n channels (channel c's p bytes at y + c * ldy): per block, every 4-channel
 * block over all k2 pairs (the block's columns stay in L1), 4 x 8 tiles (8 i32x4 sums, 2
 * column and 4 weight vectors: 14 of the 15 registers V8 keeps).
 */
export function qconv_gemm(
  wp: usize, cols: usize, n: i32, k2: i32, p: i32, mult: usize, bias: usize, inv: f32, zp: i32,
  y: usize, ldy: i32, start: i32, count: i32,
): void {
  const p8 = ((p + 7) >> 3) << 3;
  const rowBytes = <usize>p8 << 2;
  const vinv = f32x4.splat(inv);
  const vzp = f32x4.splat(<f32>zp);
  for (let blk = start; blk < start + count; blk++) {
    const p0 = blk << 3;
    const colBase = cols + (<usize>p0 << 2);
    let w = wp;
    for (let nb = 0; nb < n; nb += 4) {
      let c00 = i32x4.splat(0); let c01 = i32x4.splat(0);
      let c10 = i32x4.splat(0); let c11 = i32x4.splat(0);
      let c20 = i32x4.splat(0); let c21 = i32x4.splat(0);
      let c30 = i32x4.splat(0); let c31 = i32x4.splat(0);
      let col = colBase;
      for (let kp = 0; kp < k2; kp++) {
        const a = v128.load(col);
        const b = v128.load(col, 16);
        const w0 = v128.load32_splat(w);
        const w1 = v128.load32_splat(w, 4);
        const w2 = v128.load32_splat(w, 8);
        const w3 = v128.load32_splat(w, 12);
        c00 = i32x4.add(c00, i32x4.dot_i16x8_s(a, w0));
        c01 = i32x4.add(c01, i32x4.dot_i16x8_s(b, w0));
        c10 = i32x4.add(c10, i32x4.dot_i16x8_s(a, w1));
        c11 = i32x4.add(c11, i32x4.dot_i16x8_s(b, w1));
        c20 = i32x4.add(c20, i32x4.dot_i16x8_s(a, w2));
        c21 = i32x4.add(c21, i32x4.dot_i16x8_s(b, w2));
        c30 = i32x4.add(c30, i32x4.dot_i16x8_s(a, w3));
        c31 = i32x4.add(c31, i32x4.dot_i16x8_s(b, w3));
        col += rowBytes;
        w += 16;
      }
      storeChannel(y, ldy, nb, p, p0, c00, c01, mult, bias, vinv, vzp);
      if (nb + 1 < n) storeChannel(y, ldy, nb + 1, p, p0, c10, c11, mult, bias, vinv, vzp);
      if (nb + 2 < n) storeChannel(y, ldy, nb + 2, p, p0, c20, c21, mult, bias, vinv, vzp);
      if (nb + 3 < n) storeChannel(y, ldy, nb + 3, p, p0, c30, c31, mult, bias, vinv, vzp);
    }
  }
}

// ------------------------------------------------------------------ batched linear on qconv_gemm
//
// A linear layer with many rows runs as a 1x1 convolution: positions are x's rows, so the
// column pairs are (x[p][2kp], x[p][2kp+1]) - x_zp, and the output comes out one plane per
// output feature, transposed back into rows.

/** Pair rows [start, start + count) of x (m x k uint8, row-major) minus x_zp, as qcol_pairs lays them out. */
export function qrow_pairs(x: usize, m: i32, k: i32, xzp: i32, dst: usize, start: i32, count: i32): void {
  const m8 = ((m + 7) >> 3) << 3;
  for (let kp = start; kp < start + count; kp++) {
    const row = dst + ((<usize>kp * <usize>m8) << 2);
    const t = 2 * kp;
    const second = t + 1 < k;
    for (let p = 0; p < m; p++) {
      const src = x + <usize>p * <usize>k + <usize>t;
      const a = <i32>load<u8>(src) - xzp;
      const b = second ? <i32>load<u8>(src, 1) - xzp : 0;
      store<u32>(row + (<usize>p << 2), (<u32>(a & 0xffff)) | (<u32>b << 16));
    }
    memory.fill(row + (<usize>m << 2), 0, <usize>(m8 - m) << 2);
  }
}

/** Rows [start, start + count) of dst (m x n uint8) from src's n planes of m: dst[p][c] = src[c][p]. */
export function qtranspose_u8(src: usize, m: i32, n: i32, dst: usize, start: i32, count: i32): void {
  for (let p = start; p < start + count; p++) {
    const d = dst + <usize>p * <usize>n;
    for (let c = 0; c < n; c++) store<u8>(d + <usize>c, load<u8>(src + <usize>c * <usize>m + <usize>p));
  }
}
