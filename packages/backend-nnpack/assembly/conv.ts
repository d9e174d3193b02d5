// The "conv" WASM module of backend-nnpack: the transforms of NNPACK's convolution
// algorithms (Winograd F(6x6,3x3), 8x8 and 16x16 FFT), im2col, depthwise direct
// convolution and bias. The batched elementwise stage of Winograd and FFT (NNPACK's
// "tuple GEMM") is not here: the TypeScript side runs it through the core's matmul, so
// it lands on the fastest GEMM the dispatcher has (native BLAS where loaded).
//
// Conventions (see README.md): memory imported, pointers are byte offsets, no allocation,
// scratch passed in by the caller (`work`, one slice per thread). Every parallel export
// takes (start, count) last: the items [start, start + count) of its work list, so the
// core's parallelFor can split any of them across threads.
//
// Layouts (f32). Channels of a group are padded to Cp = roundUp(Cg, 4) and handled four
// at a time, one channel per SIMD lane ("c4"):
//   packed input P  [n][g][Cp/4][Hp][Wp][4]   zero padding included
//   Winograd        V [64][g][t][Cp],          U [64][g][Cp][Op],       M [64][g][t][Op]
//   FFT (F freqs)   V [F][g][t][2Cp] (re|im),  U [F][g][2Cp][2Op],      M [F][g][t][2Op]
// where t runs over the tiles of every image of the batch (n-major) and
// M = V @ U per transform point: for FFT, U holds [[Ur, Ui], [-Ui, Ur]] so one real GEMM
// is the complex product [Vr | Vi] (Ur + i Ui).

import { fillRow, gather4, storeRow } from "./c4";
export { dw_c4_f32, dw_c4_work_bytes } from "./depthwise";

// ---------------------------------------------------------------------------------- helpers

@inline function imin(a: i32, b: i32): i32 {
  return a < b ? a : b;
}
@inline function imax(a: i32, b: i32): i32 {
  return a > b ? a : b;
}
@inline function zero(): v128 {
  return f32x4.splat(0);
}
@inline function add(a: v128, b: v128): v128 {
  return f32x4.add(a, b);
}
@inline function sub(a: v128, b: v128): v128 {
  return f32x4.sub(a, b);
}
@inline function mul(a: v128, b: v128): v128 {
  return f32x4.mul(a, b);
}
@inline function k4(x: f32): v128 {
  return f32x4.splat(x);
}
@inline function ld(p: usize): v128 {
  return v128.load(p);
}
@inline function st(p: usize, v: v128): void {
  v128.store(p, v);
}

/** Zeroes n bytes (a multiple of 4) without a call: the rows here are short. */
@inline function zeroBytes(p: usize, n: usize): void {
  let i: usize = 0;
  for (; i + 16 <= n; i += 16) v128.store(p + i, zero());
  for (; i < n; i += 4) store<f32>(p + i, 0);
}

/** Copies n bytes (a multiple of 4), forwards, without a call. */
@inline function copyBytes(d: usize, s: usize, n: usize): void {
  let i: usize = 0;
  for (; i + 16 <= n; i += 16) v128.store(d + i, v128.load(s + i));
  for (; i < n; i += 4) store<f32>(d + i, load<f32>(s + i));
}

// cos(2 pi k / 16) and sin(2 pi k / 16), k = 0..7
const COS16: usize = memory.data<f32>([
  1.0, 0.9238795325112867, 0.7071067811865476, 0.38268343236508984, 0.0, -0.38268343236508984,
  -0.7071067811865476, -0.9238795325112867,
]);
const SIN16: usize = memory.data<f32>([
  0.0, 0.38268343236508984, 0.7071067811865476, 0.9238795325112867, 1.0, 0.9238795325112867,
  0.7071067811865476, 0.38268343236508984,
]);
const REV8: usize = memory.data<i32>([0, 4, 2, 6, 1, 5, 3, 7]);
const REV16: usize = memory.data<i32>([0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]);

// ---------------------------------------------------------------------------------- packing

/**
 * Packs the input into c4 layout with the zero padding the tiles need: item
 * (n, g, cb) -> P[item][Hp][Wp][4], packed (r, col) = input (r - padTop, col - padLeft).
 * Items: N * G * (Cp / 4).
 */
export function pack_c4(
  x: usize, dst: usize, C: i32, Cg: i32, CB: i32, G: i32, H: i32, W: i32,
  Hp: i32, Wp: i32, padTop: i32, padLeft: i32, start: i32, count: i32,
): void {
  const plane = <usize>H * <usize>W * 4;
  const rowBytes = <usize>Wp << 4;
  for (let item = start; item < start + count; item++) {
    const cb = item % CB;
    const ng = item / CB;
    const g = ng % G;
    const n = ng / G;
    const ch = cb * 4;
    const lanes = imin(4, Cg - ch);
    const src = x + <usize>(n * C + g * Cg + ch) * plane;
    const d = dst + <usize>item * <usize>Hp * rowBytes;
    for (let r = 0; r < Hp; r++) {
      const iy = r - padTop;
      const drow = d + <usize>r * rowBytes;
      if (iy < 0 || iy >= H) memory.fill(drow, 0, rowBytes);
      else fillRow(drow, src + <usize>iy * <usize>W * 4, plane, lanes, W, padLeft, Wp);
    }
  }
}

/**
 * Writes rows x cols of a tile of four-channel vectors (v128 at tile + (r * tileW + c) * 16,
 * lane l = channel l) to the first `lanes` of four consecutive output planes (plane l at
 * out + l * planeBytes, row stride outW), adding bias bv (one value per lane). Four
 * columns at a time through a 4x4 transpose; the rest one value at a time.
 */
function storeTile(
  tile: usize, tileW: i32, out: usize, planeBytes: usize, outW: i32, rows: i32, cols: i32,
  lanes: i32, bv: v128,
): void {
  for (let r = 0; r < rows; r++)
    storeRow(out + (<usize>(r * outW) << 2), planeBytes, tile + (<usize>(r * tileW) << 4), lanes, cols, bv);
}

/** Bias of output channels o0 .. o0 + lanes - 1 as a vector (0: no bias). */
@inline function biasVector(bias: usize, o: i32, lanes: i32): v128 {
  return bias == 0 ? zero() : gather4(bias + (<usize>o << 2), 4, lanes);
}

