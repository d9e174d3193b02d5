// Elementwise kernels and softmax, f32 and f64. Contiguous buffers; out may alias an input.
import { expv, expd, logd, erfd, erfcd } from "./mathx";

// ---------------------------------------------------------------------------------------------
// Binary ops (generic over f32/f64 through AS's generic v128 ops)

@inline function shiftOf<T>(): usize {
  return sizeof<T>() == 8 ? 3 : 2;
}

@inline function addN<T>(a: usize, b: usize, out: usize, n: i32): void {
  const L = <i32>(16 / sizeof<T>());
  const sh = shiftOf<T>();
  let i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const o = (<usize>i) << sh;
    const r0 = v128.add<T>(v128.load(a + o), v128.load(b + o));
    const r1 = v128.add<T>(v128.load(a + o, 16), v128.load(b + o, 16));
    v128.store(out + o, r0);
    v128.store(out + o, r1, 16);
  }
  for (; i < n; i++) {
    const o = (<usize>i) << sh;
    store<T>(out + o, load<T>(a + o) + load<T>(b + o));
  }
}

@inline function mulN<T>(a: usize, b: usize, out: usize, n: i32): void {
  const L = <i32>(16 / sizeof<T>());
  const sh = shiftOf<T>();
  let i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const o = (<usize>i) << sh;
    const r0 = v128.mul<T>(v128.load(a + o), v128.load(b + o));
    const r1 = v128.mul<T>(v128.load(a + o, 16), v128.load(b + o, 16));
    v128.store(out + o, r0);
    v128.store(out + o, r1, 16);
  }
  for (; i < n; i++) {
    const o = (<usize>i) << sh;
    store<T>(out + o, load<T>(a + o) * load<T>(b + o));
  }
}

function addRowN<T>(a: usize, row: usize, out: usize, rows: i32, cols: i32): void {
  if (cols <= 0) return;
  const stride = (<usize>cols) << shiftOf<T>();
  for (let r = 0; r < rows; r++) {
    const o = (<usize>r) * stride;
    addN<T>(a + o, row, out + o, cols);
  }
}

function mulRowN<T>(a: usize, row: usize, out: usize, rows: i32, cols: i32): void {
  if (cols <= 0) return;
  const stride = (<usize>cols) << shiftOf<T>();
  for (let r = 0; r < rows; r++) {
    const o = (<usize>r) * stride;
    mulN<T>(a + o, row, out + o, cols);
  }
}

export function add_f32(a: usize, b: usize, out: usize, n: i32): void {
  addN<f32>(a, b, out, n);
}
export function add_f64(a: usize, b: usize, out: usize, n: i32): void {
  addN<f64>(a, b, out, n);
}
export function mul_f32(a: usize, b: usize, out: usize, n: i32): void {
  mulN<f32>(a, b, out, n);
}
export function mul_f64(a: usize, b: usize, out: usize, n: i32): void {
  mulN<f64>(a, b, out, n);
}
export function addRow_f32(a: usize, row: usize, out: usize, rows: i32, cols: i32): void {
  addRowN<f32>(a, row, out, rows, cols);
}
export function addRow_f64(a: usize, row: usize, out: usize, rows: i32, cols: i32): void {
  addRowN<f64>(a, row, out, rows, cols);
}
export function mulRow_f32(a: usize, row: usize, out: usize, rows: i32, cols: i32): void {
  mulRowN<f32>(a, row, out, rows, cols);
}
export function mulRow_f64(a: usize, row: usize, out: usize, rows: i32, cols: i32): void {
  mulRowN<f64>(a, row, out, rows, cols);
}

// ---------------------------------------------------------------------------------------------
// Unary ops

/**
 * relu as torch's clamp_min(x, 0): x < 0 ? 0 : x, so NaN and -0 pass through unchanged.
 * pmax(x, 0) is exactly that (x < 0 ? 0 : x); max() would turn -0 into +0.
 */
export function relu_f32(x: usize, out: usize, n: i32): void {
  const z = f32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = (<usize>i) << 2;
    v128.store(out + o, f32x4.pmax(v128.load(x + o), z));
  }
  for (; i < n; i++) {
    const o = (<usize>i) << 2;
    const v = load<f32>(x + o);
    store<f32>(out + o, v < 0 ? <f32>0 : v);
  }
}

export function relu_f64(x: usize, out: usize, n: i32): void {
  const z = f64x2.splat(0);
  let i = 0;
  for (; i + 2 <= n; i += 2) {
    const o = (<usize>i) << 3;
    v128.store(out + o, f64x2.pmax(v128.load(x + o), z));
  }
  for (; i < n; i++) {
    const o = (<usize>i) << 3;
    const v = load<f64>(x + o);
    store<f64>(out + o, v < 0 ? 0.0 : v);
  }
}

const SQRT_2_OVER_PI: f64 = 0.7978845608028654;
const TWO_OVER_SQRT_PI: f64 = 1.1283791670955126;
// 1/sqrt(2) = INV_SQRT2_HI + INV_SQRT2_LO (double-double)
const INV_SQRT2_HI: f64 = Math.SQRT1_2;
const INV_SQRT2_LO: f64 = -4.833646656726457e-17;

