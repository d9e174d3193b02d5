import { ArgumentError, LinalgError, seededRandom } from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  cholesky,
  eigh,
  inv,
  luFactor,
  luSolve,
  qr,
  solve,
  svd,
} from "../src/reference/linalg-math.ts";

const TOL = 1e-10;
const SIZES = [0, 1, 2, 3, 7, 31, 64, 97, 256];

/** m x n matrix with entries uniform in [-1, 1). */
function random(seed: number, m: number, n: number): Float64Array {
  const rng = seededRandom(seed);
  const a = new Float64Array(m * n);
  for (let i = 0; i < a.length; i++) a[i] = 2 * rng() - 1;
  return a;
}

function matmul(a: Float64Array, b: Float64Array, m: number, k: number, n: number): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let p = 0; p < k; p++) {
      const aip = a[i * k + p];
      for (let j = 0; j < n; j++) c[i * n + j] += aip * b[p * n + j];
    }
  }
  return c;
}

function transpose(a: Float64Array, m: number, n: number): Float64Array {
  const t = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) t[j * m + i] = a[i * n + j];
  return t;
}

function eye(n: number): Float64Array {
  const e = new Float64Array(n * n);
  for (let i = 0; i < n; i++) e[i * n + i] = 1;
  return e;
}

/** Frobenius norm, scaled so that huge or tiny entries neither overflow nor underflow. */
function frob(a: Float64Array): number {
  let big = 0;
  for (const x of a) big = Math.max(big, Math.abs(x));
  if (big === 0 || !Number.isFinite(big)) return big;
  let s = 0;
  for (const x of a) s += (x / big) ** 2;
  return big * Math.sqrt(s);
}

/** ||x - y||_F / ||y||_F (absolute when y is zero). */
function relErr(x: Float64Array, y: Float64Array): number {
  expect(x.length).toBe(y.length);
  const d = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) d[i] = x[i] - y[i];
  const ny = frob(y);
  return ny > 0 ? frob(d) / ny : frob(d);
}

/** ||Q^T Q - I||_F for an m x c matrix Q: zero when its columns are orthonormal. */
function orthoErr(q: Float64Array, m: number, c: number): number {
  const qtq = matmul(transpose(q, m, c), q, c, m, c);
  const e = eye(c);
  let s = 0;
  for (let i = 0; i < qtq.length; i++) s += (qtq[i] - e[i]) ** 2;
  return Math.sqrt(s);
}

/**
 * orthoErr for a square p x p Q in O(p^2) per probe (Q^T Q costs p^3): the largest
 * |Q^T Q x - x| / |x| over random probes x, plus the exact error of every column's norm.
 */
function orthoErrProbed(q: Float64Array, p: number): number {
  let err = 0;
  for (let j = 0; j < p; j++) {
    let ss = 0;
    for (let i = 0; i < p; i++) ss += q[i * p + j] ** 2;
    err = Math.max(err, Math.abs(ss - 1));
  }
  for (let seed = 1; seed <= 2; seed++) {
    const x = random(1700 + seed, p, 1);
    const qtqx = matmul(transpose(q, p, p), matmul(q, x, p, p, 1), p, p, 1);
    err = Math.max(err, relErr(qtqx, x));
  }
  return err;
}

function symmetric(seed: number, n: number): Float64Array {
  const b = random(seed, n, n);
  const a = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) a[i * n + j] = b[i * n + j] + b[j * n + i];
  }
  return a;
}

function spd(seed: number, n: number): Float64Array {
  const b = random(seed, n, n);
  const a = matmul(b, transpose(b, n, n), n, n, n);
  for (let i = 0; i < n; i++) a[i * n + i] += n;
  return a;
}

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected a throw");
}

function expectLinalgError(fn: () => unknown, op: string, position: number | undefined): void {
  const e = catchError(fn);
  expect(e).toBeInstanceOf(LinalgError);
  expect((e as LinalgError).op).toBe(op);
  expect((e as LinalgError).position).toBe(position);
}

