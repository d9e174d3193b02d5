// Shifted copies of f32 planes, zero outside the source: a convolution's input as the
// 3x3 Winograd kernel over a larger kernel's blocks sees it (src/dnnl/kernel-blocks.ts).

/**
 * For each of `planes` planes (src: h x w, dst: rows x cols, each dense, one after the
 * other): dst[u][v] = src[u + dy][v + dx] where that lies inside src, else 0.
 */
export function shifted_planes_f32(
  src: usize,
  planes: i32,
  h: i32,
  w: i32,
  dy: i32,
  dx: i32,
  dst: usize,
  rows: i32,
  cols: i32,
): void {
  // The columns a source row covers: [v0, v1) of each destination row.
  const v0 = imin(cols, imax(0, -dx));
  const v1 = imax(v0, imin(cols, w - dx));
  const row = (<usize>cols) << 2;
  for (let p = 0; p < planes; p++) {
    const s = src + (<usize>p * <usize>h * <usize>w << 2);
    const d = dst + (<usize>p * <usize>rows * <usize>cols << 2);
    for (let u = 0; u < rows; u++) {
      const out = d + <usize>u * row;
      const sy = u + dy;
      if (sy < 0 || sy >= h || v1 == v0) {
        memory.fill(out, 0, row);
        continue;
      }
      if (v0 > 0) memory.fill(out, 0, (<usize>v0) << 2);
      memory.copy(
        out + ((<usize>v0) << 2),
        s + ((<usize>sy * <usize>w + <usize>(v0 + dx)) << 2),
        (<usize>(v1 - v0)) << 2,
      );
      if (v1 < cols) memory.fill(out + ((<usize>v1) << 2), 0, (<usize>(cols - v1)) << 2);
    }
  }
}

// @ts-ignore: decorator
@inline function imin(a: i32, b: i32): i32 {
  return a < b ? a : b;
}

// @ts-ignore: decorator
@inline function imax(a: i32, b: i32): i32 {
  return a > b ? a : b;
}