/** Rounding error of the product a*b = p (Dekker's two-product, no FMA); |a|, |b| < 2^995. */
@inline function twoProdErr(a: f64, b: f64, p: f64): f64 {
  const SPLIT: f64 = 134217729.0; // 2^27 + 1
  const ca = SPLIT * a;
  const ah = ca - (ca - a);
  const al = a - ah;
  const cb = SPLIT * b;
  const bh = cb - (cb - b);
  const bl = b - bh;
  return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

/**
 * Exact gelu, 0.5 x (1 + erf(x / sqrt 2)), accurate to a few ulp everywhere: the erfc form for
 * x < 0 (no cancellation in the tail), and x / sqrt 2 carried as a double-double zh + zl with
 * the first-order correction zl * erf'(zh), since erfc amplifies the rounding error of its
 * argument by ~2 z^2.
 */
@inline function gelu64(x: f64): f64 {
  const zh = x * INV_SQRT2_HI;
  // For x >= 0 (and small |x|) 1 + erf damps the argument's rounding error (factor < 0.5), so
  // the correction only matters in the negative tail.
  if (x >= -0.5) return 0.5 * x * (1.0 + erfd(zh));
  let corr = 0.0;
  if (x > -64.0) {
    const zl = twoProdErr(x, INV_SQRT2_HI, zh) + x * INV_SQRT2_LO;
    corr = zl * TWO_OVER_SQRT_PI * expd(-zh * zh);
  }
  return 0.5 * x * (erfcd(-zh) + corr);
}

/** tanh-approximated gelu, 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3). */
@inline function geluTanh64(x: f64): f64 {
  const u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
  return x / (1.0 + expd(-2.0 * u));
}

export function gelu_f32(x: usize, out: usize, n: i32): void {
  for (let i = 0; i < n; i++) {
    const o = (<usize>i) << 2;
    store<f32>(out + o, <f32>gelu64(<f64>load<f32>(x + o)));
  }
}
export function gelu_f64(x: usize, out: usize, n: i32): void {
  for (let i = 0; i < n; i++) {
    const o = (<usize>i) << 3;
    store<f64>(out + o, gelu64(load<f64>(x + o)));
  }
}
export function geluTanh_f32(x: usize, out: usize, n: i32): void {
  for (let i = 0; i < n; i++) {
    const o = (<usize>i) << 2;
    store<f32>(out + o, <f32>geluTanh64(<f64>load<f32>(x + o)));
  }
}
export function geluTanh_f64(x: usize, out: usize, n: i32): void {
  for (let i = 0; i < n; i++) {
    const o = (<usize>i) << 3;
    store<f64>(out + o, geluTanh64(load<f64>(x + o)));
  }
}

// ---------------------------------------------------------------------------------------------
// Softmax over the last (contiguous) dimension. f32 computes in f64 internally.

function rowMax_f32(x: usize, cols: i32): f32 {
  let i = 0;
  let m: f32 = -Infinity;
  if (cols >= 4) {
    let vm = v128.load(x);
    i = 4;
    for (; i + 4 <= cols; i += 4) vm = f32x4.max(vm, v128.load(x + ((<usize>i) << 2)));
    m = max<f32>(max<f32>(f32x4.extract_lane(vm, 0), f32x4.extract_lane(vm, 1)), max<f32>(f32x4.extract_lane(vm, 2), f32x4.extract_lane(vm, 3)));
  }
  for (; i < cols; i++) m = max<f32>(m, load<f32>(x + ((<usize>i) << 2)));
  return m;
}

function rowMax_f64(x: usize, cols: i32): f64 {
  let i = 0;
  let m: f64 = -Infinity;
  if (cols >= 2) {
    let vm = v128.load(x);
    i = 2;
    for (; i + 2 <= cols; i += 2) vm = f64x2.max(vm, v128.load(x + ((<usize>i) << 3)));
    m = max<f64>(f64x2.extract_lane(vm, 0), f64x2.extract_lane(vm, 1));
  }
  for (; i < cols; i++) m = max<f64>(m, load<f64>(x + ((<usize>i) << 3)));
  return m;
}

/** out[i] = exp(x[i] - m) (f32 storage), returns the f64 sum of the exact-ish exps. */
function expSub_f32(x: usize, out: usize, cols: i32, m: f64, store_: bool): f64 {
  const vm = f64x2.splat(m);
  let acc = f64x2.splat(0);
  let i = 0;
  for (; i + 4 <= cols; i += 4) {
    const o = (<usize>i) << 2;
    const v = v128.load(x + o);
    const lo = expv(f64x2.sub(f64x2.promote_low_f32x4(v), vm));
    const hi = expv(f64x2.sub(f64x2.promote_low_f32x4(v128.shuffle<f32>(v, v, 2, 3, 0, 1)), vm));
    acc = f64x2.add(acc, f64x2.add(lo, hi));
    if (store_) {
      const lo32 = f32x4.demote_f64x2_zero(lo);
      const hi32 = f32x4.demote_f64x2_zero(hi);
      v128.store(out + o, v128.shuffle<f32>(lo32, hi32, 0, 1, 4, 5));
    }
  }
  let s = f64x2.extract_lane(acc, 0) + f64x2.extract_lane(acc, 1);
  for (; i < cols; i++) {
    const o = (<usize>i) << 2;
    const e = expd(<f64>load<f32>(x + o) - m);
    s += e;
    if (store_) store<f32>(out + o, <f32>e);
  }
  return s;
}

export function softmax_f32(x: usize, out: usize, rows: i32, cols: i32): void {
  if (cols <= 0) return;
  const stride = (<usize>cols) << 2;
  for (let r = 0; r < rows; r++) {
    const xr = x + (<usize>r) * stride;
    const or = out + (<usize>r) * stride;
    const m = <f64>rowMax_f32(xr, cols);
    const s = expSub_f32(xr, or, cols, m, true);
    const inv = 1.0 / s;
    const vinv = f64x2.splat(inv);
    let i = 0;
    for (; i + 4 <= cols; i += 4) {
      const o = (<usize>i) << 2;
      const v = v128.load(or + o);
      const lo = f32x4.demote_f64x2_zero(f64x2.mul(f64x2.promote_low_f32x4(v), vinv));
      const hi = f32x4.demote_f64x2_zero(f64x2.mul(f64x2.promote_low_f32x4(v128.shuffle<f32>(v, v, 2, 3, 0, 1)), vinv));
      v128.store(or + o, v128.shuffle<f32>(lo, hi, 0, 1, 4, 5));
    }
    for (; i < cols; i++) {
      const o = (<usize>i) << 2;
      store<f32>(or + o, <f32>(<f64>load<f32>(or + o) * inv));
    }
  }
}

export function logSoftmax_f32(x: usize, out: usize, rows: i32, cols: i32): void {
  if (cols <= 0) return;
  const stride = (<usize>cols) << 2;
  for (let r = 0; r < rows; r++) {
    const xr = x + (<usize>r) * stride;
    const or = out + (<usize>r) * stride;
    const m = <f64>rowMax_f32(xr, cols);
    const s = expSub_f32(xr, or, cols, m, false);
    const ls = logd(s);
    for (let i = 0; i < cols; i++) {
      const o = (<usize>i) << 2;
      store<f32>(or + o, <f32>((<f64>load<f32>(xr + o) - m) - ls));
    }
  }
}

export function softmax_f64(x: usize, out: usize, rows: i32, cols: i32): void {
  if (cols <= 0) return;
  const stride = (<usize>cols) << 3;
  for (let r = 0; r < rows; r++) {
    const xr = x + (<usize>r) * stride;
    const or = out + (<usize>r) * stride;
    const m = rowMax_f64(xr, cols);
    const vm = f64x2.splat(m);
    let acc = f64x2.splat(0);
    let i = 0;
    for (; i + 2 <= cols; i += 2) {
      const o = (<usize>i) << 3;
      const e = expv(f64x2.sub(v128.load(xr + o), vm));
      acc = f64x2.add(acc, e);
      v128.store(or + o, e);
    }
    let s = f64x2.extract_lane(acc, 0) + f64x2.extract_lane(acc, 1);
    if (i < cols) {
      const o = (<usize>i) << 3;
      const e = expd(load<f64>(xr + o) - m);
      s += e;
      store<f64>(or + o, e);
    }
    const vs = f64x2.splat(s);
    i = 0;
    for (; i + 2 <= cols; i += 2) {
      const o = (<usize>i) << 3;
      v128.store(or + o, f64x2.div(v128.load(or + o), vs));
    }
    if (i < cols) {
      const o = (<usize>i) << 3;
      store<f64>(or + o, load<f64>(or + o) / s);
    }
  }
}

export function logSoftmax_f64(x: usize, out: usize, rows: i32, cols: i32): void {
  if (cols <= 0) return;
  const stride = (<usize>cols) << 3;
  for (let r = 0; r < rows; r++) {
    const xr = x + (<usize>r) * stride;
    const or = out + (<usize>r) * stride;
    const m = rowMax_f64(xr, cols);
    const vm = f64x2.splat(m);
    let acc = f64x2.splat(0);
    let i = 0;
    for (; i + 2 <= cols; i += 2) {
      acc = f64x2.add(acc, expv(f64x2.sub(v128.load(xr + ((<usize>i) << 3)), vm)));
    }
    let s = f64x2.extract_lane(acc, 0) + f64x2.extract_lane(acc, 1);
    if (i < cols) s += expd(load<f64>(xr + ((<usize>i) << 3)) - m);
    const vl = f64x2.splat(logd(s));
    i = 0;
    for (; i + 2 <= cols; i += 2) {
      const o = (<usize>i) << 3;
      v128.store(or + o, f64x2.sub(f64x2.sub(v128.load(xr + o), vm), vl));
    }
    if (i < cols) {
      const o = (<usize>i) << 3;
      store<f64>(or + o, (load<f64>(xr + o) - m) - logd(s));
    }
  }
}
