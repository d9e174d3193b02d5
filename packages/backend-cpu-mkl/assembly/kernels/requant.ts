// Requantization of int32 sums to uint8, for the onednn engine (whose int8 GEMM and
// convolution give the sums): bit-identical to the core's requantizeInto in TypeScript,
// all in float32. requant_linear_u8 takes a linear layer's rows; requant_planes_u8 a
// convolution's NCHW planes.
//
//   s = acc[i][c] - xzp * colsum[c]                     (exact int32; colsum may be 0: none)
//   v = f32(s) * mult[c] (+ bias[c]);  q = zp + nearest(v * inv), clamped to [0, 255]

/** acc: m x n int32; colsum, mult, bias: n (colsum and bias may be 0); y: m x n uint8. */
export function requant_linear_u8(
  acc: usize, m: i32, n: i32, colsum: usize, xzp: i32, mult: usize, bias: usize, inv: f32,
  zp: i32, y: usize,
): void {
  const zpf = <f32>zp;
  const n4 = n & ~3;
  const vxzp = i32x4.splat(xzp);
  const vinv = f32x4.splat(inv);
  const vzp = f32x4.splat(zpf);
  const lo = f32x4.splat(0);
  const hi = f32x4.splat(255);
  for (let i = 0; i < m; i++) {
    const row = <usize>i * <usize>n;
    let c = 0;
    for (; c < n4; c += 4) {
      const o = <usize>c << 2;
      let s = v128.load(acc + ((row + <usize>c) << 2));
      if (colsum != 0) s = i32x4.sub(s, i32x4.mul(vxzp, v128.load(colsum + o)));
      let v = f32x4.mul(f32x4.convert_i32x4_s(s), v128.load(mult + o));
      if (bias != 0) v = f32x4.add(v, v128.load(bias + o));
      let q = f32x4.add(f32x4.nearest(f32x4.mul(v, vinv)), vzp);
      // pmax(0, q) is 0 for NaN and negatives; pmin(255, .) caps: as the scalar tail.
      q = f32x4.pmin(hi, f32x4.pmax(lo, q));
      const w = i32x4.trunc_sat_f32x4_s(q);
      const b = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(w, w), i16x8.splat(0));
      v128.store32_lane(y + row + <usize>c, b, 0);
    }
    for (; c < n; c++) {
      const o = <usize>c << 2;
      let s = load<i32>(acc + ((row + <usize>c) << 2));
      if (colsum != 0) s -= xzp * load<i32>(colsum + o);
      let v = <f32>s * load<f32>(mult + o);
      if (bias != 0) v = v + load<f32>(bias + o);
      const q = nearest<f32>(v * inv) + zpf;
      // NaN and values past the range never reach the conversion (NaN gives 0).
      store<u8>(y + row + <usize>c, !(q >= 0) ? 0 : q >= 255 ? 255 : <u8><i32>q);
    }
  }
}

/**
 * acc: `planes` planes of `plane` int32 (NCHW: plane p is channel p % oc); mult, bias: oc
 * (bias may be 0: none); y: the same planes in uint8.
 */
export function requant_planes_u8(
  acc: usize, planes: i32, plane: i32, oc: i32, mult: usize, bias: usize, inv: f32, zp: i32,
  y: usize,
): void {
  const zpf = <f32>zp;
  const n4 = plane & ~3;
  const vinv = f32x4.splat(inv);
  const vzp = f32x4.splat(zpf);
  const lo = f32x4.splat(0);
  const hi = f32x4.splat(255);
  for (let p = 0; p < planes; p++) {
    const c = p % oc;
    const m = load<f32>(mult + (<usize>c << 2));
    const b: f32 = bias != 0 ? load<f32>(bias + (<usize>c << 2)) : 0;
    const vm = f32x4.splat(m);
    const vb = f32x4.splat(b);
    const base = <usize>p * <usize>plane;
    let i = 0;
    for (; i < n4; i += 4) {
      let v = f32x4.mul(f32x4.convert_i32x4_s(v128.load(acc + ((base + <usize>i) << 2))), vm);
      if (bias != 0) v = f32x4.add(v, vb);
      let q = f32x4.add(f32x4.nearest(f32x4.mul(v, vinv)), vzp);
      // pmax(0, q) is 0 for NaN and negatives; pmin(255, .) caps: as the scalar tail.
      q = f32x4.pmin(hi, f32x4.pmax(lo, q));
      const w = i32x4.trunc_sat_f32x4_s(q);
      const u = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(w, w), i16x8.splat(0));
      v128.store32_lane(y + base + <usize>i, u, 0);
    }
    for (; i < plane; i++) {
      let v = <f32>load<i32>(acc + ((base + <usize>i) << 2)) * m;
      if (bias != 0) v = v + b;
      const q = nearest<f32>(v * inv) + zpf;
      store<u8>(y + base + <usize>i, !(q >= 0) ? 0 : q >= 255 ? 255 : <u8><i32>q);
    }
  }
}
