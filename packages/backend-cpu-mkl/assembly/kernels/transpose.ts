// Byte matrix transposes, for the onednn engine's int8 convolution: its activations go to
// oneDNN channels-last (NCHW -> NHWC per image: a C x HW matrix transposed) and its
// outputs come back (HW x C transposed), where oneDNN 2.6's own uint8 reorder took
// 0.1-0.4 ms on the layers of the quantized bench.

/** Tile edge: a 64 x 64 tile of source and of destination stays in L1 while it is written. */
const TILE: i32 = 64;

/**
 * dst (cols x rows) = the transpose of src (rows x cols), bytes, both dense. In 64 x 64
 * tiles of blocks of 8 (or 4) rows x 16 columns: rounds of interleaving shuffles leave
 * each column's 8 (4) bytes together, stored as one word into its destination row;
 * scalar for the last rows % 4. Two and three rows (an RGB image) have their own shuffles.
 */
export function transpose_u8(src: usize, rows: i32, cols: i32, dst: usize): void {
  if (rows == 1) {
    memory.copy(dst, src, <usize>cols);
    return;
  }
  if (rows == 2) {
    interleave2(src, cols, dst);
    return;
  }
  if (rows == 3) {
    interleave3(src, cols, dst);
    return;
  }
  const r8 = rows & ~7;
  const r4 = rows & ~3;
  for (let r0 = 0; r0 < r8; r0 += TILE) {
    const rEnd = imin(r8, r0 + TILE);
    for (let c0 = 0; c0 < cols; c0 += TILE) {
      const cEnd = imin(cols, c0 + TILE);
      for (let r = r0; r < rEnd; r += 8) blockRow8(src, rows, cols, r, c0, cEnd, dst);
    }
  }
  if (r4 > r8) blockRow(src, rows, cols, r8, 0, cols, dst);
  for (let r = r4; r < rows; r++) {
    const s0 = src + <usize>r * <usize>cols;
    for (let c = 0; c < cols; c++)
      store<u8>(dst + <usize>c * <usize>rows + <usize>r, load<u8>(s0 + <usize>c));
  }
}

// @ts-ignore: decorator
@inline function imin(a: i32, b: i32): i32 {
  return a < b ? a : b;
}

/**
 * Rows r .. r + 7, columns c0 .. cEnd - 1: 8 x 16 blocks (three rounds of interleaving
 * shuffles leave each column's 8 bytes together, stored as one 64-bit word: half the
 * stores of 4 x 16 blocks, 1.5x as fast here), then 4 x 16 blocks for the rest.
 */