describe("cholesky", () => {
  for (const n of SIZES) {
    it(`reconstructs an SPD matrix, n=${n}`, () => {
      const a = spd(100 + n, n);
      const l = cholesky(a, n);
      expect(l.length).toBe(n * n);
      let lowerWithPositiveDiagonal = true;
      for (let i = 0; i < n; i++) {
        if (!(l[i * n + i] > 0)) lowerWithPositiveDiagonal = false;
        for (let j = i + 1; j < n; j++) if (l[i * n + j] !== 0) lowerWithPositiveDiagonal = false;
      }
      expect(lowerWithPositiveDiagonal).toBe(true);
      expect(relErr(matmul(l, transpose(l, n, n), n, n, n), a)).toBeLessThan(TOL);
    });
  }

  it("reads only the lower triangle", () => {
    const n = 7;
    const a = spd(5, n);
    const b = Float64Array.from(a);
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) b[i * n + j] = Number.NaN;
    expect(cholesky(b, n)).toEqual(cholesky(a, n));
  });

  it("reports the order of the first non-positive leading minor", () => {
    expectLinalgError(() => cholesky(new Float64Array([-1]), 1), "cholesky", 1);
    expectLinalgError(() => cholesky(new Float64Array([1, 2, 2, 1]), 2), "cholesky", 2);
    expectLinalgError(() => cholesky(new Float64Array([0, 0, 0, 1]), 2), "cholesky", 1);
    // Leading 2x2 block is positive definite; the full matrix is singular.
    const a = new Float64Array([4, 2, 2, 2, 2, 0, 2, 0, 1]);
    expectLinalgError(() => cholesky(a, 3), "cholesky", 3);
    const e = catchError(() => cholesky(a, 3)) as LinalgError;
    expect(e.message).toBe(
      "cholesky: the matrix is not positive definite (leading minor of order 3 is not positive)",
    );
    expectLinalgError(() => cholesky(new Float64Array([Number.NaN]), 1), "cholesky", 1);
  });

  it("rejects bad arguments", () => {
    expect(() => cholesky(new Float64Array(3), 2)).toThrow(ArgumentError);
    expect(() => cholesky(new Float64Array(0), -1)).toThrow(ArgumentError);
    expect(() => cholesky(new Float64Array(4), 1.5)).toThrow(ArgumentError);
  });
});

/** P A from getrf-style 1-based pivots applied in order. */
function permuteRows(a: Float64Array, pivots: Int32Array, n: number, cols: number): Float64Array {
  const pa = Float64Array.from(a);
  for (let i = 0; i < n; i++) {
    const p = pivots[i] - 1;
    for (let c = 0; c < cols; c++) {
      const t = pa[i * cols + c];
      pa[i * cols + c] = pa[p * cols + c];
      pa[p * cols + c] = t;
    }
  }
  return pa;
}

function unpackLU(lu: Float64Array, n: number): { l: Float64Array; u: Float64Array } {
  const l = eye(n);
  const u = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (j < i) l[i * n + j] = lu[i * n + j];
      else u[i * n + j] = lu[i * n + j];
    }
  }
  return { l, u };
}

