/** Reference kernels: matmul, elementwise, softmax. Plain TypeScript, float64 accumulation. */
import type { BinaryParams, UnaryParams } from "../ops/elementwise.ts";
import type { MatmulParams } from "../ops/matmul.ts";
import type { SoftmaxParams } from "../ops/softmax.ts";
import {
  contiguousStrides,
  forEachIndex,
  forEachIndexPair,
  type Tensor,
} from "../tensor/tensor.ts";
import { batchOffsets, leadingBroadcastStrides, output, reader, writer } from "./access.ts";

export function matmulReference(p: MatmulParams): Tensor {
  const { m, k, n, batchShape, aShape, aStrides, bShape, bStrides } = p;
  const out = output(p.outShape, p.dtype);
  const A = reader(p.a);
  const B = reader(p.b);
  const W = writer(out);
  const ra = aShape.length;
  const rb = bShape.length;
  const [aOff, bOff] = batchOffsets(batchShape, [
    leadingBroadcastStrides(aShape.slice(0, -2), aStrides.slice(0, -2), batchShape),
    leadingBroadcastStrides(bShape.slice(0, -2), bStrides.slice(0, -2), batchShape),
  ]);
  const as0 = aStrides[ra - 2];
  const as1 = aStrides[ra - 1];
  const bs0 = bStrides[rb - 2];
  const bs1 = bStrides[rb - 1];
  let o = 0;
  for (let bi = 0; bi < aOff.length; bi++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let acc = 0;
        let pa = aOff[bi] + i * as0;
        let pb = bOff[bi] + j * bs1;
        for (let q = 0; q < k; q++, pa += as1, pb += bs0) acc += A(pa) * B(pb);
        W(o++, acc);
      }
    }
  }
  return out;
}

function binary(p: BinaryParams, f: (x: number, y: number) => number): Tensor {
  const out = output(p.outShape, p.dtype);
  const A = reader(p.a);
  const B = reader(p.b);
  const W = writer(out);
  const sa = leadingBroadcastStrides(p.a.shape, p.a.strides, p.outShape);
  const sb = leadingBroadcastStrides(p.b.shape, p.b.strides, p.outShape);
  // Walk the output once, tracking both operands' positions (no table of them: one entry
  // per output element does not fit V8's arrays past 2^27 elements).
  let i = 0;
  forEachIndexPair(p.outShape, sa, sb, (pa, pb) => W(i++, f(A(pa), B(pb))));
  return out;
}

export const addReference = (p: BinaryParams): Tensor => binary(p, (x, y) => x + y);
// int32 products wrap as torch's do: Math.imul keeps the low 32 bits, which a float64
// product past 2^53 has already lost.
export const mulReference = (p: BinaryParams): Tensor =>
  binary(p, p.dtype === "int32" ? Math.imul : (x, y) => x * y);

function unary(p: UnaryParams, f: (x: number) => number): Tensor {
  const out = output(p.x.shape, p.dtype);
  const X = reader(p.x);
  const W = writer(out);
  forEachIndex(p.x.shape, p.x.strides, (pos, i) => W(i, f(X(pos))));
  return out;
}

// torch's relu is clamp_min(x, 0): only x < 0 becomes 0, so NaN and -0 pass through.
export const reluReference = (p: UnaryParams): Tensor => unary(p, (x) => (x < 0 ? 0 : x));

