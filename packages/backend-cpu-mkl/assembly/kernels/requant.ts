// Requantization of int32 sums to uint8, for the onednn engine (whose int8 matmul and
// convolution give the sums): bit-identical to the core's requantizeInto in TypeScript,
// all in float32. requant_linear_u8 takes a linear layer's rows (channel = column);
// requant_planes_u8 a convolution's NCHW planes (channel = plane).
//
//   v = f32(acc) * mult[c] (+ bias[c]);  q = zp + nearest(v * inv), clamped to [0, 255]
//
// Four sums per vector, sixteen results per store: the clamped q (an integer in [0, 255]
// held as a float) plus 2^23 is exact, and its low byte is q, so one shuffle gathers the
// bytes where a float-to-int conversion and two narrows would take more instructions.

const MAGIC: f32 = 8388608.0; // 2^23

/** q + 2^23 for four sums (the bytes 0, 4, 8, 12 of the result are the outputs). */
// @ts-ignore: decorator
@inline function quant4(s: v128, m: v128, b: v128, hasBias: bool, inv: v128, zp: v128): v128 {
  let v = f32x4.mul(f32x4.convert_i32x4_s(s), m);
  if (hasBias) v = f32x4.add(v, b);
  let q = f32x4.add(f32x4.nearest(f32x4.mul(v, inv)), zp);
  // pmax(0, q) is 0 for NaN and negatives; pmin(255, .) caps: as the scalar tail.
  q = f32x4.pmin(f32x4.splat(255), f32x4.pmax(f32x4.splat(0), q));
  return f32x4.add(q, f32x4.splat(MAGIC));
}

/** The scalar form of quant4 for one sum. */
// @ts-ignore: decorator
@inline function quant1(s: i32, m: f32, b: f32, hasBias: bool, inv: f32, zp: f32): u8 {
  let v = <f32>s * m;
  if (hasBias) v = v + b;
  const q = nearest<f32>(v * inv) + zp;
  // NaN and values past the range never reach the conversion (NaN gives 0).
  return !(q >= 0) ? 0 : q >= 255 ? 255 : <u8><i32>q;
}

/** The 16 output bytes of four quant4 results. */
// @ts-ignore: decorator
@inline function bytes16(a: v128, b: v128, c: v128, d: v128): v128 {
  const ab = i8x16.shuffle(a, b, 0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  const cd = i8x16.shuffle(c, d, 0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  return i8x16.shuffle(ab, cd, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
}

/** The 4 output bytes of one quant4 result, in the low lane. */
// @ts-ignore: decorator
@inline function bytes4(a: v128): v128 {
  return i8x16.shuffle(a, a, 0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}

/** acc: m x n int32; mult, bias: n (bias may be 0: none); y: m x n uint8. */
export function requant_linear_u8(
  acc: usize, m: i32, n: i32, mult: usize, bias: usize, inv: f32, zp: i32, y: usize,
): void {
  const hasBias = bias != 0;
  const zpf = <f32>zp;
  const vinv = f32x4.splat(inv);
  const vzp = f32x4.splat(zpf);
  const none = f32x4.splat(0);
  for (let i = 0; i < m; i++) {
    const row = <usize>i * <usize>n;
    const a = acc + (row << 2);
    const out = y + row;
    let c = 0;
    for (; c + 16 <= n; c += 16) {
      const o = <usize>c << 2;
      const q0 = quant4(v128.load(a + o), v128.load(mult + o), hasBias ? v128.load(bias + o) : none, hasBias, vinv, vzp);
      const q1 = quant4(v128.load(a + o, 16), v128.load(mult + o, 16), hasBias ? v128.load(bias + o, 16) : none, hasBias, vinv, vzp);
      const q2 = quant4(v128.load(a + o, 32), v128.load(mult + o, 32), hasBias ? v128.load(bias + o, 32) : none, hasBias, vinv, vzp);
      const q3 = quant4(v128.load(a + o, 48), v128.load(mult + o, 48), hasBias ? v128.load(bias + o, 48) : none, hasBias, vinv, vzp);
      v128.store(out + <usize>c, bytes16(q0, q1, q2, q3));
    }
    for (; c + 4 <= n; c += 4) {
      const o = <usize>c << 2;
      const q = quant4(v128.load(a + o), v128.load(mult + o), hasBias ? v128.load(bias + o) : none, hasBias, vinv, vzp);
      v128.store32_lane(out + <usize>c, bytes4(q), 0);
    }
    for (; c < n; c++) {
      const o = <usize>c << 2;
      const b: f32 = hasBias ? load<f32>(bias + o) : 0;
      store<u8>(out + <usize>c, quant1(load<i32>(a + o), load<f32>(mult + o), b, hasBias, inv, zpf));
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
  const hasBias = bias != 0;
  const zpf = <f32>zp;
  const vinv = f32x4.splat(inv);
  const vzp = f32x4.splat(zpf);
  for (let p = 0; p < planes; p++) {
    const ch = p % oc;
    const m = load<f32>(mult + (<usize>ch << 2));
    const b: f32 = hasBias ? load<f32>(bias + (<usize>ch << 2)) : 0;
    const vm = f32x4.splat(m);
    const vb = f32x4.splat(b);
    const base = <usize>p * <usize>plane;
    const a = acc + (base << 2);
    const out = y + base;
    let i = 0;
    for (; i + 16 <= plane; i += 16) {
      const o = <usize>i << 2;
      const q0 = quant4(v128.load(a + o), vm, vb, hasBias, vinv, vzp);
      const q1 = quant4(v128.load(a + o, 16), vm, vb, hasBias, vinv, vzp);
      const q2 = quant4(v128.load(a + o, 32), vm, vb, hasBias, vinv, vzp);
      const q3 = quant4(v128.load(a + o, 48), vm, vb, hasBias, vinv, vzp);
      v128.store(out + <usize>i, bytes16(q0, q1, q2, q3));
    }
    for (; i + 4 <= plane; i += 4) {
      const q = quant4(v128.load(a + (<usize>i << 2)), vm, vb, hasBias, vinv, vzp);
      v128.store32_lane(out + <usize>i, bytes4(q), 0);
    }
    for (; i < plane; i++)
      store<u8>(out + <usize>i, quant1(load<i32>(a + (<usize>i << 2)), m, b, hasBias, inv, zpf));
  }
}