describe("luFactor / luSolve / solve / inv", () => {
  for (const n of SIZES) {
    it(`P A = L U with partial pivoting, n=${n}`, () => {
      const a = random(200 + n, n, n);
      const before = Float64Array.from(a);
      const { lu, pivots, info } = luFactor(a, n);
      expect(a.every((x, i) => x === before[i])).toBe(true);
      expect(info).toBe(0);
      expect(pivots.length).toBe(n);
      // Pivots point at or below the current row; partial pivoting keeps |L| <= 1.
      let ok = true;
      for (let i = 0; i < n; i++) {
        if (pivots[i] < i + 1 || pivots[i] > n) ok = false;
        for (let j = 0; j < i; j++) if (Math.abs(lu[i * n + j]) > 1) ok = false;
      }
      expect(ok).toBe(true);
      const { l, u } = unpackLU(lu, n);
      expect(relErr(matmul(l, u, n, n, n), permuteRows(a, pivots, n, n))).toBeLessThan(TOL);
    });

    it(`solves A X = B, n=${n}`, () => {
      const a = random(300 + n, n, n);
      for (const nrhs of [1, 3]) {
        const b = random(400 + n, n, nrhs);
        const x = solve(a, n, b, nrhs);
        expect(x.length).toBe(n * nrhs);
        // Backward error: ||A X - B|| / (||A|| ||X||).
        const r = matmul(a, x, n, n, nrhs);
        for (let i = 0; i < r.length; i++) r[i] -= b[i];
        if (n > 0) expect(frob(r) / (frob(a) * frob(x))).toBeLessThan(TOL);
        const { lu, pivots } = luFactor(a, n);
        expect(luSolve(lu, pivots, n, b, nrhs)).toEqual(x);
      }
    });

    it(`inverts, n=${n}`, () => {
      const a = random(500 + n, n, n);
      const ai = inv(a, n);
      const prod = matmul(a, ai, n, n, n);
      if (n > 0) expect(relErr(prod, eye(n)) / (frob(a) * frob(ai))).toBeLessThan(TOL);
      else expect(ai.length).toBe(0);
    });
  }

  it("solves a known system", () => {
    const x = solve(new Float64Array([2, 1, 1, 3]), 2, new Float64Array([3, 5]), 1);
    expect(x[0]).toBeCloseTo(0.8, 14);
    expect(x[1]).toBeCloseTo(1.4, 14);
    expect(Array.from(inv(new Float64Array([4]), 1))).toEqual([0.25]);
  });

  it("factors a singular matrix without throwing and reports info", () => {
    const a = new Float64Array([1, 2, 2, 4]);
    const f = luFactor(a, 2);
    expect(f.info).toBe(2);
    expect(Array.from(f.pivots)).toEqual([2, 2]);
    const z = new Float64Array([0, 1, 0, 2]);
    const g = luFactor(z, 2);
    expect(g.info).toBe(1);
    const { l, u } = unpackLU(g.lu, 2);
    expect(relErr(matmul(l, u, 2, 2, 2), permuteRows(z, g.pivots, 2, 2))).toBeLessThan(TOL);
  });

  it("throws a positioned LinalgError for singular solve and inv", () => {
    const a = new Float64Array([1, 2, 2, 4]);
    expectLinalgError(() => solve(a, 2, new Float64Array([1, 1]), 1), "solve", 2);
    expectLinalgError(() => inv(a, 2), "inv", 2);
    const e = catchError(() => inv(a, 2)) as LinalgError;
    expect(e.message).toBe("inv: the matrix is singular (U[2,2] is exactly zero)");
    expectLinalgError(() => inv(new Float64Array(1), 1), "inv", 1);
    // Rank 2 out of 3, with every elimination step exact in floating point.
    const b = new Float64Array([1, 2, 3, 2, 4, 6, 1, 1, 1]);
    expectLinalgError(() => solve(b, 3, new Float64Array(3).fill(1), 1), "solve", 3);
  });

  it("rejects bad arguments", () => {
    expect(() => solve(new Float64Array(4), 2, new Float64Array(3), 2)).toThrow(ArgumentError);
    expect(() => luFactor(new Float64Array(5), 2)).toThrow(ArgumentError);
    const { lu } = luFactor(new Float64Array([1, 0, 0, 1]), 2);
    expect(() => luSolve(lu, new Int32Array([3, 2]), 2, new Float64Array(2), 1)).toThrow(
      ArgumentError,
    );
  });
});

