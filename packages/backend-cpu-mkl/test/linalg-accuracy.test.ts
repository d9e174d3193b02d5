/**
 * Linalg on random float64 matrices up to 256, on both kernel families: relative
 * reconstruction errors of A = QR, U S Vh, L L^T, P^T L U, V diag(w) V^T at most 1e-10.
 * Then solve's shape rules (torch.linalg.solve's: vector or matrix B, broadcast batch
 * dims, empty batches) on every solve kernel, against a float64 loop written here.
 */

import {
  cholesky,
  eigh,
  explain,
  kernelPriority,
  luFactor,
  qr,
  randn,
  ready,
  ShapeError,
  solve,
  svd,
  Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import "../src/index.ts";
import { nativeRuns } from "./native-helpers.ts";

const SIZES = [1, 7, 64, 256];
const TOL = 1e-10;

function mm(a: Float64Array, b: Float64Array, m: number, k: number, n: number): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let p = 0; p < k; p++) {
      const x = a[i * k + p];
      for (let j = 0; j < n; j++) c[i * n + j] += x * b[p * n + j];
    }
  return c;
}
const T = (a: Float64Array, m: number, n: number) => {
  const t = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) t[j * m + i] = a[i * n + j];
  return t;
};
function relErr(x: Float64Array, ref: Float64Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < ref.length; i++) {
    num = Math.max(num, Math.abs(x[i] - ref[i]));
    den = Math.max(den, Math.abs(ref[i]));
  }
  return num / (den || 1);
}
const data = (t: Tensor) => t.toFloat64();

function spd(n: number, seed: number): Tensor {
  const b = data(randn([n, n], { dtype: "float64", seed }));
  const a = mm(b, T(b, n, n), n, n, n);
  for (let i = 0; i < n; i++) a[i * n + i] += n;
  return tensor(a, { shape: [n, n], dtype: "float64" });
}

const FAMILIES = [
  { name: "native (LAPACK)", prefix: "lapack-" },
  { name: "WASM", prefix: "wasm-" },
];

for (const fam of FAMILIES) {
  describe(`linalg accuracy, ${fam.name}`, () => {
    for (const n of SIZES) {
      it(`n = ${n}: A = L L^T, P A = L U, Q R, U S Vh, V W V^T within ${TOL}`, async () => {
        await ready();
        const kernel = (op: string) => kernelPriority(op, [`${fam.prefix}${op}`]);
        const a = randn([n, n], { dtype: "float64", seed: n });
        const A = data(a);
        const S = spd(n, n + 1);
        const SA = data(S);
        {
          using _ = kernel("cholesky");
          const L = data(cholesky(S));
          expect(relErr(mm(L, T(L, n, n), n, n, n), SA)).toBeLessThan(TOL);
        }
        {
          using _ = kernel("luFactor");
          const { LU, pivots } = luFactor(a);
          const lu = data(LU);
          const piv = pivots.toFloat64();
          const L = new Float64Array(n * n);
          const U = new Float64Array(n * n);
          for (let i = 0; i < n; i++)
            for (let j = 0; j < n; j++) {
              if (j < i) L[i * n + j] = lu[i * n + j];
              else U[i * n + j] = lu[i * n + j];
              if (i === j) L[i * n + j] = 1;
            }
          const PA = Float64Array.from(A);
          for (let i = 0; i < n; i++) {
            const r = piv[i] - 1;
            for (let j = 0; j < n; j++)
              [PA[i * n + j], PA[r * n + j]] = [PA[r * n + j], PA[i * n + j]];
          }
          expect(relErr(mm(L, U, n, n, n), PA)).toBeLessThan(TOL);
        }
        {
          using _ = kernel("qr");
          const { Q, R } = qr(a);
          expect(relErr(mm(data(Q), data(R), n, n, n), A)).toBeLessThan(TOL);
        }
        {
          using _ = kernel("svd");
          const { U, S: s, Vh } = svd(a);
          const u = data(U);
          const sv = data(s);
          for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) u[i * n + j] *= sv[j];
          expect(relErr(mm(u, data(Vh), n, n, n), A)).toBeLessThan(TOL);
        }
        {
          using _ = kernel("eigh");
          const { eigenvalues, eigenvectors } = eigh(S);
          const v = data(eigenvectors);
          const w = data(eigenvalues);
          const vw = Float64Array.from(v);
          for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) vw[i * n + j] *= w[j];
          expect(relErr(mm(vw, T(v, n, n), n, n, n), SA)).toBeLessThan(TOL);
        }
      });
    }
  });
}