// @ts-ignore: decorator
@inline function blockRow8(
  src: usize, rows: i32, cols: i32, r: i32, c0: i32, cEnd: i32, dst: usize,
): void {
  const ld = <usize>cols;
  const ldd = <usize>rows;
  const s0 = src + <usize>r * ld;
  const d0 = dst + <usize>r;
  let c = c0;
  for (; c + 16 <= cEnd; c += 16) {
    const a = s0 + <usize>c;
    const x0 = v128.load(a);
    const x1 = v128.load(a + ld);
    const x2 = v128.load(a + 2 * ld);
    const x3 = v128.load(a + 3 * ld);
    const a0 = i8x16.shuffle(x0, x1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const a1 = i8x16.shuffle(x0, x1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const a2 = i8x16.shuffle(x2, x3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const a3 = i8x16.shuffle(x2, x3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    // b0..b3: rows r .. r + 3 of columns 0-3, 4-7, 8-11, 12-15 (a 32-bit word a column).
    const b0 = i16x8.shuffle(a0, a2, 0, 8, 1, 9, 2, 10, 3, 11);
    const b1 = i16x8.shuffle(a0, a2, 4, 12, 5, 13, 6, 14, 7, 15);
    const b2 = i16x8.shuffle(a1, a3, 0, 8, 1, 9, 2, 10, 3, 11);
    const b3 = i16x8.shuffle(a1, a3, 4, 12, 5, 13, 6, 14, 7, 15);
    const y0 = v128.load(a + 4 * ld);
    const y1 = v128.load(a + 5 * ld);
    const y2 = v128.load(a + 6 * ld);
    const y3 = v128.load(a + 7 * ld);
    const e0 = i8x16.shuffle(y0, y1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const e1 = i8x16.shuffle(y0, y1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const e2 = i8x16.shuffle(y2, y3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const e3 = i8x16.shuffle(y2, y3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    // f0..f3: rows r + 4 .. r + 7, the same columns.
    const f0 = i16x8.shuffle(e0, e2, 0, 8, 1, 9, 2, 10, 3, 11);
    const f1 = i16x8.shuffle(e0, e2, 4, 12, 5, 13, 6, 14, 7, 15);
    const f2 = i16x8.shuffle(e1, e3, 0, 8, 1, 9, 2, 10, 3, 11);
    const f3 = i16x8.shuffle(e1, e3, 4, 12, 5, 13, 6, 14, 7, 15);
    const d = d0 + <usize>c * ldd;
    // Each 32-bit pair (b, f) is one column's 8 bytes: two columns a vector.
    let v = i32x4.shuffle(b0, f0, 0, 4, 1, 5);
    v128.store64_lane(d, v, 0);
    v128.store64_lane(d + ldd, v, 1);
    v = i32x4.shuffle(b0, f0, 2, 6, 3, 7);
    v128.store64_lane(d + 2 * ldd, v, 0);
    v128.store64_lane(d + 3 * ldd, v, 1);
    v = i32x4.shuffle(b1, f1, 0, 4, 1, 5);
    v128.store64_lane(d + 4 * ldd, v, 0);
    v128.store64_lane(d + 5 * ldd, v, 1);
    v = i32x4.shuffle(b1, f1, 2, 6, 3, 7);
    v128.store64_lane(d + 6 * ldd, v, 0);
    v128.store64_lane(d + 7 * ldd, v, 1);
    v = i32x4.shuffle(b2, f2, 0, 4, 1, 5);
    v128.store64_lane(d + 8 * ldd, v, 0);
    v128.store64_lane(d + 9 * ldd, v, 1);
    v = i32x4.shuffle(b2, f2, 2, 6, 3, 7);
    v128.store64_lane(d + 10 * ldd, v, 0);
    v128.store64_lane(d + 11 * ldd, v, 1);
    v = i32x4.shuffle(b3, f3, 0, 4, 1, 5);
    v128.store64_lane(d + 12 * ldd, v, 0);
    v128.store64_lane(d + 13 * ldd, v, 1);
    v = i32x4.shuffle(b3, f3, 2, 6, 3, 7);
    v128.store64_lane(d + 14 * ldd, v, 0);
    v128.store64_lane(d + 15 * ldd, v, 1);
  }
  if (c < cEnd) {
    blockRow(src, rows, cols, r, c, cEnd, dst);
    blockRow(src, rows, cols, r + 4, c, cEnd, dst);
  }
}

/** Rows r .. r + 3, columns c0 .. cEnd - 1: 4 x 16 blocks, then single columns. */
// @ts-ignore: decorator
@inline function blockRow(
  src: usize, rows: i32, cols: i32, r: i32, c0: i32, cEnd: i32, dst: usize,
): void {
  const ld = <usize>cols;
  const ldd = <usize>rows;
  const s0 = src + <usize>r * ld;
  const d0 = dst + <usize>r;
  let c = c0;
  for (; c + 16 <= cEnd; c += 16) {
    const a = s0 + <usize>c;
    const x0 = v128.load(a);
    const x1 = v128.load(a + ld);
    const x2 = v128.load(a + 2 * ld);
    const x3 = v128.load(a + 3 * ld);
    // Bytes of rows 0/1 and 2/3 interleaved, then their 16-bit pairs: word j of u_k is
    // column 4k + j's bytes of rows r .. r + 3.
    const t0 = i8x16.shuffle(x0, x1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const t1 = i8x16.shuffle(x0, x1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const t2 = i8x16.shuffle(x2, x3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const t3 = i8x16.shuffle(x2, x3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const u0 = i16x8.shuffle(t0, t2, 0, 8, 1, 9, 2, 10, 3, 11);
    const u1 = i16x8.shuffle(t0, t2, 4, 12, 5, 13, 6, 14, 7, 15);
    const u2 = i16x8.shuffle(t1, t3, 0, 8, 1, 9, 2, 10, 3, 11);
    const u3 = i16x8.shuffle(t1, t3, 4, 12, 5, 13, 6, 14, 7, 15);
    const d = d0 + <usize>c * ldd;
    v128.store32_lane(d, u0, 0);
    v128.store32_lane(d + ldd, u0, 1);
    v128.store32_lane(d + 2 * ldd, u0, 2);
    v128.store32_lane(d + 3 * ldd, u0, 3);
    v128.store32_lane(d + 4 * ldd, u1, 0);
    v128.store32_lane(d + 5 * ldd, u1, 1);
    v128.store32_lane(d + 6 * ldd, u1, 2);
    v128.store32_lane(d + 7 * ldd, u1, 3);
    v128.store32_lane(d + 8 * ldd, u2, 0);
    v128.store32_lane(d + 9 * ldd, u2, 1);
    v128.store32_lane(d + 10 * ldd, u2, 2);
    v128.store32_lane(d + 11 * ldd, u2, 3);
    v128.store32_lane(d + 12 * ldd, u3, 0);
    v128.store32_lane(d + 13 * ldd, u3, 1);
    v128.store32_lane(d + 14 * ldd, u3, 2);
    v128.store32_lane(d + 15 * ldd, u3, 3);
  }
  for (; c < cEnd; c++) {
    const a = s0 + <usize>c;
    const d = d0 + <usize>c * ldd;
    store<u8>(d, load<u8>(a));
    store<u8>(d + 1, load<u8>(a + ld));
    store<u8>(d + 2, load<u8>(a + 2 * ld));
    store<u8>(d + 3, load<u8>(a + 3 * ld));
  }
}

/** Two rows: dst = a0 b0 a1 b1 ... */
function interleave2(src: usize, cols: i32, dst: usize): void {
  const b = src + <usize>cols;
  let c = 0;
  for (; c + 16 <= cols; c += 16) {
    const x = v128.load(src + <usize>c);
    const y = v128.load(b + <usize>c);
    const d = dst + (<usize>c << 1);
    v128.store(d, i8x16.shuffle(x, y, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
    v128.store(d, i8x16.shuffle(x, y, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), 16);
  }
  for (; c < cols; c++) {
    store<u8>(dst + (<usize>c << 1), load<u8>(src + <usize>c));
    store<u8>(dst + (<usize>c << 1) + 1, load<u8>(b + <usize>c));
  }
}

/**
 * Three rows: dst = a0 b0 c0 a1 b1 c1 ... Each 16 output bytes take two shuffles: rows a
 * and b into place (the c slots taken from anywhere), then row c's bytes over those slots.
 */
function interleave3(src: usize, cols: i32, dst: usize): void {
  const b = src + <usize>cols;
  const e = b + <usize>cols;
  let c = 0;
  for (; c + 16 <= cols; c += 16) {
    const x = v128.load(src + <usize>c);
    const y = v128.load(b + <usize>c);
    const z = v128.load(e + <usize>c);
    const d = dst + <usize>c * 3;
    // Output bytes 0-15: columns 0-5 (a0 b0 c0 ... a5); 16-31: 5-10; 32-47: 10-15.
    const p0 = i8x16.shuffle(x, y, 0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5);
    v128.store(d, i8x16.shuffle(p0, z, 0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15));
    const p1 = i8x16.shuffle(x, y, 21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26);
    v128.store(d, i8x16.shuffle(p1, z, 0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15), 16);
    const p2 = i8x16.shuffle(x, y, 0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0);
    v128.store(d, i8x16.shuffle(p2, z, 26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31), 32);
  }
  for (; c < cols; c++) {
    const d = dst + <usize>c * 3;
    store<u8>(d, load<u8>(src + <usize>c));
    store<u8>(d + 1, load<u8>(b + <usize>c));
    store<u8>(d + 2, load<u8>(e + <usize>c));
  }
}

/** Tile edge for f32: a 32 x 32 tile of source and of destination (4 KiB each) stays in L1. */
const TILE_F32: i32 = 32;

/**
 * dst (cols x rows) = the transpose of src (rows x cols), f32, rows lds and ldd elements
 * apart (a band of rows of a larger matrix, for a thread's share): conv2d's activations to
 * and from oneDNN's channels-last layout (a C x HW matrix per image), where oneDNN 2.6's f32
 * reorder is about half of a depthwise layer's time. 4 x 4 blocks (eight interleaving
 * shuffles) in 32 x 32 tiles; scalar for the rows and columns past a multiple of four.
 */
export function transpose_f32(src: usize, rows: i32, cols: i32, lds: i32, dst: usize, ldd: i32): void {
  const ls = <usize>lds << 2;
  const ld = <usize>ldd << 2;
  const r4 = rows & ~3;
  const c4 = cols & ~3;
  for (let r0 = 0; r0 < r4; r0 += TILE_F32) {
    const rEnd = imin(r4, r0 + TILE_F32);
    for (let c0 = 0; c0 < c4; c0 += TILE_F32) {
      const cEnd = imin(c4, c0 + TILE_F32);
      // Columns outer: a destination row's pieces are written one after another, so its
      // cache lines fill at once (1.3x on a 16 x 12544 band, 1.5x on its way back, Zen 4).
      for (let c = c0; c < cEnd; c += 4) {
        for (let r = r0; r < rEnd; r += 4) {
          const d = dst + (<usize>r << 2);
          const a = src + <usize>r * ls + (<usize>c << 2);
          const x0 = v128.load(a);
          const x1 = v128.load(a + ls);
          const x2 = v128.load(a + 2 * ls);
          const x3 = v128.load(a + 3 * ls);
          const t0 = i32x4.shuffle(x0, x1, 0, 4, 1, 5);
          const t1 = i32x4.shuffle(x2, x3, 0, 4, 1, 5);
          const t2 = i32x4.shuffle(x0, x1, 2, 6, 3, 7);
          const t3 = i32x4.shuffle(x2, x3, 2, 6, 3, 7);
          const o = d + <usize>c * ld;
          v128.store(o, i32x4.shuffle(t0, t1, 0, 1, 4, 5));
          v128.store(o + ld, i32x4.shuffle(t0, t1, 2, 3, 6, 7));
          v128.store(o + 2 * ld, i32x4.shuffle(t2, t3, 0, 1, 4, 5));
          v128.store(o + 3 * ld, i32x4.shuffle(t2, t3, 2, 3, 6, 7));
        }
      }
    }
  }
  // The columns past c4 of the rows before r4, then the rows past r4.
  for (let r = 0; r < rows; r++)
    for (let c = r < r4 ? c4 : 0; c < cols; c++)
      store<f32>(dst + <usize>c * ld + (<usize>r << 2), load<f32>(src + <usize>r * ls + (<usize>c << 2)));
}