// ---------------------------------------------------------------- Winograd F(6x6, 3x3)
// Points 0, +-1, +-2, +-1/2 and infinity (NNPACK's wt8x8). Y = AT [(G g GT) . (BT d B)] A.

/**
 * BT d for 8 values; results to out + i * stride. Written pair by pair so few values are
 * live at once (V8 has 16 SIMD registers; the all-at-once form spilled).
 */
@inline function bt8(
  d0: v128, d1: v128, d2: v128, d3: v128, d4: v128, d5: v128, d6: v128, d7: v128,
  out: usize, stride: usize,
): void {
  st(out, add(sub(d0, d6), mul(sub(d4, d2), k4(5.25))));
  st(out + 7 * stride, add(sub(d7, d1), mul(sub(d3, d5), k4(5.25))));
  const a = sub(add(d2, d6), mul(d4, k4(4.25)));
  const b = sub(add(d1, d5), mul(d3, k4(4.25)));
  st(out + stride, add(a, b));
  st(out + 2 * stride, sub(a, b));
  const c = add(sub(mul(d2, k4(0.25)), mul(d4, k4(1.25))), d6);
  const e = add(sub(mul(d1, k4(0.5)), mul(d3, k4(2.5))), add(d5, d5));
  st(out + 3 * stride, add(c, e));
  st(out + 4 * stride, sub(c, e));
  const f = add(sub(mul(d2, k4(4.0)), mul(d4, k4(5.0))), d6);
  const h = add(sub(add(d1, d1), mul(d3, k4(2.5))), mul(d5, k4(0.5)));
  st(out + 5 * stride, add(f, h));
  st(out + 6 * stride, sub(f, h));
}

/** G g for 3 values; 8 results to out + i * stride. */
@inline function g8(g0: v128, g1: v128, g2: v128, out: usize, stride: usize): void {
  const s02 = add(g0, g2);
  const p = mul(add(s02, g1), k4(-2.0 / 9.0));
  const m = mul(sub(s02, g1), k4(-2.0 / 9.0));
  const q = add(mul(g0, k4(1.0 / 90.0)), mul(g2, k4(2.0 / 45.0)));
  const q1 = mul(g1, k4(1.0 / 45.0));
  const r = add(mul(g0, k4(32.0 / 45.0)), mul(g2, k4(8.0 / 45.0)));
  const r1 = mul(g1, k4(16.0 / 45.0));
  st(out, g0);
  st(out + stride, p);
  st(out + 2 * stride, m);
  st(out + 3 * stride, add(q, q1));
  st(out + 4 * stride, sub(q, q1));
  st(out + 5 * stride, add(r, r1));
  st(out + 6 * stride, sub(r, r1));
  st(out + 7 * stride, g2);
}

/** AT m for 8 values; 6 results to out + i * stride (even rows, then odd, to keep few live). */
@inline function at6(
  m0: v128, m1: v128, m2: v128, m3: v128, m4: v128, m5: v128, m6: v128, m7: v128,
  out: usize, stride: usize,
): void {
  const a = add(m1, m2);
  const c = add(m3, m4);
  const e = add(m5, m6);
  st(out, add(add(m0, a), add(c, e)));
  st(out + 2 * stride, add(add(a, mul(c, k4(4.0))), mul(e, k4(0.25))));
  st(out + 4 * stride, add(add(a, mul(c, k4(16.0))), mul(e, k4(0.0625))));
  const b = sub(m1, m2);
  const d = sub(m3, m4);
  const f = sub(m5, m6);
  st(out + stride, add(add(b, add(d, d)), mul(f, k4(0.5))));
  st(out + 3 * stride, add(add(b, mul(d, k4(8.0))), mul(f, k4(0.125))));
  st(out + 5 * stride, add(add(add(b, mul(d, k4(32.0))), mul(f, k4(0.03125))), m7));
}

/**
 * Input transform: item (g, t) = g * T + t, every channel block of the tile, to V.
 * work: 1 KiB per thread.
 */
export function wt8_input(
  P: usize, V: usize, CB: i32, G: i32, Hp: i32, Wp: i32, tilesH: i32, tilesW: i32, T: i32,
  Cp: i32, work: usize, start: i32, count: i32,
): void {
  const tiles = tilesH * tilesW;
  const rowBytes = <usize>Wp << 4;
  const planeBytes = <usize>Hp * rowBytes;
  const xs = <usize>G * <usize>T * <usize>Cp * 4;
  for (let item = start; item < start + count; item++) {
    const g = item / T;
    const t = item % T;
    const n = t / tiles;
    const r = t % tiles;
    const ty = r / tilesW;
    const tx = r % tilesW;
    let src =
      P + <usize>((n * G + g) * CB) * planeBytes + <usize>(ty * 6) * rowBytes + (<usize>(tx * 6) << 4);
    let dst = V + ((<usize>item * <usize>Cp) << 2);
    for (let cb = 0; cb < CB; cb++) {
      for (let i = 0; i < 8; i++) {
        const s = src + <usize>i * rowBytes;
        bt8(
          ld(s), v128.load(s, 16), v128.load(s, 32), v128.load(s, 48),
          v128.load(s, 64), v128.load(s, 80), v128.load(s, 96), v128.load(s, 112),
          work + (<usize>i << 7), 16,
        );
      }
      for (let k = 0; k < 8; k++) {
        const w = work + (<usize>k << 4);
        bt8(
          ld(w), v128.load(w, 128), v128.load(w, 256), v128.load(w, 384),
          v128.load(w, 512), v128.load(w, 640), v128.load(w, 768), v128.load(w, 896),
          dst + <usize>k * xs, 8 * xs,
        );
      }
      src += planeBytes;
      dst += 16;
    }
  }
}

/**
 * Kernel transform: item (g, c) = g * Cp + c, four output channels at a time, to U.
 * w: OIHW 3x3, contiguous. work: 512 B per thread.
 */