// torch.linalg.solve: B is a vector when 1-D or of exactly A's shape without its last dim;
// else matrices [*, n, k]; batch dims broadcast. Output shapes from PyTorch 2.13.
const SOLVE_SHAPES: { a: number[]; b: number[]; out: number[] }[] = [
  { a: [3, 3], b: [3], out: [3] },
  { a: [3, 3], b: [3, 2], out: [3, 2] },
  // [2, 1] is not A's shape without its last dim ([2, 2]): one matrix for both of A's...
  { a: [2, 2, 2], b: [2, 1], out: [2, 2, 1] },
  // ... while [2, 2] is: a vector per matrix of A.
  { a: [2, 2, 2], b: [2, 2], out: [2, 2] },
  { a: [3, 3, 3], b: [3, 5], out: [3, 3, 5] },
  { a: [3, 2, 2], b: [2, 2], out: [3, 2, 2] },
  { a: [2, 3, 3], b: [3, 3], out: [2, 3, 3] },
  { a: [2, 3, 3], b: [2, 3], out: [2, 3] },
  { a: [2, 3, 3], b: [1, 3, 2], out: [2, 3, 2] },
  { a: [1, 3, 3], b: [3], out: [1, 3] },
  { a: [1, 3, 3], b: [1, 3], out: [1, 3] },
  { a: [1, 3, 3], b: [2, 3, 2], out: [2, 3, 2] },
  { a: [3, 3], b: [2, 3, 3], out: [2, 3, 3] },
  { a: [3, 3], b: [1, 3, 2], out: [1, 3, 2] },
  { a: [2, 1, 3, 3], b: [5, 3, 1], out: [2, 5, 3, 1] },
  { a: [2, 1, 3, 3], b: [1, 4, 3, 2], out: [2, 4, 3, 2] },
  // Empty batches and empty matrices.
  { a: [0, 0, 0], b: [0, 1], out: [0, 0, 1] },
  { a: [0, 3, 3], b: [3], out: [0, 3] },
  { a: [0, 3, 3], b: [3, 2], out: [0, 3, 2] },
  { a: [0, 3, 3], b: [0, 3], out: [0, 3] },
  { a: [3, 3], b: [0, 3, 2], out: [0, 3, 2] },
  { a: [0, 0], b: [0], out: [0] },
  { a: [0, 0], b: [0, 3], out: [0, 3] },
  { a: [2, 0, 0], b: [0], out: [2, 0] },
  { a: [2, 0, 0], b: [2, 0], out: [2, 0] },
  { a: [2, 0, 0], b: [0, 4], out: [2, 0, 4] },
];

// Shapes PyTorch 2.13 refuses (a RuntimeError there, a ShapeError here).
const SOLVE_REFUSED: { a: number[]; b: number[]; message: RegExp }[] = [
  { a: [3, 3], b: [], message: /at least 1 dimension/ },
  { a: [3, 3], b: [4], message: /must have 3 rows/ },
  { a: [3, 3], b: [2, 3], message: /must have 3 rows/ },
  { a: [1, 3, 3], b: [4, 3], message: /must have 3 rows/ }, // not [1, 3]: a 4 x 3 matrix
  { a: [2, 3, 3], b: [1, 3], message: /must have 3 rows/ },
  { a: [1, 3, 3], b: [0, 3], message: /must have 3 rows/ },
  { a: [4, 3, 3], b: [4, 1, 3], message: /must have 3 rows/ },
  { a: [2, 3, 3], b: [4, 3, 1], message: /do not broadcast/ },
  { a: [2, 3, 3], b: [0, 3, 1], message: /do not broadcast/ },
];

/** Diagonally dominant A (well conditioned) of any [..., n, n] shape. */
function solvable(shape: number[], seed: number): Tensor {
  const n = shape[shape.length - 1];
  const v = data(randn(shape, { dtype: "float64", seed }));
  for (let i = 0; i < v.length; i++) if (Math.floor(i / n) % n === i % n) v[i] += 2 * n;
  return tensor(v, { shape, dtype: "float64" });
}

