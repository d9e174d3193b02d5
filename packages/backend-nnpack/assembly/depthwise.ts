// Depthwise convolution (one output channel per input channel), f32, four channels at a
// time, one per SIMD lane: each group of four input planes is transposed into a
// zero-padded [rows][cols][4] plane in the thread's work, the taps run over it with plain
// vector loads (no bounds checks, no lanes lost at a row's end whatever the width, no
// shuffles for stride 2), and each output row is transposed back into the four planes.
// The transposes cost about one shuffle per element; they buy full vectors on planes of
// any width (a 14-wide MobileNet plane wastes 2 of 16 lanes per row computed along x).

import { fillRow, gather4, storeRow } from "./c4";

/** Columns beyond the last tap that a pair of outputs may read (the second of a pair). */
@inline function colsOf(outW: i32, kw: i32, sw: i32, dw: i32): i32 {
  return (outW + 1) * sw + (kw - 1) * dw + 1;
}
@inline function rowsOf(outH: i32, kh: i32, sh: i32, dh: i32): i32 {
  return (outH - 1) * sh + (kh - 1) * dh + 1;
}

/** Bytes of per-thread work dw_c4_f32 needs: the padded plane, one output row, the weights. */
export function dw_c4_work_bytes(outH: i32, outW: i32, kh: i32, kw: i32, sh: i32, sw: i32, dh: i32, dw: i32): i32 {
  const plane = rowsOf(outH, kh, sh, dh) * colsOf(outW, kw, sw, dw);
  return (plane + outW + 1 + kh * kw) * 16 + 64;
}

/** v0 w0 + v1 w1 + v2 w2, the three vectors from r on. */
@inline function row3(r: usize, w0: v128, w1: v128, w2: v128): v128 {
  const s = f32x4.add(f32x4.mul(v128.load(r), w0), f32x4.mul(v128.load(r, 16), w1));
  return f32x4.add(s, f32x4.mul(v128.load(r, 32), w2));
}

/** acc + v0 w0 + v1 w1 + v2 w2, the three vectors from r on, added one after another. */
@inline function taps3(acc: v128, r: usize, w0: v128, w1: v128, w2: v128): v128 {
  acc = f32x4.add(acc, f32x4.mul(v128.load(r), w0));
  acc = f32x4.add(acc, f32x4.mul(v128.load(r, 16), w1));
  return f32x4.add(acc, f32x4.mul(v128.load(r, 32), w2));
}

/** 3x3, dilation 1, stride sw along x: output row from padded rows r0..r2, two outputs a step. */
@inline function row3x3(orow: usize, r0: usize, r1: usize, r2: usize, outW: i32, sw: i32, wq: usize): void {
  const w0 = v128.load(wq);
  const w1 = v128.load(wq, 16);
  const w2 = v128.load(wq, 32);
  const w3 = v128.load(wq, 48);
  const w4 = v128.load(wq, 64);
  const w5 = v128.load(wq, 80);
  const w6 = v128.load(wq, 96);
  const w7 = v128.load(wq, 112);
  const w8 = v128.load(wq, 128);
  const step = <usize>sw << 4;
  for (let ox = 0; ox < outW; ox += 2) {
    const o = <usize>(ox * sw) << 4;
    const p = o + step;
    // Two outputs a step, each a chain over its nine taps.
    const a = taps3(taps3(row3(r0 + o, w0, w1, w2), r1 + o, w3, w4, w5), r2 + o, w6, w7, w8);
    const b = taps3(taps3(row3(r0 + p, w0, w1, w2), r1 + p, w3, w4, w5), r2 + p, w6, w7, w8);
    const d = orow + (<usize>ox << 4);
    v128.store(d, a);
    v128.store(d, b, 16); // the slot past the row's end exists (dw_c4_work_bytes)
  }
}

/**
 * Depthwise convolution with one output channel per input channel (groups = C = O), f32:
 * item = n * ceil(C / 4) + g, the output planes 4g .. 4g + 3 of image n. Any kernel size,
 * stride, dilation and padding; 3x3 with dilation 1 runs a dedicated loop.
 */
export function dw_c4_f32(
  x: usize, w: usize, bias: usize, y: usize, C: i32, H: i32, W: i32, kh: i32, kw: i32,
  sh: i32, sw: i32, dh: i32, dw: i32, pt: i32, pl: i32, outH: i32, outW: i32, work: usize,
  start: i32, count: i32,
): void {
  const groups = (C + 3) >> 2;
  const rows = rowsOf(outH, kh, sh, dh);
  const cols = colsOf(outW, kw, sw, dw);
  const rowBytes = <usize>cols << 4;
  const plane = (work + 63) & ~(<usize>63);
  const orow = plane + <usize>rows * rowBytes;
  const wq = orow + (<usize>(outW + 1) << 4);
  const taps = kh * kw;
  const inPlane = <usize>H * <usize>W * 4;
  const outPlane = <usize>outH * <usize>outW * 4;
  const fast = kh == 3 && kw == 3 && dh == 1 && dw == 1;
  for (let item = start; item < start + count; item++) {
    const n = item / groups;
    const c0 = (item % groups) << 2;
    const nc = C - c0 < 4 ? C - c0 : 4;
    // The taps of the four channels, one vector per tap; the bias, one vector.
    const ks = <usize>taps << 2;
    for (let t = 0; t < taps; t++)
      v128.store(wq + (<usize>t << 4), gather4(w + <usize>(c0 * taps + t) * 4, ks, nc));
    const bv = bias == 0 ? f32x4.splat(0) : gather4(bias + (<usize>c0 << 2), 4, nc);
    const src = x + <usize>(n * C + c0) * inPlane;
    for (let r = 0; r < rows; r++) {
      const iy = r - pt;
      const d = plane + <usize>r * rowBytes;
      if (iy < 0 || iy >= H) {
        for (let q = 0; q < cols; q++) v128.store(d + (<usize>q << 4), f32x4.splat(0));
      } else fillRow(d, src + <usize>iy * <usize>W * 4, inPlane, nc, W, pl, cols);
    }
    const dst = y + <usize>(n * C + c0) * outPlane;
    for (let oy = 0; oy < outH; oy++) {
      const r0 = plane + <usize>(oy * sh) * rowBytes;
      if (fast) row3x3(orow, r0, r0 + rowBytes, r0 + 2 * rowBytes, outW, sw, wq);
      else {
        for (let ox = 0; ox < outW; ox++) {
          let acc = f32x4.splat(0);
          for (let i = 0; i < kh; i++) {
            const row = r0 + <usize>(i * dh) * rowBytes + (<usize>(ox * sw) << 4);
            for (let j = 0; j < kw; j++)
              acc = f32x4.add(acc, f32x4.mul(v128.load(row + (<usize>(j * dw) << 4)), v128.load(wq + (<usize>(i * kw + j) << 4))));
          }
          v128.store(orow + (<usize>ox << 4), acc);
        }
      }
      storeRow(dst + (<usize>(oy * outW) << 2), outPlane, orow, nc, outW, bv);
    }
  }
}