function checkQR(m: number, n: number, mode: "reduced" | "complete", seed: number): void {
  const a = random(seed, m, n);
  const { q, r } = qr(a, m, n, mode);
  const k = Math.min(m, n);
  const qc = mode === "reduced" ? k : m;
  expect(q.length).toBe(m * qc);
  expect(r.length).toBe(qc * n);
  expect(relErr(matmul(q, r, m, qc, n), a)).toBeLessThan(TOL);
  expect(orthoErr(q, m, qc)).toBeLessThan(TOL);
  let upper = true;
  for (let i = 0; i < qc; i++)
    for (let j = 0; j < Math.min(i, n); j++) if (r[i * n + j] !== 0) upper = false;
  expect(upper).toBe(true);
}

describe("qr", () => {
  for (const n of SIZES) {
    it(`square, n=${n}`, () => {
      checkQR(n, n, "reduced", 600 + n);
      if (n <= 97) checkQR(n, n, "complete", 700 + n);
    });
  }

  const shapes: [number, number][] = [
    [0, 3],
    [3, 0],
    [1, 5],
    [5, 1],
    [7, 3],
    [3, 7],
    [31, 64],
    [97, 31],
  ];
  for (const [m, n] of shapes) {
    it(`rectangular ${m}x${n}, both modes`, () => {
      checkQR(m, n, "reduced", 800 + m * 7 + n);
      checkQR(m, n, "complete", 900 + m * 7 + n);
    });
  }

  it("follows LAPACK's sign convention and handles rank deficiency", () => {
    const { q, r } = qr(new Float64Array([3, 4]), 2, 1, "reduced");
    expect(r[0]).toBeCloseTo(-5, 14);
    expect(q[0]).toBeCloseTo(-0.6, 14);
    expect(q[1]).toBeCloseTo(-0.8, 14);
    // Identical columns: R[1,1] is (numerically) zero, Q stays orthonormal.
    const a = new Float64Array([1, 1, 2, 2, 3, 3]);
    const f = qr(a, 3, 2, "complete");
    expect(relErr(matmul(f.q, f.r, 3, 3, 2), a)).toBeLessThan(TOL);
    expect(orthoErr(f.q, 3, 3)).toBeLessThan(TOL);
    expect(Math.abs(f.r[3])).toBeLessThan(1e-14);
    // The zero matrix needs no reflections.
    const z = qr(new Float64Array(6), 2, 3, "reduced");
    expect(Array.from(z.q)).toEqual([1, 0, 0, 1]);
    expect(Array.from(z.r)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it("rejects bad arguments", () => {
    expect(() => qr(new Float64Array(6), 2, 2, "reduced")).toThrow(ArgumentError);
    expect(() => qr(new Float64Array(4), 2, 2, "full" as "reduced")).toThrow(ArgumentError);
  });
});

function checkEigh(a: Float64Array, n: number): { values: Float64Array; vectors: Float64Array } {
  const { values, vectors } = eigh(a, n);
  expect(values.length).toBe(n);
  expect(vectors.length).toBe(n * n);
  let ascending = true;
  for (let i = 1; i < n; i++) if (!(values[i] >= values[i - 1])) ascending = false;
  expect(ascending).toBe(true);
  const av = matmul(a, vectors, n, n, n);
  const vw = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) vw[i * n + j] = vectors[i * n + j] * values[j];
  }
  const na = frob(a);
  const diff = av.map((x, i) => x - vw[i]);
  expect(na > 0 ? frob(diff) / na : frob(diff)).toBeLessThan(TOL);
  expect(orthoErr(vectors, n, n)).toBeLessThan(TOL);
  return { values, vectors };
}

describe("eigh", () => {
  for (const n of SIZES) {
    it(`random symmetric, n=${n}`, () => {
      checkEigh(symmetric(1000 + n, n), n);
    });
  }

  it("reads only the lower triangle", () => {
    const n = 31;
    const a = symmetric(11, n);
    const b = Float64Array.from(a);
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) b[i * n + j] = 1e6 * (i - j);
    expect(eigh(b, n)).toEqual(eigh(a, n));
  });

  it("finds known and repeated eigenvalues", () => {
    const w = checkEigh(new Float64Array([2, 1, 1, 2]), 2).values;
    expect(w[0]).toBeCloseTo(1, 14);
    expect(w[1]).toBeCloseTo(3, 14);
    expect(Array.from(checkEigh(new Float64Array([5]), 1).values)).toEqual([5]);
    const id = checkEigh(eye(7), 7);
    expect(Array.from(id.values)).toEqual([1, 1, 1, 1, 1, 1, 1]);
    // Q diag(1, 1, 1, 2, 2, -3) Q^T with a random orthogonal Q.
    const n = 6;
    const q = qr(random(12, n, n), n, n, "reduced").q;
    const d = [1, 1, 1, 2, 2, -3];
    const qd = q.map((x, i) => x * d[i % n]);
    const a = matmul(qd, transpose(q, n, n), n, n, n);
    const got = checkEigh(a, n).values;
    const want = [-3, 1, 1, 1, 2, 2];
    for (let i = 0; i < n; i++) expect(Math.abs(got[i] - want[i])).toBeLessThan(1e-13);
    // Diagonal input, already out of order; zero matrix.
    expect(Array.from(checkEigh(new Float64Array([3, 0, 0, -1]), 2).values)).toEqual([-1, 3]);
    const z = checkEigh(new Float64Array(9), 3);
    expect(Array.from(z.values)).toEqual([0, 0, 0]);
  });

  it("scales: tiny and huge entries", () => {
    for (const s of [1e-200, 1e200]) {
      const a = symmetric(13, 5).map((x) => x * s);
      checkEigh(a, 5);
    }
  });

  it("throws LinalgError on NaN input", () => {
    const e = catchError(() => eigh(new Float64Array([1, 0, Number.NaN, 1]), 2));
    expect(e).toBeInstanceOf(LinalgError);
    expect((e as LinalgError).op).toBe("eigh");
  });
});

