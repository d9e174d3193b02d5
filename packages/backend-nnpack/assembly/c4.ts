// The c4 layout shared by the transform convolutions (conv.ts) and the depthwise kernel
// (depthwise.ts): four channels per v128, one per lane, moved to and from four NCHW planes
// through 4x4 transposes.

/** Stores the four lanes of the 4x4 block a0..a3 (rows) transposed at d, d + step, ... */
@inline export function transposeStore(d: usize, step: usize, a0: v128, a1: v128, a2: v128, a3: v128): void {
  const t0 = i32x4.shuffle(a0, a1, 0, 4, 1, 5);
  const t1 = i32x4.shuffle(a2, a3, 0, 4, 1, 5);
  const t2 = i32x4.shuffle(a0, a1, 2, 6, 3, 7);
  const t3 = i32x4.shuffle(a2, a3, 2, 6, 3, 7);
  v128.store(d, i32x4.shuffle(t0, t1, 0, 1, 4, 5));
  v128.store(d + step, i32x4.shuffle(t0, t1, 2, 3, 6, 7));
  v128.store(d + 2 * step, i32x4.shuffle(t2, t3, 0, 1, 4, 5));
  v128.store(d + 3 * step, i32x4.shuffle(t2, t3, 2, 3, 6, 7));
}

/** Element `q` of four consecutive vectors of floats (stride `ks` bytes), lanes >= `lanes` zero. */
@inline export function gather4(p: usize, ks: usize, lanes: i32): v128 {
  let v = f32x4.splat(0);
  v = v128.load32_lane(p, v, 0);
  if (lanes > 1) v = v128.load32_lane(p + ks, v, 1);
  if (lanes > 2) v = v128.load32_lane(p + 2 * ks, v, 2);
  if (lanes > 3) v = v128.load32_lane(p + 3 * ks, v, 3);
  return v;
}

/**
 * One padded c4 row of `cols` vectors at d: columns pl .. pl + W - 1 from input row `src`
 * of the nc (1..4) planes (plane stride `planeBytes`), zeros elsewhere.
 */
@inline export function fillRow(
  d: usize, src: usize, planeBytes: usize, nc: i32, W: i32, pl: i32, cols: i32,
): void {
  const lo = pl < cols ? pl : cols; // the first column holding input
  const hi = pl + W < cols ? pl + W : cols; // one past the last
  for (let q = 0; q < lo; q++) v128.store(d + (<usize>q << 4), f32x4.splat(0));
  let q = lo;
  if (nc == 4) {
    for (; q + 4 <= hi; q += 4) {
      const s = src + (<usize>(q - pl) << 2);
      transposeStore(
        d + (<usize>q << 4), 16,
        v128.load(s), v128.load(s + planeBytes), v128.load(s + 2 * planeBytes), v128.load(s + 3 * planeBytes),
      );
    }
  }
  for (; q < hi; q++) v128.store(d + (<usize>q << 4), gather4(src + (<usize>(q - pl) << 2), planeBytes, nc));
  for (q = hi > lo ? hi : lo; q < cols; q++) v128.store(d + (<usize>q << 4), f32x4.splat(0));
}

/** A c4 row of n vectors at `row`, bias bv added, into the nc planes at dst (plane stride `planeBytes`). */
@inline export function storeRow(dst: usize, planeBytes: usize, row: usize, nc: i32, n: i32, bv: v128): void {
  let c = 0;
  if (nc == 4) {
    for (; c + 4 <= n; c += 4) {
      const s = row + (<usize>c << 4);
      transposeStore(
        dst + (<usize>c << 2), planeBytes,
        f32x4.add(v128.load(s), bv), f32x4.add(v128.load(s, 16), bv),
        f32x4.add(v128.load(s, 32), bv), f32x4.add(v128.load(s, 48), bv),
      );
    }
  }
  for (; c < n; c++) {
    const v = f32x4.add(v128.load(row + (<usize>c << 4)), bv);
    const q = dst + (<usize>c << 2);
    v128.store32_lane(q, v, 0);
    if (nc > 1) v128.store32_lane(q + planeBytes, v, 1);
    if (nc > 2) v128.store32_lane(q + 2 * planeBytes, v, 2);
    if (nc > 3) v128.store32_lane(q + 3 * planeBytes, v, 3);
  }
}