export function wt8_kernel(
  w: usize, U: usize, Cg: i32, Og: i32, G: i32, Cp: i32, Op: i32, work: usize,
  start: i32, count: i32,
): void {
  const xs = <usize>G * <usize>Cp * <usize>Op * 4;
  const ks = <usize>Cg * 36; // bytes between consecutive output channels' kernels
  for (let item = start; item < start + count; item++) {
    const g = item / Cp;
    const c = item % Cp;
    let dst = U + ((<usize>item * <usize>Op) << 2);
    for (let o0 = 0; o0 < Op; o0 += 4) {
      const lanes = imin(4, Og - o0);
      if (c >= Cg || lanes <= 0) {
        for (let xi = 0; xi < 64; xi++) st(dst + <usize>xi * xs, zero());
      } else {
        const p = w + <usize>((g * Og + o0) * Cg + c) * 36;
        for (let i = 0; i < 3; i++) {
          const q = p + <usize>i * 12;
          g8(gather4(q, ks, lanes), gather4(q + 4, ks, lanes), gather4(q + 8, ks, lanes),
            work + (<usize>i << 7), 16);
        }
        for (let k = 0; k < 8; k++) {
          const s = work + (<usize>k << 4);
          g8(ld(s), v128.load(s, 128), v128.load(s, 256), dst + <usize>k * xs, 8 * xs);
        }
      }
      dst += 16;
    }
  }
}

/**
 * Output transform: item (g, t), four output channels at a time, from M to y (NCHW),
 * adding bias (0: none). work: 2 KiB per thread.
 */
export function wt8_output(
  M: usize, y: usize, bias: usize, O: i32, Og: i32, G: i32, Op: i32, T: i32,
  outH: i32, outW: i32, tilesH: i32, tilesW: i32, work: usize, start: i32, count: i32,
): void {
  const tiles = tilesH * tilesW;
  const xs = <usize>G * <usize>T * <usize>Op * 4;
  const planeBytes = <usize>outH * <usize>outW * 4;
  const tmp = work; // [8][6]
  const res = work + 768; // [6][6]
  for (let item = start; item < start + count; item++) {
    const g = item / T;
    const t = item % T;
    const n = t / tiles;
    const r = t % tiles;
    const oy0 = (r / tilesW) * 6;
    const ox0 = (r % tilesW) * 6;
    const rows = imin(6, outH - oy0);
    const cols = imin(6, outW - ox0);
    let src = M + ((<usize>item * <usize>Op) << 2);
    for (let o0 = 0; o0 < Og; o0 += 4) {
      for (let i = 0; i < 8; i++) {
        const s = src + <usize>(i * 8) * xs;
        at6(
          ld(s), ld(s + xs), ld(s + 2 * xs), ld(s + 3 * xs),
          ld(s + 4 * xs), ld(s + 5 * xs), ld(s + 6 * xs), ld(s + 7 * xs),
          tmp + <usize>(i * 6) * 16, 16,
        );
      }
      for (let k = 0; k < 6; k++) {
        const s = tmp + (<usize>k << 4);
        at6(
          ld(s), v128.load(s, 96), v128.load(s, 192), v128.load(s, 288),
          v128.load(s, 384), v128.load(s, 480), v128.load(s, 576), v128.load(s, 672),
          res + (<usize>k << 4), 96,
        );
      }
      const lanes = imin(4, Og - o0);
      const dst = y + <usize>(n * O + g * Og + o0) * planeBytes + (<usize>(oy0 * outW + ox0) << 2);
      storeTile(res, 6, dst, planeBytes, outW, rows, cols, lanes, biasVector(bias, g * Og + o0, lanes));
      src += 16;
    }
  }
}

// ---------------------------------------------------------------- Winograd F(4x4, 3x3)
// Points 0, +-1, +-2 and infinity ("wt6x6"): 36 transform points per 16 outputs, smaller
// transformed weights than F(6x6) and about four times more accurate in float32.

/** BT d for 6 values; results to out + i * stride. */
@inline function bt6(
  d0: v128, d1: v128, d2: v128, d3: v128, d4: v128, d5: v128, out: usize, stride: usize,
): void {
  const a = sub(d4, mul(d2, k4(4.0)));
  const b = sub(d3, mul(d1, k4(4.0)));
  const c = sub(d4, d2);
  const e = mul(sub(d3, d1), k4(2.0));
  st(out, add(sub(mul(d0, k4(4.0)), mul(d2, k4(5.0))), d4));
  st(out + stride, add(a, b));
  st(out + 2 * stride, sub(a, b));
  st(out + 3 * stride, add(c, e));
  st(out + 4 * stride, sub(c, e));
  st(out + 5 * stride, add(sub(mul(d1, k4(4.0)), mul(d3, k4(5.0))), d5));
}

/** G g for 3 values; 6 results to out + i * stride. */
@inline function g6(g0: v128, g1: v128, g2: v128, out: usize, stride: usize): void {
  const s02 = add(g0, g2);
  const q = add(mul(g0, k4(1.0 / 24.0)), mul(g2, k4(1.0 / 6.0)));
  const q1 = mul(g1, k4(1.0 / 12.0));
  st(out, mul(g0, k4(0.25)));
  st(out + stride, mul(add(s02, g1), k4(-1.0 / 6.0)));
  st(out + 2 * stride, mul(sub(s02, g1), k4(-1.0 / 6.0)));
  st(out + 3 * stride, add(q, q1));
  st(out + 4 * stride, sub(q, q1));
  st(out + 5 * stride, g2);
}

/** AT m for 6 values; 4 results to out + i * stride. */
@inline function at4(
  m0: v128, m1: v128, m2: v128, m3: v128, m4: v128, m5: v128, out: usize, stride: usize,
): void {
  const a = add(m1, m2);
  const b = sub(m1, m2);
  const c = add(m3, m4);
  const d = sub(m3, m4);
  st(out, add(add(m0, a), c));
  st(out + stride, add(b, add(d, d)));
  st(out + 2 * stride, add(a, mul(c, k4(4.0))));
  st(out + 3 * stride, add(add(b, mul(d, k4(8.0))), m5));
}

/** F(4x4, 3x3) input transform, as wt8_input with 6x6 tiles stepping by 4. work: 576 B. */
export function wt6_input(
  P: usize, V: usize, CB: i32, G: i32, Hp: i32, Wp: i32, tilesH: i32, tilesW: i32, T: i32,
  Cp: i32, work: usize, start: i32, count: i32,
): void {
  const tiles = tilesH * tilesW;
  const rowBytes = <usize>Wp << 4;
  const planeBytes = <usize>Hp * rowBytes;
  const xs = <usize>G * <usize>T * <usize>Cp * 4;
  for (let item = start; item < start + count; item++) {
    const g = item / T;
    const t = item % T;
    const n = t / tiles;
    const r = t % tiles;
    const ty = r / tilesW;
    const tx = r % tilesW;
    let src =
      P + <usize>((n * G + g) * CB) * planeBytes + <usize>(ty * 4) * rowBytes + (<usize>(tx * 4) << 4);
    let dst = V + ((<usize>item * <usize>Cp) << 2);
    for (let cb = 0; cb < CB; cb++) {
      for (let i = 0; i < 6; i++) {
        const s = src + <usize>i * rowBytes;
        bt6(
          ld(s), v128.load(s, 16), v128.load(s, 32), v128.load(s, 48), v128.load(s, 64),
          v128.load(s, 80), work + <usize>(i * 96), 16,
        );
      }
      for (let k = 0; k < 6; k++) {
        const w = work + (<usize>k << 4);
        bt6(
          ld(w), v128.load(w, 96), v128.load(w, 192), v128.load(w, 288), v128.load(w, 384),
          v128.load(w, 480), dst + <usize>k * xs, 6 * xs,
        );
      }
      src += planeBytes;
      dst += 16;
    }
  }
}

