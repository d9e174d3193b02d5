// Shared helpers for the kernels module: pointer access and small f64 BLAS-1 style loops
// (SIMD, f64x2). Everything here works on contiguous f64 vectors given by byte offsets.

export const EPS: f64 = 2.220446049250313e-16; // 2^-52

@inline export function ldf(p: usize, i: i32): f64 {
  return load<f64>(p + ((<usize>i) << 3));
}
@inline export function stf(p: usize, i: i32, v: f64): void {
  store<f64>(p + ((<usize>i) << 3), v);
}
@inline export function ldi(p: usize, i: i32): i32 {
  return load<i32>(p + ((<usize>i) << 2));
}
@inline export function sti(p: usize, i: i32, v: i32): void {
  store<i32>(p + ((<usize>i) << 2), v);
}
/** Byte offset of element i of an f64 vector. */
@inline export function off(i: i32): usize {
  return (<usize>i) << 3;
}
/** Address of row i of a row-major f64 matrix with `ld` columns. */
@inline export function rowp(p: usize, i: i32, ld: i32): usize {
  return p + (((<usize>i) * (<usize>ld)) << 3);
}

/** sum x[i] * y[i] */
export function dot(x: usize, y: usize, n: i32): f64 {
  let a0 = f64x2.splat(0.0);
  let a1 = f64x2.splat(0.0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = off(i);
    a0 = f64x2.add(a0, f64x2.mul(v128.load(x + o), v128.load(y + o)));
    a1 = f64x2.add(a1, f64x2.mul(v128.load(x + o, 16), v128.load(y + o, 16)));
  }
  if (i + 2 <= n) {
    const o = off(i);
    a0 = f64x2.add(a0, f64x2.mul(v128.load(x + o), v128.load(y + o)));
    i += 2;
  }
  a0 = f64x2.add(a0, a1);
  let s = f64x2.extract_lane(a0, 0) + f64x2.extract_lane(a0, 1);
  if (i < n) s += ldf(x, i) * ldf(y, i);
  return s;
}

/** y[i] += a * x[i] */
export function axpy(a: f64, x: usize, y: usize, n: i32): void {
  const va = f64x2.splat(a);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = off(i);
    v128.store(y + o, f64x2.add(v128.load(y + o), f64x2.mul(va, v128.load(x + o))));
    v128.store(y + o, f64x2.add(v128.load(y + o, 16), f64x2.mul(va, v128.load(x + o, 16))), 16);
  }
  for (; i < n; i++) stf(y, i, ldf(y, i) + a * ldf(x, i));
}

/** x[i] *= a */
export function scal(a: f64, x: usize, n: i32): void {
  const va = f64x2.splat(a);
  let i = 0;
  for (; i + 2 <= n; i += 2) {
    const o = off(i);
    v128.store(x + o, f64x2.mul(v128.load(x + o), va));
  }
  if (i < n) stf(x, i, ldf(x, i) * a);
}

/** x[i] /= a */
export function divs(a: f64, x: usize, n: i32): void {
  const va = f64x2.splat(a);
  let i = 0;
  for (; i + 2 <= n; i += 2) {
    const o = off(i);
    v128.store(x + o, f64x2.div(v128.load(x + o), va));
  }
  if (i < n) stf(x, i, ldf(x, i) / a);
}

/** Plane rotation: x' = c x - s y, y' = s x + c y. */
export function rot(x: usize, y: usize, n: i32, c: f64, s: f64): void {
  const vc = f64x2.splat(c);
  const vs = f64x2.splat(s);
  let i = 0;
  for (; i + 2 <= n; i += 2) {
    const o = off(i);
    const vx = v128.load(x + o);
    const vy = v128.load(y + o);
    v128.store(x + o, f64x2.sub(f64x2.mul(vc, vx), f64x2.mul(vs, vy)));
    v128.store(y + o, f64x2.add(f64x2.mul(vs, vx), f64x2.mul(vc, vy)));
  }
  if (i < n) {
    const xv = ldf(x, i);
    const yv = ldf(y, i);
    stf(x, i, c * xv - s * yv);
    stf(y, i, s * xv + c * yv);
  }
}

/** Swap two f64 vectors. */
export function swapv(x: usize, y: usize, n: i32): void {
  let i = 0;
  for (; i + 2 <= n; i += 2) {
    const o = off(i);
    const t = v128.load(x + o);
    v128.store(x + o, v128.load(y + o));
    v128.store(y + o, t);
  }
  if (i < n) {
    const t = ldf(x, i);
    stf(x, i, ldf(y, i));
    stf(y, i, t);
  }
}

/** Fill n f64 with v. */
export function fillf(x: usize, v: f64, n: i32): void {
  for (let i = 0; i < n; i++) stf(x, i, v);
}
