import {
  add,
  cholesky,
  conv2d,
  DeviceError,
  DTypeError,
  eigh,
  einsum,
  explain,
  fft,
  gelu,
  inv,
  irfft,
  logSoftmax,
  luFactor,
  matmul,
  mul,
  qr,
  randn,
  relu,
  rfft,
  scaledDotProductAttention,
  softmax,
  solve,
  svd,
  type Tensor,
  tensor,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import { registerHostBackedDevice, runConformance } from "../src/index.ts";

const close = (a: Tensor, b: number[] | Tensor, tol = 1e-9) => {
  const x = a.toFloat64();
  const y = Array.isArray(b) ? Float64Array.from(b) : b.toFloat64();
  expect(x.length).toBe(y.length);
  let e = 0;
  for (let i = 0; i < x.length; i++) e = Math.max(e, Math.abs(x[i] - y[i]));
  expect(e).toBeLessThan(tol);
};
const f64 = (shape: number[], seed: number) => randn(shape, { dtype: "float64", seed });

describe("reference kernels", () => {
  it("pass the testkit conformance suite", async () => {
    const report = await runConformance("reference");
    report.assertPassed();
    expect(report.passed).toBeGreaterThan(400);
  });

  it("matmul: known values, batching equals a loop, 1-D rules", () => {
    close(
      matmul(
        tensor([
          [1, 2],
          [3, 4],
        ]),
        tensor([
          [5, 6],
          [7, 8],
        ]),
      ),
      [19, 22, 43, 50],
    );
    expect(matmul(tensor([1, 2, 3]), tensor([4, 5, 6])).toArray()).toBe(32);
    const a = f64([3, 4, 5], 1);
    const b = f64([5, 2], 2);
    const batched = matmul(a, b).toFloat64();
    for (let i = 0; i < 3; i++) {
      const ai = tensor(a.toFloat64().slice(i * 20, i * 20 + 20), { shape: [4, 5] });
      close(matmul(ai.astype("float64"), b), Array.from(batched.slice(i * 8, i * 8 + 8)), 1e-12);
    }
  });

  it("elementwise ops", () => {
    close(add(tensor([[1], [2]]), tensor([10, 20, 30])), [11, 21, 31, 12, 22, 32]);
    close(mul(tensor([2, 3]), tensor([4])), [8, 12]);
    close(relu(tensor([-1, 0, 2])), [0, 0, 2]);
    close(gelu(tensor([1], { dtype: "float64" })), [0.8413447460685429], 1e-15);
    close(
      gelu(tensor([1], { dtype: "float64" }), { approximate: "tanh" }),
      [0.8411919906082768],
      1e-15,
    );
    close(gelu(tensor([-3], { dtype: "float64" })), [-0.00404969409489], 1e-14);
  });

  it("softmax rows sum to one and logSoftmax is its log", () => {
    const x = f64([4, 9], 3);
    const s = softmax(x).toFloat64();
    for (let r = 0; r < 4; r++)
      expect(Math.abs(s.slice(r * 9, r * 9 + 9).reduce((a, b) => a + b, 0) - 1)).toBeLessThan(
        1e-14,
      );
    close(logSoftmax(x), Array.from(s, Math.log), 1e-13);
    close(softmax(tensor([1000, 1000], { dtype: "float64" })), [0.5, 0.5]);
  });

  it("conv2d 1x1 equals einsum, and a hand-computed 3x3", () => {
    const x = f64([2, 3, 4, 5], 4);
    const w = f64([6, 3, 1, 1], 5);
    close(conv2d(x, w), einsum("nchw,oc->nohw", x, w.reshape([6, 3])), 1e-12);
    const img = tensor([
      [
        [
          [1, 2, 3],
          [4, 5, 6],
          [7, 8, 9],
        ],
      ],
    ]);
    const ones = tensor([
      [
        [
          [1, 1, 1],
          [1, 1, 1],
          [1, 1, 1],
        ],
      ],
    ]);
    close(conv2d(img, ones, { padding: 1 }), [12, 21, 16, 27, 45, 33, 24, 39, 28]);
  });

  it("SDPA equals softmax(q k^T scale + mask) v built from other ops; causal row 0 is v[0]", () => {
    const q = f64([2, 5, 8], 6);
    const k = f64([2, 7, 8], 7);
    const v = f64([2, 7, 3], 8);
    const scores = mul(
      matmul(q, k.transpose(-2, -1)),
      tensor([1 / Math.sqrt(8)], { dtype: "float64" }),
    );
    close(scaledDotProductAttention(q, k, v), matmul(softmax(scores), v), 1e-12);
    const additive = f64([5, 7], 9);
    close(
      scaledDotProductAttention(q, k, v, { attnMask: additive }),
      matmul(softmax(add(scores, additive)), v),
      1e-12,
    );
    const kv = f64([1, 4, 4], 10);
    const causal = scaledDotProductAttention(kv, kv, kv, { isCausal: true }).toFloat64();
    close(
      tensor(causal.slice(0, 4), { dtype: "float64" }),
      Array.from(kv.toFloat64().slice(0, 4)),
      1e-15,
    );
  });

  it("einsum: traces, diagonals and outer products", () => {
    const a = tensor(
      [
        [1, 2],
        [3, 4],
      ],
      { dtype: "float64" },
    );
    expect(einsum("ii", a).toArray()).toBe(5);
    expect(einsum("ii->i", a).toArray()).toEqual([1, 4]);
    expect(einsum("i,j->ij", tensor([1, 2]), tensor([3, 4, 5])).toArray()).toEqual([
      [3, 4, 5],
      [6, 8, 10],
    ]);
    expect(() =>
      einsum(
        "ij,jk->ik",
        a,
        tensor(
          [
            [1, 2, 3],
            [4, 5, 6],
            [7, 8, 9],
          ],
          { dtype: "float64" },
        ),
      ),
    ).toThrow(/index j has size 3 in operand 1.*\n.*\n\s+\^/);
  });

  it("linalg: reconstructions hold", () => {
    const b = f64([5, 5], 11);
    const spd = add(matmul(b, b.transpose(-2, -1)), tensor([5], { dtype: "float64" }).reshape([1]));
    const L = cholesky(spd);
    close(matmul(L, L.transpose(-2, -1)), spd, 1e-12);
    const eye = Array.from({ length: 25 }, (_, i) => (i % 6 === 0 ? 1 : 0));
    close(matmul(spd, inv(spd)), eye, 1e-12);
    const rhs = f64([5, 2], 12);
    close(matmul(spd, solve(spd, rhs)), rhs, 1e-12);
    const { LU, pivots } = luFactor(b);
    expect(pivots.dtype).toBe("int32");
    expect(LU.shape).toEqual([5, 5]);
    const { Q, R } = qr(b);
    close(matmul(Q, R), b, 1e-12);
    const { eigenvalues, eigenvectors } = eigh(spd);
    close(matmul(spd, eigenvectors), mul(eigenvectors, eigenvalues), 1e-11);
    const { U, S, Vh } = svd(f64([4, 6], 13), { fullMatrices: false });
    close(matmul(mul(U, S), Vh), f64([4, 6], 13), 1e-12);
  });

  it("fft of an impulse is flat; irfft inverts rfft", () => {
    close(
      fft(
        tensor(
          [
            [1, 0],
            [0, 0],
            [0, 0],
            [0, 0],
          ],
          { dtype: "float64" },
        ),
      ),
      [1, 0, 1, 0, 1, 0, 1, 0],
    );
    const x = f64([15], 14);
    close(irfft(rfft(x), { n: 15 }), x, 1e-13);
  });

  it("explain names the reference kernel", () => {
    expect(explain("matmul", tensor([[1]]), tensor([[2]])).selected).toBe("reference");
    expect(
      explain("scaledDotProductAttention", f64([1, 2, 4], 1), f64([1, 2, 4], 2), f64([1, 2, 4], 3))
        .selected,
    ).toBe("math");
  });

  it("device and dtype mismatches are typed errors naming the argument", () => {
    registerHostBackedDevice("hostdev");
    const a = tensor([[1, 2]]);
    const b = tensor([[1], [2]], { device: "hostdev" });
    expect(() => matmul(a, b)).toThrow(DeviceError);
    expect(() => matmul(a, b)).toThrow(/matmul: b is on hostdev but a is on cpu/);
    expect(() => matmul(b, tensor([[1, 2]], { device: "hostdev" }))).toThrow(
      /No kernel can run matmul[\s\S]*runs on cpu, inputs are on hostdev/,
    );
    expect(() => matmul(a, tensor([[1], [2]], { dtype: "float64" }))).toThrow(DTypeError);
  });
});