/** F(4x4, 3x3) kernel transform, as wt8_kernel. work: 512 B. */
export function wt6_kernel(
  w: usize, U: usize, Cg: i32, Og: i32, G: i32, Cp: i32, Op: i32, work: usize,
  start: i32, count: i32,
): void {
  const xs = <usize>G * <usize>Cp * <usize>Op * 4;
  const ks = <usize>Cg * 36;
  for (let item = start; item < start + count; item++) {
    const g = item / Cp;
    const c = item % Cp;
    let dst = U + ((<usize>item * <usize>Op) << 2);
    for (let o0 = 0; o0 < Op; o0 += 4) {
      const lanes = imin(4, Og - o0);
      if (c >= Cg || lanes <= 0) {
        for (let xi = 0; xi < 36; xi++) st(dst + <usize>xi * xs, zero());
      } else {
        const p = w + <usize>((g * Og + o0) * Cg + c) * 36;
        for (let i = 0; i < 3; i++) {
          const q = p + <usize>i * 12;
          g6(gather4(q, ks, lanes), gather4(q + 4, ks, lanes), gather4(q + 8, ks, lanes),
            work + <usize>(i * 96), 16);
        }
        for (let k = 0; k < 6; k++) {
          const s = work + (<usize>k << 4);
          g6(ld(s), v128.load(s, 96), v128.load(s, 192), dst + <usize>k * xs, 6 * xs);
        }
      }
      dst += 16;
    }
  }
}

/** F(4x4, 3x3) output transform, as wt8_output. work: 1 KiB. */
export function wt6_output(
  M: usize, y: usize, bias: usize, O: i32, Og: i32, G: i32, Op: i32, T: i32,
  outH: i32, outW: i32, tilesH: i32, tilesW: i32, work: usize, start: i32, count: i32,
): void {
  const tiles = tilesH * tilesW;
  const xs = <usize>G * <usize>T * <usize>Op * 4;
  const planeBytes = <usize>outH * <usize>outW * 4;
  const tmp = work; // [6][4]
  const res = work + 384; // [4][4]
  for (let item = start; item < start + count; item++) {
    const g = item / T;
    const t = item % T;
    const n = t / tiles;
    const r = t % tiles;
    const oy0 = (r / tilesW) * 4;
    const ox0 = (r % tilesW) * 4;
    const rows = imin(4, outH - oy0);
    const cols = imin(4, outW - ox0);
    let src = M + ((<usize>item * <usize>Op) << 2);
    for (let o0 = 0; o0 < Og; o0 += 4) {
      for (let i = 0; i < 6; i++) {
        const s = src + <usize>(i * 6) * xs;
        at4(
          ld(s), ld(s + xs), ld(s + 2 * xs), ld(s + 3 * xs), ld(s + 4 * xs), ld(s + 5 * xs),
          tmp + <usize>(i * 64), 16,
        );
      }
      for (let k = 0; k < 4; k++) {
        const s = tmp + (<usize>k << 4);
        at4(
          ld(s), v128.load(s, 64), v128.load(s, 128), v128.load(s, 192), v128.load(s, 256),
          v128.load(s, 320), res + (<usize>k << 4), 64,
        );
      }
      const lanes = imin(4, Og - o0);
      const dst = y + <usize>(n * O + g * Og + o0) * planeBytes + (<usize>(oy0 * outW + ox0) << 2);
      storeTile(res, 4, dst, planeBytes, outW, rows, cols, lanes, biasVector(bias, g * Og + o0, lanes));
      src += 16;
    }
  }
}

// ---------------------------------------------------------------------------------- FFT
// 2-D real FFT of an N x N tile (N = 8 or 16), four tiles at once (one per lane).
// Rows are transformed two at a time (one complex FFT of row + i * next row), then the
// columns; of the N x (N/2 + 1) half spectrum only the independent points are kept:
// columns 0 and N/2 are spectra of real signals, so their rows 0..N/2 suffice
// (F = 2 (N/2 + 1) + (N/2 - 1) N points: 34 for N = 8, 130 for N = 16).
// Spectrum order: column 0 rows 0..N/2, column N/2 rows 0..N/2, then columns 1..N/2-1,
// rows 0..N-1 each. Work layout (bytes): zr 0, zi 256, ar 512, ai 2816, spec 5120
// (F complex, re/im interleaved per point), tile 9344 (N x N). 13440 bytes in all.

const ZR: usize = 0;
const ZI: usize = 256;
const AR: usize = 512;
const AI: usize = 2816;
const SPEC: usize = 5120;
const TILE: usize = 9344;
// Per-thread work of the FFT transforms: 13440 bytes (FT_WORK_BYTES in src/wasm.ts).

@inline function rev(N: i32, j: i32): usize {
  return <usize>load<i32>((N == 8 ? REV8 : REV16) + (<usize>j << 2)) << 4;
}

/** In-place radix-2 FFT of N complex v128 values, input in bit-reversed order. */
function fft(zr: usize, zi: usize, N: i32, inverse: bool): void {
  for (let len = 2; len <= N; len <<= 1) {
    const half = len >> 1;
    const tstep = 16 / len;
    for (let k = 0; k < half; k++) {
      const kk = <usize>(k * tstep) << 2;
      const wr = f32x4.splat(load<f32>(COS16 + kk));
      const s = load<f32>(SIN16 + kk);
      const wi = f32x4.splat(inverse ? s : -s);
      for (let i = k; i < N; i += len) {
        const a = <usize>i << 4;
        const b = <usize>(i + half) << 4;
        const br = ld(zr + b);
        const bi = ld(zi + b);
        let tr = br;
        let ti = bi;
        if (k != 0) {
          tr = sub(mul(br, wr), mul(bi, wi));
          ti = add(mul(br, wi), mul(bi, wr));
        }
        const ar = ld(zr + a);
        const ai = ld(zi + a);
        st(zr + b, sub(ar, tr));
        st(zi + b, sub(ai, ti));
        st(zr + a, add(ar, tr));
        st(zi + a, add(ai, ti));
      }
    }
  }
}