/** Gaussian elimination with partial pivoting: X (n x k, row-major) with A X = B. */
function gauss(a: Float64Array, b: Float64Array, n: number, k: number): Float64Array {
  const m = Float64Array.from(a);
  const x = Float64Array.from(b);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r * n + c]) > Math.abs(m[p * n + c])) p = r;
    for (let j = 0; j < n; j++) [m[c * n + j], m[p * n + j]] = [m[p * n + j], m[c * n + j]];
    for (let j = 0; j < k; j++) [x[c * k + j], x[p * k + j]] = [x[p * k + j], x[c * k + j]];
    for (let r = c + 1; r < n; r++) {
      const f = m[r * n + c] / m[c * n + c];
      for (let j = c; j < n; j++) m[r * n + j] -= f * m[c * n + j];
      for (let j = 0; j < k; j++) x[r * k + j] -= f * x[c * k + j];
    }
  }
  for (let c = n - 1; c >= 0; c--)
    for (let j = 0; j < k; j++) {
      let s = x[c * k + j];
      for (let q = c + 1; q < n; q++) s -= m[c * n + q] * x[q * k + j];
      x[c * k + j] = s / m[c * n + c];
    }
  return x;
}

/** Row-major index of batch element `i` of `out` in a batch of shape `own` broadcast to it. */
function broadcastIndex(i: number, out: number[], own: number[]): number {
  let idx = 0;
  let stride = 1;
  for (let d = out.length - 1, e = own.length - 1; d >= 0; d--, e--) {
    const at = i % out[d];
    i = Math.floor(i / out[d]);
    if (e >= 0) {
      if (own[e] !== 1) idx += at * stride;
      stride *= own[e];
    }
  }
  return idx;
}

/** X for A X = B by torch's shape rules, looped matrix by matrix in float64. */
function expectedSolve(a: Tensor, b: Tensor, out: number[]): Float64Array {
  const n = a.shape[a.rank - 1];
  const vector =
    b.rank === 1 || (b.rank === a.rank - 1 && b.shape.every((d, i) => d === a.shape[i]));
  const k = vector ? 1 : b.shape[b.rank - 1];
  const batch = out.slice(0, vector ? -1 : -2);
  const aBatch = a.shape.slice(0, -2);
  const bBatch = b.shape.slice(0, vector ? -1 : -2);
  const A = data(a);
  const B = data(b);
  const x = new Float64Array(out.reduce((p, d) => p * d, 1));
  const count = batch.reduce((p, d) => p * d, 1);
  for (let i = 0; i < count; i++) {
    const ai = broadcastIndex(i, batch, aBatch);
    const bi = broadcastIndex(i, batch, bBatch);
    const xi = gauss(
      A.subarray(ai * n * n, (ai + 1) * n * n),
      B.subarray(bi * n * k, (bi + 1) * n * k),
      n,
      k,
    );
    x.set(xi, i * n * k);
  }
  return x;
}