function checkSvd(a: Float64Array, m: number, n: number, full: boolean): Float64Array {
  const { u, s, vh } = svd(a, m, n, full);
  const k = Math.min(m, n);
  const uc = full ? m : k;
  const vr = full ? n : k;
  expect(u.length).toBe(m * uc);
  expect(s.length).toBe(k);
  expect(vh.length).toBe(vr * n);
  let descending = true;
  for (let i = 0; i < k; i++) {
    if (!(s[i] >= 0) || (i > 0 && !(s[i] <= s[i - 1]))) descending = false;
  }
  expect(descending).toBe(true);
  // U[:, :k] diag(s) Vh[:k, :]
  const us = new Float64Array(m * k);
  for (let i = 0; i < m; i++) for (let j = 0; j < k; j++) us[i * k + j] = u[i * uc + j] * s[j];
  expect(relErr(matmul(us, vh.subarray(0, k * n), m, k, n), a)).toBeLessThan(TOL);
  expect(orthoErr(u, m, uc)).toBeLessThan(TOL);
  expect(orthoErr(transpose(vh, vr, n), n, vr)).toBeLessThan(TOL);
  return s;
}

describe("svd", () => {
  const shapes: [number, number][] = [
    [0, 0],
    [0, 3],
    [3, 0],
    [1, 1],
    [1, 4],
    [4, 1],
    [2, 2],
    [2, 3],
    [3, 2],
    [7, 7],
    [31, 7],
    [7, 31],
    [64, 64],
    [97, 31],
    [31, 97],
  ];
  for (const [m, n] of shapes) {
    it(`${m}x${n}, reduced and full`, () => {
      const a = random(1100 + 3 * m + n, m, n);
      const s1 = checkSvd(a, m, n, false);
      const s2 = checkSvd(a, m, n, true);
      expect(s2).toEqual(s1);
    });
  }

  it("97x97", () => {
    checkSvd(random(1200, 97, 97), 97, 97, false);
  });

  it("matches eigh of A^T A and known values", () => {
    const s = checkSvd(new Float64Array([3, 0, 4, 5]), 2, 2, true);
    expect(s[0]).toBeCloseTo(3 * Math.sqrt(5), 14);
    expect(s[1]).toBeCloseTo(Math.sqrt(5), 14);
    const m = 9;
    const n = 5;
    const a = random(1300, m, n);
    const sv = checkSvd(a, m, n, false);
    const w = eigh(matmul(transpose(a, m, n), a, n, m, n), n).values;
    for (let i = 0; i < n; i++) expect(Math.abs(sv[i] ** 2 - w[n - 1 - i])).toBeLessThan(1e-12);
    expect(Array.from(checkSvd(new Float64Array([-2]), 1, 1, true))).toEqual([2]);
  });

  it("handles rank-deficient and zero matrices", () => {
    for (const [m, n, r] of [
      [20, 15, 5],
      [15, 20, 5],
      [12, 12, 1],
    ]) {
      const a = matmul(random(1400 + m, m, r), random(1500 + n, r, n), m, r, n);
      for (const full of [false, true]) {
        const s = checkSvd(a, m, n, full);
        for (let i = r; i < Math.min(m, n); i++) expect(s[i]).toBeLessThan(1e-13 * s[0]);
        expect(s[r - 1]).toBeGreaterThan(1e-3 * s[0]);
      }
    }
    // Duplicate rows and columns; a zero matrix.
    checkSvd(new Float64Array([1, 1, 1, 1, 1, 1]), 2, 3, true);
    const z = checkSvd(new Float64Array(12), 4, 3, true);
    expect(Array.from(z)).toEqual([0, 0, 0]);
    checkSvd(new Float64Array(12), 3, 4, false);
  });

  it("scales: tiny and huge entries", () => {
    for (const s of [1e-200, 1e200]) {
      const a = random(1600, 6, 4).map((x) => x * s);
      checkSvd(a, 6, 4, true);
    }
  });

  it("full U of 3000 x 3 and full Vh of 3 x 3000: completed in O(p^2 k), orthonormal", () => {
    // The completion was Gram-Schmidt on e_0, e_1, ... against every column so far: p^3, over
    // a minute for each shape here. Now the Householder Q of the k columns found: ~1 s in all.
    for (const [m, n] of [
      [3000, 3],
      [3, 3000],
    ]) {
      const a = random(1800 + m, m, n);
      const { u, s, vh } = svd(a, m, n, true);
      const k = 3;
      const us = new Float64Array(m * k);
      for (let i = 0; i < m; i++) for (let j = 0; j < k; j++) us[i * k + j] = u[i * m + j] * s[j];
      expect(relErr(matmul(us, vh.subarray(0, k * n), m, k, n), a)).toBeLessThan(TOL);
      expect(orthoErrProbed(u, m)).toBeLessThan(TOL);
      expect(orthoErrProbed(vh, n)).toBeLessThan(TOL);
      // The singular values of the reduced svd, and its vectors (the completion comes after).
      const reduced = svd(a, m, n, false);
      expect(s).toEqual(reduced.s);
      if (m > n) expect(vh).toEqual(reduced.vh);
      else expect(u).toEqual(reduced.u);
    }
  }, 10_000);

  it("throws on NaN input and rejects bad arguments", () => {
    const e = catchError(() => svd(new Float64Array([1, Number.NaN]), 1, 2, false));
    expect(e).toBeInstanceOf(LinalgError);
    expect((e as LinalgError).op).toBe("svd");
    expect(() => svd(new Float64Array(5), 2, 3, false)).toThrow(ArgumentError);
  });
});