@inline function specCount(N: i32): i32 {
  return N == 8 ? 34 : 130;
}

/** Forward 2-D FFT of the N x N tile at src (row stride in bytes) into work's spectrum. */
function fwd2d(src: usize, rowStride: usize, N: i32, work: usize): void {
  const H = N >> 1;
  const zr = work + ZR;
  const zi = work + ZI;
  const ar = work + AR; // [N][H + 1]
  const ai = work + AI;
  const spec = work + SPEC;
  const half = k4(0.5);
  const ldA = <usize>(H + 1) << 4;
  for (let r = 0; r < N; r += 2) {
    const s0 = src + <usize>r * rowStride;
    const s1 = s0 + rowStride;
    for (let j = 0; j < N; j++) {
      const o = rev(N, j);
      st(zr + o, ld(s0 + (<usize>j << 4)));
      st(zi + o, ld(s1 + (<usize>j << 4)));
    }
    fft(zr, zi, N, false);
    const a0 = <usize>r * ldA;
    const a1 = a0 + ldA;
    for (let k = 0; k <= H; k++) {
      const ok = <usize>k << 4;
      const on = <usize>((N - k) & (N - 1)) << 4;
      const xr = ld(zr + ok);
      const xi = ld(zi + ok);
      const yr = ld(zr + on);
      const yi = ld(zi + on);
      st(ar + a0 + ok, mul(add(xr, yr), half));
      st(ai + a0 + ok, mul(sub(xi, yi), half));
      st(ar + a1 + ok, mul(add(xi, yi), half));
      st(ai + a1 + ok, mul(sub(yr, xr), half));
    }
  }
  // columns 0 and N/2 (both real): one complex FFT, then separated
  const oH = <usize>H << 4;
  for (let u = 0; u < N; u++) {
    const o = rev(N, u);
    st(zr + o, ld(ar + <usize>u * ldA));
    st(zi + o, ld(ar + <usize>u * ldA + oH));
  }
  fft(zr, zi, N, false);
  for (let u = 0; u <= H; u++) {
    const ou = <usize>u << 4;
    const on = <usize>((N - u) & (N - 1)) << 4;
    const xr = ld(zr + ou);
    const xi = ld(zi + ou);
    const yr = ld(zr + on);
    const yi = ld(zi + on);
    const p0 = spec + (<usize>u << 5);
    const p1 = spec + (<usize>(H + 1 + u) << 5);
    st(p0, mul(add(xr, yr), half));
    v128.store(p0, mul(sub(xi, yi), half), 16);
    st(p1, mul(add(xi, yi), half));
    v128.store(p1, mul(sub(yr, xr), half), 16);
  }
  // columns 1 .. N/2 - 1
  for (let k = 1; k < H; k++) {
    const ok = <usize>k << 4;
    for (let u = 0; u < N; u++) {
      const o = rev(N, u);
      st(zr + o, ld(ar + <usize>u * ldA + ok));
      st(zi + o, ld(ai + <usize>u * ldA + ok));
    }
    fft(zr, zi, N, false);
    const base = spec + (<usize>(2 * (H + 1) + (k - 1) * N) << 5);
    for (let u = 0; u < N; u++) {
      const p = base + (<usize>u << 5);
      st(p, ld(zr + (<usize>u << 4)));
      v128.store(p, ld(zi + (<usize>u << 4)), 16);
    }
  }
}

/**
 * Inverse 2-D FFT (unnormalised) of work's spectrum; rows 0 .. rows-1 (rounded up to
 * even) of the N x N result go to work's tile.
 */
function inv2d(N: i32, rows: i32, work: usize): void {
  const H = N >> 1;
  const zr = work + ZR;
  const zi = work + ZI;
  const qr = work + AR; // [N][H + 1]
  const qi = work + AI;
  const spec = work + SPEC;
  const out = work + TILE;
  const ldA = <usize>(H + 1) << 4;
  const oH = <usize>H << 4;
  // columns 0 and N/2: Hermitian spectra of real columns, inverted together
  for (let u = 0; u < N; u++) {
    const o = rev(N, u);
    if (u <= H) {
      const a = spec + (<usize>u << 5);
      const b = spec + (<usize>(H + 1 + u) << 5);
      st(zr + o, sub(ld(a), v128.load(b, 16)));
      st(zi + o, add(v128.load(a, 16), ld(b)));
    } else {
      const a = spec + (<usize>(N - u) << 5);
      const b = spec + (<usize>(H + 1 + N - u) << 5);
      st(zr + o, add(ld(a), v128.load(b, 16)));
      st(zi + o, sub(ld(b), v128.load(a, 16)));
    }
  }
  fft(zr, zi, N, true);
  for (let r = 0; r < N; r++) {
    const p = <usize>r * ldA;
    st(qr + p, ld(zr + (<usize>r << 4)));
    st(qi + p, zero());
    st(qr + p + oH, ld(zi + (<usize>r << 4)));
    st(qi + p + oH, zero());
  }
  for (let k = 1; k < H; k++) {
    const base = spec + (<usize>(2 * (H + 1) + (k - 1) * N) << 5);
    for (let u = 0; u < N; u++) {
      const o = rev(N, u);
      const p = base + (<usize>u << 5);
      st(zr + o, ld(p));
      st(zi + o, v128.load(p, 16));
    }
    fft(zr, zi, N, true);
    const ok = <usize>k << 4;
    for (let r = 0; r < N; r++) {
      st(qr + <usize>r * ldA + ok, ld(zr + (<usize>r << 4)));
      st(qi + <usize>r * ldA + ok, ld(zi + (<usize>r << 4)));
    }
  }
  // rows, two at a time: IFFT(X + i Y) = x + i y for Hermitian X, Y
  for (let r = 0; r < rows; r += 2) {
    const a0 = <usize>r * ldA;
    const a1 = a0 + ldA;
    for (let k = 0; k < N; k++) {
      const o = rev(N, k);
      if (k <= H) {
        const ok = <usize>k << 4;
        st(zr + o, sub(ld(qr + a0 + ok), ld(qi + a1 + ok)));
        st(zi + o, add(ld(qi + a0 + ok), ld(qr + a1 + ok)));
      } else {
        const ok = <usize>(N - k) << 4;
        st(zr + o, add(ld(qr + a0 + ok), ld(qi + a1 + ok)));
        st(zi + o, sub(ld(qr + a1 + ok), ld(qi + a0 + ok)));
      }
    }
    fft(zr, zi, N, true);
    const d0 = out + (<usize>(r * N) << 4);
    const d1 = d0 + (<usize>N << 4);
    for (let c = 0; c < N; c++) {
      st(d0 + (<usize>c << 4), ld(zr + (<usize>c << 4)));
      st(d1 + (<usize>c << 4), ld(zi + (<usize>c << 4)));
    }
  }
}