describe("solve: torch.linalg.solve's shapes and broadcasting on every solve kernel", () => {
  // LAPACK's only where a native library loads (native-helpers prints the skip line).
  const KERNELS = ["reference", ...(nativeRuns ? ["lapack-solve"] : []), "wasm-solve"];

  it("each kernel this test forces runs when forced", async () => {
    await ready();
    const a = solvable([2, 2], 1);
    const b = tensor([1, 2], { dtype: "float64" });
    for (const k of KERNELS) {
      using _ = kernelPriority("solve", [k]);
      expect(explain("solve", a, b).toString()).toContain(`solve: runs ${k}`);
    }
  });

  for (const kernel of KERNELS) {
    it(`${kernel}: output shapes as torch's, values as a float64 loop`, async () => {
      await ready();
      using _ = kernelPriority("solve", [kernel]);
      for (const [i, { a: as, b: bs, out }] of SOLVE_SHAPES.entries()) {
        const a = solvable(as, 10 + i);
        const b = randn(bs, { dtype: "float64", seed: 50 + i });
        const x = solve(a, b);
        const what = `A [${as}], B [${bs}]`;
        expect(x.shape, what).toEqual(out);
        expect(relErr(data(x), expectedSolve(a, b, out)), what).toBeLessThan(TOL);
      }
    });

    it(`${kernel}: strided inputs broadcast too (transposed A, B expanded by stride 0)`, async () => {
      await ready();
      using _ = kernelPriority("solve", [kernel]);
      const a = solvable([2, 1, 3, 3], 7).transpose(-2, -1);
      const b = randn([1, 3, 2], { dtype: "float64", seed: 8 });
      b.storage.retain();
      const bExpanded = new Tensor(b.storage, "float64", [4, 3, 2], [0, 2, 1], 0);
      const x = solve(a, bExpanded);
      expect(x.shape).toEqual([2, 4, 3, 2]);
      expect(relErr(data(x), expectedSolve(a, bExpanded, [2, 4, 3, 2]))).toBeLessThan(TOL);
    });
  }

  it("refuses with a ShapeError the shapes torch refuses", async () => {
    await ready();
    for (const { a: as, b: bs, message } of SOLVE_REFUSED) {
      const a = solvable(as, 3);
      const b = randn(bs, { dtype: "float64", seed: 4 });
      const what = `A [${as}], B [${bs}]`;
      expect(() => solve(a, b), what).toThrow(ShapeError);
      expect(() => solve(a, b), what).toThrow(message);
    }
  });

  it("known values from torch: B [2, 1] is one matrix for both of A [2, 2, 2]", async () => {
    await ready();
    const a = tensor(
      [
        [
          [2, 1],
          [1, 3],
        ],
        [
          [4, 0],
          [1, 2],
        ],
      ],
      { dtype: "float64" },
    );
    for (const kernel of KERNELS) {
      using _ = kernelPriority("solve", [kernel]);
      const x = solve(a, tensor([[1], [2]], { dtype: "float64" }));
      expect(x.shape, kernel).toEqual([2, 2, 1]);
      expect(relErr(data(x), Float64Array.from([0.2, 0.6, 0.25, 0.875])), kernel).toBeLessThan(
        1e-14,
      );
      const v = solve(
        a,
        tensor(
          [
            [1, 2],
            [3, 4],
          ],
          { dtype: "float64" },
        ),
      );
      expect(v.shape, kernel).toEqual([2, 2]);
      expect(relErr(data(v), Float64Array.from([0.2, 0.6, 0.75, 1.625])), kernel).toBeLessThan(
        1e-14,
      );
    }
  });

  it("lets go of the broadcast views: A's storage is freed when A is disposed", async () => {
    await ready();
    const a = solvable([3, 3], 5);
    const b = randn([4, 3, 2], { dtype: "float64", seed: 6 });
    const x = solve(a, b);
    expect(x.shape).toEqual([4, 3, 2]);
    a.dispose();
    expect(a.storage.freed).toBe(true);
    b.dispose();
    x.dispose();
  });
});

describe("cholesky reads the triangle torch reads", () => {
  it("upper=true takes A's upper triangle, upper=false its lower one, on every kernel", async () => {
    await ready();
    // Not symmetric: the two triangles give different factors (values from PyTorch 2.13).
    const a = tensor(
      [
        [4, 1],
        [2, 3],
      ],
      { dtype: "float64" },
    );
    const s = Math.sqrt;
    for (const kernel of [
      "reference",
      ...(nativeRuns ? ["lapack-cholesky"] : []),
      "wasm-cholesky",
    ]) {
      using _ = kernelPriority("cholesky", [kernel]);
      expect(String(explain("cholesky", a, { upper: true }))).toContain(`runs ${kernel}`);
      const u = cholesky(a, { upper: true }).toArray() as number[][];
      const l = cholesky(a).toArray() as number[][];
      for (const [got, want] of [
        [
          u,
          [
            [2, 0.5],
            [0, s(3 - 0.25)],
          ],
        ],
        [
          l,
          [
            [2, 0],
            [1, s(2)],
          ],
        ],
      ] as const)
        for (let i = 0; i < 2; i++)
          for (let j = 0; j < 2; j++) expect(got[i][j], kernel).toBeCloseTo(want[i][j], 14);
    }
    expect(a.toArray()).toEqual([
      [4, 1],
      [2, 3],
    ]);
  });
});