/** erf to ~1e-15 relative: series near 0, continued fraction (Lentz) in the tails. */
export function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax < 2.5) {
    // erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (2n+1)!!: every term has x's sign, so
    // nothing cancels (Taylor's alternating terms reach ~e^(x^2) and lost ~26 ulp near 2.5).
    const x2 = x * x;
    let term = x;
    let sum = x;
    for (let n = 1; n < 200; n++) {
      term *= (2 * x2) / (2 * n + 1);
      sum += term;
      if (Math.abs(term) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * Math.exp(-x2) * sum;
  }
  if (ax > 6) return Math.sign(x);
  return Math.sign(x) * (1 - erfcContinuedFraction(ax));
}

/**
 * erfc(z) for z >= 1 to ~1e-16 relative: exp(-z^2)/sqrt(pi) * 1/(z + 1/2/(z + 1/(z + 3/2/(z + ...))))
 * by Lentz's method (under 200 terms from z = 1, fewer as z grows).
 */
function erfcContinuedFraction(z: number): number {
  let f = z;
  const tiny = 1e-300;
  let C = f;
  let D = 0;
  for (let n = 1; n < 300; n++) {
    const an = n / 2;
    D = z + an * D;
    D = D === 0 ? tiny : 1 / D;
    C = z + an / C;
    if (C === 0) C = tiny;
    const delta = C * D;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return expNegSquare(z) / Math.sqrt(Math.PI) / f;
}

/** The rounding error of the product a * b = p (Dekker's two-product: JS has no fma); |a|, |b| < 2^995. */
function productError(a: number, b: number, p: number): number {
  const SPLIT = 134217729; // 2^27 + 1
  const ca = SPLIT * a;
  const ah = ca - (ca - a);
  const al = a - ah;
  const cb = SPLIT * b;
  const bh = cb - (cb - b);
  const bl = b - bh;
  return ah * bh - p + ah * bl + al * bh + al * bl;
}

/**
 * exp(-z^2) with the rounding of z^2 taken back: exp's relative error is the absolute error
 * of its argument, z^2 eps (7e-14 at z = 26, where gelu's tail ends).
 */
function expNegSquare(z: number): number {
  const square = z * z;
  if (!(square < 4096)) return Math.exp(-square); // 0 or NaN either way
  return Math.exp(-square) * (1 - productError(z, z, square));
}

// 1 / sqrt 2 = SQRT1_2 + INV_SQRT2_LO, a double-double.
const INV_SQRT2_LO = -4.833646656726457e-17;

/**
 * 0.5 x (1 + erf(x / sqrt 2)). Where erf(x / sqrt 2) <= -erf(1) that is 0.5 x erfc(-x / sqrt 2),
 * taken straight from the continued fraction: 1 + erf cancelled there (2e-13 relative near
 * x = -3.5, all of it past x = -8.5 where 1 + erf rounds to 0 but gelu is ~1e-16 and smaller).
 * erfc multiplies its argument's rounding error by 2 z^2 (2e-13 at x = -37), so x / sqrt 2 is
 * carried as zh + zl and erfc corrected to first order: erfc(-zh - zl) = erfc(-zh) + zl erfc'.
 */
function geluExact(x: number): number {
  const z = x / Math.SQRT2;
  if (z > -1) return 0.5 * x * (1 + erf(z));
  if (!(x > -64)) return 0.5 * x * erfcContinuedFraction(-z); // gelu underflows to 0 there
  const zh = x * Math.SQRT1_2;
  const zl = productError(x, Math.SQRT1_2, zh) + x * INV_SQRT2_LO;
  const slope = (2 / Math.sqrt(Math.PI)) * Math.exp(-zh * zh);
  return 0.5 * x * (erfcContinuedFraction(-zh) + zl * slope);
}

/**
 * 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), as x / (1 + exp(-2u)): the same
 * value, but 1 + tanh(u) cancelled for negative x (5e-10 relative at x = -5, and 0 from
 * x = -6.5 on, where gelu is still 1e-13 and far above float32's smallest).
 */
function geluTanh(x: number): number {
  const u = Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x);
  return x / (1 + Math.exp(-2 * u));
}

export const geluReference = (p: UnaryParams): Tensor =>
  unary(p, p.approximate === "tanh" ? geluTanh : geluExact);

export function softmaxReference(p: SoftmaxParams): Tensor {
  const { x, dim, log } = p;
  const out = output(x.shape, p.dtype);
  const X = reader(x);
  const W = writer(out);
  if (x.rank === 0) {
    // x - max(x) is NaN for a non-finite x: NaN, as torch (and every WASM kernel) gives.
    const shifted = X(0) - X(0);
    W(0, log ? shifted : Math.exp(shifted));
    return out;
  }
  const len = x.shape[dim];
  const outer = x.shape.filter((_, i) => i !== dim);
  const xs = x.strides.filter((_, i) => i !== dim);
  const os = contiguousStrides(x.shape).filter((_, i) => i !== dim);
  const sx = x.strides[dim];
  const so = contiguousStrides(x.shape)[dim];
  // Input and output positions walk together: no table of rows (120 million rows of a
  // [2, 1.2e8] softmax over dim 0 made V8 abort the process building one).
  forEachIndexPair(outer, xs, os, (base, outBase) => {
    let max = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < len; i++) max = Math.max(max, X(base + i * sx));
    let sum = 0;
    for (let i = 0; i < len; i++) sum += Math.exp(X(base + i * sx) - max);
    // Shift by max and divide by the sum (never add log(sum) back to max: at 3e38 the
    // addition rounds log(sum) away and [3e38, 3e38, 0] would come out [1, 1, 0]).
    const logSum = Math.log(sum);
    for (let i = 0; i < len; i++) {
      const shifted = X(base + i * sx) - max;
      W(outBase + i * so, log ? shifted - logSum : Math.exp(shifted) / sum);
    }
  });
  return out;
}