/**
 * FFT input transform: item (g, t) = g * T + t; tiles of N x N with output tiles of
 * mh x mw. work: FT_WORK_BYTES per thread.
 */
export function ft_input(
  P: usize, V: usize, N: i32, mh: i32, mw: i32, CB: i32, G: i32, Hp: i32, Wp: i32,
  tilesH: i32, tilesW: i32, T: i32, Cp: i32, work: usize, start: i32, count: i32,
): void {
  const tiles = tilesH * tilesW;
  const rowBytes = <usize>Wp << 4;
  const planeBytes = <usize>Hp * rowBytes;
  const F = specCount(N);
  const fs = <usize>G * <usize>T * <usize>Cp * 8;
  const im = <usize>Cp << 2;
  const spec = work + SPEC;
  for (let item = start; item < start + count; item++) {
    const g = item / T;
    const t = item % T;
    const n = t / tiles;
    const r = t % tiles;
    const ty = r / tilesW;
    const tx = r % tilesW;
    let src =
      P + <usize>((n * G + g) * CB) * planeBytes + <usize>(ty * mh) * rowBytes + (<usize>(tx * mw) << 4);
    let dst = V + ((<usize>item * <usize>Cp) << 3);
    for (let cb = 0; cb < CB; cb++) {
      fwd2d(src, rowBytes, N, work);
      let d = dst;
      for (let f = 0; f < F; f++) {
        const s = spec + (<usize>f << 5);
        st(d, ld(s));
        st(d + im, v128.load(s, 16));
        d += fs;
      }
      src += planeBytes;
      dst += 16;
    }
  }
}

/**
 * FFT kernel transform: item (g, c) = g * Cp + c, four output channels at a time.
 * U = conj(FFT(w)) / N^2 as the real block [[Ur, Ui], [-Ui, Ur]]. w: OIHW, contiguous,
 * kh x kw with dilation dh, dw ((k - 1) d + 1 <= N).
 */
export function ft_kernel(
  w: usize, U: usize, N: i32, kh: i32, kw: i32, dh: i32, dw: i32, Cg: i32, Og: i32, G: i32,
  Cp: i32, Op: i32, work: usize, start: i32, count: i32,
): void {
  const F = specCount(N);
  const fs = <usize>G * <usize>Cp * <usize>Op * 16;
  const im = <usize>Op << 2;
  const ks = <usize>(Cg * kh * kw) << 2;
  const scale = k4(<f32>(1.0 / <f64>(N * N)));
  const nscale = k4(<f32>(-1.0 / <f64>(N * N)));
  const tile = work + TILE;
  const spec = work + SPEC;
  for (let item = start; item < start + count; item++) {
    const g = item / Cp;
    const c = item % Cp;
    let rowRe = U + (<usize>(g * 2 * Cp + c) * <usize>Op << 3);
    let rowIm = U + (<usize>(g * 2 * Cp + Cp + c) * <usize>Op << 3);
    for (let o0 = 0; o0 < Op; o0 += 4) {
      const lanes = imin(4, Og - o0);
      if (c >= Cg || lanes <= 0) {
        for (let f = 0; f < F; f++) {
          const o = <usize>f * fs;
          st(rowRe + o, zero());
          st(rowRe + o + im, zero());
          st(rowIm + o, zero());
          st(rowIm + o + im, zero());
        }
      } else {
        memory.fill(tile, 0, <usize>(N * N) << 4);
        const p = w + (<usize>(((g * Og + o0) * Cg + c) * kh * kw) << 2);
        for (let i = 0; i < kh; i++)
          for (let j = 0; j < kw; j++)
            st(tile + (<usize>(i * dh * N + j * dw) << 4), gather4(p + (<usize>(i * kw + j) << 2), ks, lanes));
        fwd2d(tile, <usize>N << 4, N, work);
        for (let f = 0; f < F; f++) {
          const s = spec + (<usize>f << 5);
          const wr = mul(ld(s), scale); // Ur
          const wi = mul(v128.load(s, 16), nscale); // Ui = -Im(W) / N^2
          const o = <usize>f * fs;
          st(rowRe + o, wr);
          st(rowRe + o + im, wi);
          st(rowIm + o, f32x4.neg(wi));
          st(rowIm + o + im, wr);
        }
      }
      rowRe += 16;
      rowIm += 16;
    }
  }
}

/** FFT output transform: item (g, t), four output channels at a time, from M to y + bias. */
export function ft_output(
  M: usize, y: usize, bias: usize, N: i32, mh: i32, mw: i32, O: i32, Og: i32, G: i32, Op: i32,
  T: i32, outH: i32, outW: i32, tilesH: i32, tilesW: i32, work: usize, start: i32, count: i32,
): void {
  const tiles = tilesH * tilesW;
  const F = specCount(N);
  const fs = <usize>G * <usize>T * <usize>Op * 8;
  const im = <usize>Op << 2;
  const planeBytes = <usize>outH * <usize>outW * 4;
  const spec = work + SPEC;
  const tile = work + TILE;
  for (let item = start; item < start + count; item++) {
    const g = item / T;
    const t = item % T;
    const n = t / tiles;
    const r = t % tiles;
    const oy0 = (r / tilesW) * mh;
    const ox0 = (r % tilesW) * mw;
    const rows = imin(mh, outH - oy0);
    const cols = imin(mw, outW - ox0);
    let src = M + ((<usize>item * <usize>Op) << 3);
    for (let o0 = 0; o0 < Og; o0 += 4) {
      let s = src;
      for (let f = 0; f < F; f++) {
        const d = spec + (<usize>f << 5);
        st(d, ld(s));
        v128.store(d, ld(s + im), 16);
        s += fs;
      }
      inv2d(N, rows, work);
      const lanes = imin(4, Og - o0);
      const dst = y + <usize>(n * O + g * Og + o0) * planeBytes + (<usize>(oy0 * outW + ox0) << 2);
      storeTile(tile, N, dst, planeBytes, outW, rows, cols, lanes, biasVector(bias, g * Og + o0, lanes));
      src += 16;
    }
  }
}

