/**
 * allFinite, which Winograd and FFT kernels ask before they run: the WASM SIMD scan over the
 * CPU memory (16 floats a step, then one at a time) and the JS loop must both find a NaN or
 * infinity wherever it lies, in contiguous views at any offset, and pass every finite value
 * (the largest, subnormals, -0).
 */
import { empty, Tensor, tensor } from "@backplane/core";
import { allFinite } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";
import { finiteScanModule } from "../src/wasm/finite-scan.ts";

const random = (n: number, seed: number) => {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 30 - 1; // (-1, 1), never all zeros
  });
};

describe("allFinite", () => {
  it("the scan module validates for a shared and a plain memory", () => {
    expect(WebAssembly.validate(finiteScanModule(false) as Uint8Array<ArrayBuffer>)).toBe(true);
    expect(WebAssembly.validate(finiteScanModule(true) as Uint8Array<ArrayBuffer>)).toBe(true);
  });

  it("finds NaN, +inf and -inf at every kind of position, at sizes around the 16-float step", () => {
    for (const n of [1, 2, 15, 16, 17, 63, 64, 65, 79, 80, 81, 257, 1031]) {
      const data = random(n, n);
      const t = tensor(data);
      expect(allFinite(t), `n ${n}`).toBe(true);
      const positions = new Set([0, 1, 14, 15, 16, 17, n - 17, n - 16, n - 2, n - 1]);
      for (const at of [...positions].filter((p) => p >= 0 && p < n))
        for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
          (t.hostData() as Float32Array)[at] = bad;
          expect(allFinite(t), `n ${n}, ${bad} at ${at}`).toBe(false);
          (t.hostData() as Float32Array)[at] = data[at]!;
        }
      expect(allFinite(t)).toBe(true);
      t.dispose();
    }
  });

  it("passes the largest float, subnormals and -0, in long and short tensors", () => {
    const edge = [3.4028234663852886e38, -3.4028234663852886e38, 1e-45, -1e-45, -0, 0];
    for (const n of [6, 200]) {
      const t = tensor(Float32Array.from({ length: n }, (_, i) => edge[i % edge.length]!));
      expect(allFinite(t), `n ${n}`).toBe(true);
      t.dispose();
    }
  });

  it("reads only a view's own elements, at any offset into its storage", () => {
    const base = empty([300], { dtype: "float32" });
    const all = base.hostData() as Float32Array;
    all.set(random(300, 7));
    for (const offset of [0, 1, 3, 5, 16, 33])
      for (const n of [64, 100, 200]) {
        const view = new Tensor(base.storage, "float32", [n], [1], offset);
        // Poison just outside the view: it must not be read.
        const before = offset > 0 ? all[offset - 1]! : 0;
        const after = all[offset + n];
        if (offset > 0) all[offset - 1] = Number.NaN;
        if (offset + n < 300) all[offset + n] = Number.NaN;
        expect(allFinite(view), `offset ${offset}, n ${n}`).toBe(true);
        all[offset + n - 1] = Number.POSITIVE_INFINITY;
        expect(allFinite(view), `offset ${offset}, n ${n}, inf last`).toBe(false);
        all.set(random(300, 7));
        if (offset > 0) all[offset - 1] = before;
        if (after !== undefined) all[offset + n] = after;
      }
    base.dispose();
  });

  it("float64 and strided views take the JS loop and answer the same", () => {
    const d = tensor(Float64Array.from(random(150, 3)), { dtype: "float64" });
    expect(allFinite(d)).toBe(true);
    (d.hostData() as Float64Array)[149] = Number.NaN;
    expect(allFinite(d)).toBe(false);
    const m = tensor(random(100 * 3, 5), { shape: [100, 3] });
    const col = m.transpose(0, 1);
    expect(allFinite(col)).toBe(true);
    (m.hostData() as Float32Array)[299] = Number.NEGATIVE_INFINITY;
    expect(allFinite(col)).toBe(false);
    for (const t of [d, m]) t.dispose();
  });
});
