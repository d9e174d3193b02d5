// qnnpack: quantized linear and conv2d (uint8 activations, int8 weights, exact int32 sums)
// in WASM SIMD128, requantized to uint8 with the core's float32 formula. A convolution is
// the same product over im2col rows (qim2col writes them already widened).
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
//   output:         uint8, element (i, c) at y + i * ldy + c * cs (linear: ldy = n, cs = 1;
//                   a convolution's NCHW planes: ldy = 1, cs = the plane's size).
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

/** Writes the 4 sums of a tile row (channels nb..nb+3, those < n; channel stride cs) requantized. */
// @ts-ignore: decorator
@inline function storeRow(
  y: usize, cs: usize, n: i32, nb: i32, a0: v128, a1: v128, a2: v128, a3: v128,
  mult: usize, bias: usize, inv: f32, zp: i32,
): void {
  const at = y + <usize>nb * cs;
  store<u8>(at, requant(hsum(a0), nb, mult, bias, inv, zp));
  if (nb + 1 < n) store<u8>(at + cs, requant(hsum(a1), nb + 1, mult, bias, inv, zp));
  if (nb + 2 < n) store<u8>(at + 2 * cs, requant(hsum(a2), nb + 2, mult, bias, inv, zp));
  if (nb + 3 < n) store<u8>(at + 3 * cs, requant(hsum(a3), nb + 3, mult, bias, inv, zp));
}

/**
 * Rows [start, start + count) of the output: 2 x 4 tiles (8 i32x4 accumulators, 2 x and
 * 4 w vectors per 8 k: 14 of the 15 vector registers V8 keeps), a 1 x 4 tile for an odd
 * last row.
 */
export function qlinear(
  xp: usize, wp: usize, m: i32, n: i32, k8: i32, mult: usize, bias: usize, inv: f32, zp: i32,
  y: usize, ldy: i32, cs: i32, start: i32, count: i32,
): void {
  const ys = <usize>ldy;
  const csz = <usize>cs;
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
      storeRow(y + <usize>i * ys, csz, n, nb, c00, c01, c02, c03, mult, bias, inv, zp);
      storeRow(y + <usize>(i + 1) * ys, csz, n, nb, c10, c11, c12, c13, mult, bias, inv, zp);
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
      storeRow(y + <usize>i * ys, csz, n, nb, c00, c01, c02, c03, mult, bias, inv, zp);
      w += blockW;
    }
  }
}

/**
 * im2col rows [start, start + count) of one image and one group, widened: row i is output
 * position (i / ow, i % ow), its k = c * kh * kw entries (channel, then kernel row, then
 * column) x - x_zp, 0 where the window reaches into the padding, then zeros up to k8. x
 * points at the group's first channel (c planes of h x w uint8).
 */
export function qim2col(
  x: usize, c: i32, h: i32, w: i32, kh: i32, kw: i32, sh: i32, sw: i32, ph: i32, pw: i32,
  dh: i32, dw: i32, ow: i32, xzp: i32, dst: usize, start: i32, count: i32,
): void {
  const k = c * kh * kw;
  const k8 = ((k + 7) >> 3) << 3;
  const plane = <usize>h * <usize>w;
  for (let i = start; i < start + count; i++) {
    const oy = i / ow;
    const ox = i - oy * ow;
    let d = dst + ((<usize>i * <usize>k8) << 1);
    for (let ci = 0; ci < c; ci++) {
      const src = x + <usize>ci * plane;
      for (let ky = 0; ky < kh; ky++) {
        const iy = oy * sh - ph + ky * dh;
        const rowIn = iy >= 0 && iy < h;
        const row = src + <usize>iy * <usize>w;
        for (let kx = 0; kx < kw; kx++) {
          const ix = ox * sw - pw + kx * dw;
          const v: i32 = rowIn && ix >= 0 && ix < w ? <i32>load<u8>(row + <usize>ix) - xzp : 0;
          store<i16>(d, <i16>v);
          d += 2;
        }
      }
    }
    for (let t = k; t < k8; t++) {
      store<i16>(d, 0);
      d += 2;
    }
  }
}