// ---------------------------------------------------------------------------------- im2col

/**
 * col[item][i][j][oy][ox] = x[item][oy sh - pt + i dh][ox sw - pl + j dw] (0 outside), for
 * the input planes item in [start, start + count): the rows of each (image, group)'s
 * [Cg kh kw, outH outW] matrix, in order.
 */
function im2col<T>(
  x: usize, col: usize, H: i32, W: i32, kh: i32, kw: i32, sh: i32, sw: i32, dh: i32, dw: i32,
  pt: i32, pl: i32, outH: i32, outW: i32, start: i32, count: i32,
): void {
  const sz = <usize>sizeof<T>();
  const P = <usize>outH * <usize>outW;
  const rowOut = <usize>outW * sz;
  for (let item = start; item < start + count; item++) {
    const src = x + <usize>item * <usize>H * <usize>W * sz;
    let dst = col + <usize>item * <usize>(kh * kw) * P * sz;
    for (let i = 0; i < kh; i++) {
      for (let j = 0; j < kw; j++) {
        const ix0 = j * dw - pl;
        let lo = ix0 >= 0 ? 0 : (sw - 1 - ix0) / sw;
        let hi = W - 1 - ix0 < 0 ? 0 : (W - 1 - ix0) / sw + 1;
        lo = imin(lo, outW);
        hi = imax(lo, imin(hi, outW));
        for (let oy = 0; oy < outH; oy++) {
          const iy = oy * sh - pt + i * dh;
          const drow = dst + <usize>oy * rowOut;
          if (iy < 0 || iy >= H || hi == lo) {
            memory.fill(drow, 0, rowOut);
            continue;
          }
          if (lo > 0) memory.fill(drow, 0, <usize>lo * sz);
          if (hi < outW) memory.fill(drow + <usize>hi * sz, 0, <usize>(outW - hi) * sz);
          const srow = src + <usize>iy * <usize>W * sz;
          if (sw == 1) {
            memory.copy(drow + <usize>lo * sz, srow + <usize>(lo + ix0) * sz, <usize>(hi - lo) * sz);
          } else {
            let ox = lo;
            if (sizeof<T>() == 4 && sw == 2) {
              // four outputs from two loads; the last input read, 2 (ox + 3) + ix0 + 1, stays in the row
              for (; ox + 4 <= hi && 2 * (ox + 3) + ix0 + 1 < W; ox += 4) {
                const p = srow + (<usize>(2 * ox + ix0) << 2);
                v128.store(drow + (<usize>ox << 2), f32x4.shuffle(ld(p), v128.load(p, 16), 0, 2, 4, 6));
              }
            }
            for (; ox < hi; ox++)
              store<T>(drow + <usize>ox * sz, load<T>(srow + <usize>(ox * sw + ix0) * sz));
          }
        }
        dst += P * sz;
      }
    }
  }
}

export function im2col_f32(
  x: usize, col: usize, H: i32, W: i32, kh: i32, kw: i32, sh: i32, sw: i32, dh: i32, dw: i32,
  pt: i32, pl: i32, outH: i32, outW: i32, start: i32, count: i32,
): void {
  im2col<f32>(x, col, H, W, kh, kw, sh, sw, dh, dw, pt, pl, outH, outW, start, count);
}

export function im2col_f64(
  x: usize, col: usize, H: i32, W: i32, kh: i32, kw: i32, sh: i32, sw: i32, dh: i32, dw: i32,
  pt: i32, pl: i32, outH: i32, outW: i32, start: i32, count: i32,
): void {
  im2col<f64>(x, col, H, W, kh, kw, sh, sw, dh, dw, pt, pl, outH, outW, start, count);
}

// ---------------------------------------------------------------------------------- bias

/** y[item][:] += bias[item % C] for the planes item in [start, start + count). */
function biasAdd<T>(y: usize, bias: usize, C: i32, P: i32, start: i32, count: i32): void {
  const sz = <usize>sizeof<T>();
  const L = <i32>(16 / sizeof<T>());
  for (let item = start; item < start + count; item++) {
    const b = load<T>(bias + <usize>(item % C) * sz);
    const bv = v128.splat<T>(b);
    const p = y + <usize>item * <usize>P * sz;
    let i = 0;
    for (; i + L <= P; i += L) {
      const q = p + <usize>i * sz;
      v128.store(q, v128.add<T>(v128.load(q), bv));
    }
    for (; i < P; i++) {
      const q = p + <usize>i * sz;
      store<T>(q, load<T>(q) + b);
    }
  }
}

export function bias_f32(y: usize, bias: usize, C: i32, P: i32, start: i32, count: i32): void {
  biasAdd<f32>(y, bias, C, P, start, count);
}
export function bias_f64(y: usize, bias: usize, C: i32, P: i32, start: i32, count: i32): void {
  biasAdd<f64>(y, bias, C, P, start, count);
}

// ---------------------------------------------------------------------------------- depthwise

/** Row width (elements) of the zero-padded plane dw_f32 works on. */
@inline function dwRow(outW: i32, kw: i32, sw: i32, dw: i32): i32 {
  return (((outW + 3) >> 2) << 2) * sw + (kw - 1) * dw + 8;
}

/** Bytes of per-thread work dw_f32 needs. */
export function dw_work_bytes(outH: i32, outW: i32, kh: i32, kw: i32, sh: i32, sw: i32, dh: i32, dw: i32): i32 {
  const rows = (outH - 1) * sh + (kh - 1) * dh + 1;
  return rows * dwRow(outW, kw, sw, dw) * 4 + 64;
}

/**
 * Depthwise convolution (groups = C, M = O / C output channels per input channel), f32:
 * item = n * O + f, one output plane. Each input plane is first copied into a zero-padded
 * plane in work (dw_work_bytes), so the inner loops run without bounds checks: SIMD over 4
 * output columns. Layers with one output channel per input channel (M = 1, MobileNet's) run
 * dw_c4_f32 (depthwise.ts) instead; this serves the other multipliers.
 */
export function dw_f32(
  x: usize, w: usize, bias: usize, y: usize, C: i32, H: i32, W: i32, M: i32, kh: i32, kw: i32,
  sh: i32, sw: i32, dh: i32, dw: i32, pt: i32, pl: i32, outH: i32, outW: i32, work: usize,
  start: i32, count: i32,
): void {
  const O = C * M;
  const rows = (outH - 1) * sh + (kh - 1) * dh + 1;
  const Wq = dwRow(outW, kw, sw, dw);
  const rowQ = <usize>Wq << 2;
  const colHi = imin(pl + W, Wq);
  let lastPlane = -1;
  for (let item = start; item < start + count; item++) {
    const n = item / O;
    const f = item % O;
    const c = f / M;
    const planeIdx = n * C + c;
    if (planeIdx != lastPlane) {
      lastPlane = planeIdx;
      const src = x + <usize>planeIdx * <usize>H * <usize>W * 4;
      for (let r = 0; r < rows; r++) {
        const iy = r - pt;
        const d = work + <usize>r * rowQ;
        if (iy < 0 || iy >= H || colHi <= pl) {
          zeroBytes(d, rowQ);
          continue;
        }
        if (pl > 0) zeroBytes(d, <usize>pl << 2);
        copyBytes(d + (<usize>pl << 2), src + <usize>iy * <usize>W * 4, <usize>(colHi - pl) << 2);
        if (colHi < Wq) zeroBytes(d + (<usize>colHi << 2), <usize>(Wq - colHi) << 2);
      }
    }
    const out = y + <usize>item * <usize>outH * <usize>outW * 4;
    const bs: f32 = bias != 0 ? load<f32>(bias + (<usize>f << 2)) : 0;
    const b = k4(bs);
    const wp = w + (<usize>(f * kh * kw) << 2);
    const full = outW & ~3;
    if (sw == 1 || sw == 2) {
      for (let oy = 0; oy < outH; oy++) {
        const drow = out + (<usize>(oy * outW) << 2);
        for (let ox = 0; ox < outW; ox += 4) {
          let acc = b;
          for (let i = 0; i < kh; i++) {
            const row = work + <usize>(oy * sh + i * dh) * rowQ;
            for (let j = 0; j < kw; j++) {
              const wv = v128.load32_splat(wp + (<usize>(i * kw + j) << 2));
              const p = row + (<usize>(ox * sw + j * dw) << 2);
              const v = sw == 1 ? ld(p) : f32x4.shuffle(ld(p), v128.load(p, 16), 0, 2, 4, 6);
              acc = add(acc, mul(v, wv));
            }
          }
          storeTail(drow + (<usize>ox << 2), acc, ox < full ? 4 : outW - ox);
        }
      }
    } else {
      for (let oy = 0; oy < outH; oy++) {
        for (let ox = 0; ox < outW; ox++) {
          let acc = bs;
          for (let i = 0; i < kh; i++) {
            const row = work + <usize>(oy * sh + i * dh) * rowQ;
            for (let j = 0; j < kw; j++)
              acc += load<f32>(row + (<usize>(ox * sw + j * dw) << 2)) *
                load<f32>(wp + (<usize>(i * kw + j) << 2));
          }
          store<f32>(out + (<usize>(oy * outW + ox) << 2), acc);
        }
      }
    }
  }
}

@inline function storeTail(p: usize, v: v128, n: i32): void {
  if (n >= 4) {
    st(p, v);
    return;
  }
  v128.store32_lane(p, v, 0);
  if (n > 1) v128.store32_lane(p, v, 1, 4);
  if (n > 2) v128.store32_lane(p, v, 2, 8);
}

/**
 * Depthwise convolution, f64, scalar, straight from the input with bounds checks. The
 * same signature as dw_f32, whose scratch (_work) this one does not need.
 */
export function dw_f64(
  x: usize, w: usize, bias: usize, y: usize, C: i32, H: i32, W: i32, M: i32, kh: i32, kw: i32,
  sh: i32, sw: i32, dh: i32, dw: i32, pt: i32, pl: i32, outH: i32, outW: i32, _work: usize,
  start: i32, count: i32,
): void {
  const O = C * M;
  for (let item = start; item < start + count; item++) {
    const n = item / O;
    const f = item % O;
    const c = f / M;
    const src = x + <usize>(n * C + c) * <usize>H * <usize>W * 8;
    const out = y + <usize>item * <usize>outH * <usize>outW * 8;
    const bs: f64 = bias != 0 ? load<f64>(bias + (<usize>f << 3)) : 0;
    const wp = w + (<usize>(f * kh * kw) << 3);
    for (let oy = 0; oy < outH; oy++) {
      for (let ox = 0; ox < outW; ox++) {
        let acc = bs;
        for (let i = 0; i < kh; i++) {
          const iy = oy * sh - pt + i * dh;
          const rowIn = iy >= 0 && iy < H;
          for (let j = 0; j < kw; j++) {
            const ix = ox * sw - pl + j * dw;
            // A tap over the padding multiplies a zero, as every kernel does: a NaN or
            // infinite weight there makes the output NaN (0 x inf), not nothing.
            const xv: f64 = rowIn && ix >= 0 && ix < W ? load<f64>(src + (<usize>(iy * W + ix) << 3)) : 0;
            acc += xv * load<f64>(wp + (<usize>(i * kw + j) << 3));
          }
        }
        store<f64>(out + (<usize>(oy * outW + ox) << 3), acc);
      }
    }
  }
}

// ---------------------------------------------------------------------------------- misc

/** 1 when the n bytes at a and b are equal (the weight-transform cache's check), else 0. */
export function equal_bytes(a: usize, b: usize, n: usize): i32 {
  let i: usize = 0;
  for (; i + 64 <= n; i += 64) {
    const d = v128.or(
      v128.or(v128.xor(v128.load(a + i), v128.load(b + i)), v128.xor(v128.load(a + i, 16), v128.load(b + i, 16))),
      v128.or(v128.xor(v128.load(a + i, 32), v128.load(b + i, 32)), v128.xor(v128.load(a + i, 48), v128.load(b + i, 48))),
    );
    if (v128.any_true(d)) return 0;
  }
  for (; i < n; i++) if (load<u8>(a + i) != load<u8>(b + i)) return 0;
  return 1;
}
