/**
 * The linalg ops on cuSOLVER (RecordingLayer): the calls each op makes, devInfo mapped to the
 * same LinalgErrors as every backend, and cuda.preferredLinalgLibrary ("magma" refuses with
 * the reason unless libmagma is found).
 */
import {
  backends,
  cholesky,
  eigh,
  explain,
  inv,
  LinalgError,
  luFactor,
  qr,
  randn,
  solve,
  svd,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  cudaStatus,
  launchArg,
  linalgLibraryStatus,
  type RecordedLaunch,
  type RecordingLayer,
} from "../src/internals.ts";
import { captureWarnings, SM80, withRecording } from "./helpers.ts";

/** eye_f32 / eye_f64 (kernels/copy.cu) carried out on the recorded memory: batch n x n identities. */
function runEye(layer: RecordingLayer, l: RecordedLaunch): void {
  const f64 = l.kernel === "eye_f64";
  const n = Number(launchArg(l, 1, "i64"));
  const count = Number(launchArg(l, 2, "i64")) * n * n;
  const bytes = layer.bytesAt(launchArg(l, 0, "ptr") as bigint, count * (f64 ? 8 : 4))!;
  const out = f64
    ? new Float64Array(bytes.buffer, bytes.byteOffset, count)
    : new Float32Array(bytes.buffer, bytes.byteOffset, count);
  for (let i = 0; i < count; i++) out[i] = Math.floor((i % (n * n)) / n) === i % n ? 1 : 0;
}

describe("linalg on cuSOLVER (RecordingLayer)", () => {
  it("cholesky: potrf per matrix, lower triangle kept, devInfo checked", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      const a = randn([2, 3, 3], { seed: 1 }).to("cuda");
      const l = cholesky(a);
      expect(l.shape).toEqual([2, 3, 3]);
      expect(layer.callsOf("cusolverDnSpotrf")).toHaveLength(2);
      expect(layer.callsOf("cusolverDnSpotrf")[0]!.args[1]).toBe(0); // CUBLAS_FILL_MODE_LOWER
      expect(layer.launches.map((x) => x.kernel)).toEqual([
        "copy2d_b4",
        "copy2d_b4",
        "tri_zero_f32",
      ]);
      // cuSOLVER reporting a failed minor becomes the shared LinalgError.
      layer.on("cusolverDnSpotrf", (...args: unknown[]) => {
        layer.bytesAt(args[7] as bigint, 4)!.set(new Uint8Array(Int32Array.of(2).buffer));
        return 0;
      });
      expect(() => cholesky(a)).toThrow(LinalgError);
      expect(() => cholesky(a)).toThrow(/leading minor of order 2 is not positive/);
    });
  });

  it("float64 uses the D routines; solve, inv, luFactor, qr, eigh, svd make their calls", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      const a = randn([4, 4], { seed: 2, dtype: "float64" }).to("cuda");
      const b = randn([4], { seed: 3, dtype: "float64" }).to("cuda");
      expect(solve(a, b).shape).toEqual([4]);
      expect(layer.names("cusolver")).toEqual(
        expect.arrayContaining([
          "cusolverDnDgetrf_bufferSize",
          "cusolverDnDgetrf",
          "cusolverDnDgetrs",
        ]),
      );
      expect(inv(a).shape).toEqual([4, 4]);
      expect(layer.launches.some((l) => l.kernel === "eye_f64")).toBe(true);
      const { LU, pivots } = luFactor(a);
      expect([LU.shape, pivots.shape, pivots.dtype]).toEqual([[4, 4], [4], "int32"]);
      const f = randn([5, 3], { seed: 4 }).to("cuda");
      const { Q, R } = qr(f);
      expect([Q.shape, R.shape]).toEqual([
        [5, 3],
        [3, 3],
      ]);
      expect(qr(f, { mode: "complete" }).Q.shape).toEqual([5, 5]);
      expect(layer.callsOf("cusolverDnSorgqr").at(-1)!.args.slice(1, 4)).toEqual([5, 5, 3]);
      const e = eigh(randn([3, 3], { seed: 5 }).to("cuda"));
      expect([e.eigenvalues.shape, e.eigenvectors.shape]).toEqual([[3], [3, 3]]);
      // gesvd needs rows >= cols: a wide matrix is factored transposed.
      const wide = svd(randn([2, 5], { seed: 6 }).to("cuda"), { fullMatrices: false });
      expect([wide.U.shape, wide.S.shape, wide.Vh.shape]).toEqual([[2, 2], [2], [2, 5]]);
      const g = layer.callsOf("cusolverDnSgesvd").at(-1)!;
      expect(g.args.slice(1, 5)).toEqual([83, 83, 5, 2]); // 'S', 'S', m = 5, n = 2
      svd(randn([5, 2], { seed: 7 }).to("cuda"));
      expect(layer.callsOf("cusolverDnSgesvd").at(-1)!.args.slice(1, 5)).toEqual([65, 65, 5, 2]);
    });
  });

  it("svd of a matrix with a zero dim: no gesvd, identity U / Vh as the CPU gives", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      for (const [shape, dtype] of [
        [[2, 3, 0], "float32"],
        [[0, 4], "float64"],
      ] as const) {
        const cpu = randn([...shape], { seed: 15, dtype });
        layer.clear();
        const r = svd(cpu.to("cuda"));
        // gesvd takes no empty dimension (with n = 0 it read ldvt = 0, and U was scratch).
        expect(layer.names("cusolver")).toEqual([]);
        for (const l of layer.launches) runEye(layer, l);
        const want = svd(cpu);
        for (const k of ["U", "S", "Vh"] as const) {
          expect(r[k].shape, `${k} of [${shape}]`).toEqual(want[k].shape);
          expect(r[k].to("cpu").toArray(), `${k} of [${shape}]`).toEqual(want[k].toArray());
        }
      }
      // Without full matrices everything is empty: nothing runs.
      layer.clear();
      const thin = svd(randn([3, 0]).to("cuda"), { fullMatrices: false });
      expect([thin.U.shape, thin.S.shape, thin.Vh.shape]).toEqual([[3, 0], [0], [0, 0]]);
      expect(layer.calls.filter((c) => c.lib !== "cuda")).toEqual([]);
      expect(layer.launches).toEqual([]);
    });
  });

  it("a singular matrix makes solve, inv and luFactor throw (torch.linalg.lu_factor raises)", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      layer.on("cusolverDnSgetrf", (...args: unknown[]) => {
        layer.bytesAt(args[7] as bigint, 4)!.set(new Uint8Array(Int32Array.of(3).buffer));
        return 0;
      });
      const a = randn([3, 3], { seed: 8 }).to("cuda");
      expect(() => inv(a)).toThrow(/singular \(U\[3,3\] is exactly zero\)/);
      expect(() => luFactor(a)).toThrow(/luFactor: the matrix is singular \(U\[3,3\]/);
    });
  });

  it("solve broadcasts batch dims as torch: one getrf per broadcast matrix, stride-0 reads", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      // A [2, 1, 3, 3] and a matrix B [5, 3, 1] broadcast to X [2, 5, 3, 1].
      const a = randn([2, 1, 3, 3], { seed: 10 }).to("cuda");
      const b = randn([5, 3, 1], { seed: 11 }).to("cuda");
      expect(solve(a, b).shape).toEqual([2, 5, 3, 1]);
      expect(layer.callsOf("cusolverDnSgetrf")).toHaveLength(10);
      expect(layer.callsOf("cusolverDnSgetrs")).toHaveLength(10);
      // The copies of A and B into column-major scratch read each matrix at these offsets.
      const tables = layer.launches
        .filter((l) => l.kernel === "copy2d_b4")
        .slice(0, 2)
        .map((l) => {
          const bytes = layer.bytesAt(launchArg(l, 2, "ptr") as bigint, 10 * 8)!;
          return [...new BigInt64Array(bytes.slice().buffer)].map(Number);
        });
      expect(tables).toEqual([
        [0, 0, 0, 0, 0, 9, 9, 9, 9, 9],
        [0, 3, 6, 9, 12, 0, 3, 6, 9, 12],
      ]);
      // B [2, 1] is not A [2, 2, 2] without its last dim: one 2 x 1 matrix for both.
      const x = solve(
        randn([2, 2, 2], { seed: 12 }).to("cuda"),
        randn([2, 1], { seed: 13 }).to("cuda"),
      );
      expect(x.shape).toEqual([2, 2, 1]);
      // A [3, 3] against B [0, 3, 2]: an empty batch.
      expect(
        solve(randn([3, 3], { seed: 14 }).to("cuda"), randn([0, 3, 2]).to("cuda")).shape,
      ).toEqual([0, 3, 2]);
    });
  });

  it('preferredLinalgLibrary("magma") refuses with the reason unless libmagma is found', async () => {
    await withRecording({ devices: [SM80] }, () => {
      const a = randn([3, 3], { seed: 9 }).to("cuda");
      expect(explain("cholesky", a).selected).toBe("cusolver-potrf");
      const prev = backends.cuda.preferredLinalgLibrary();
      const warnings = captureWarnings(() => backends.cuda.preferredLinalgLibrary("magma"));
      try {
        const magma = cudaStatus().magma;
        if (magma.path) {
          expect(linalgLibraryStatus("magma").available).toBe(true);
          expect(explain("cholesky", a).selected).toBe("cusolver-potrf");
        } else {
          expect(warnings.join("\n")).toMatch(
            /preferredLinalgLibrary\("magma"\): MAGMA is unavailable/,
          );
          expect(linalgLibraryStatus("magma")).toMatchObject({ available: false });
          expect(linalgLibraryStatus("magma").reason).toMatch(/libmagma/);
          const e = explain("cholesky", a);
          expect(e.selected).not.toBe("cusolver-potrf");
          expect(e.candidates.find((c) => c.kernel === "cusolver-potrf")!.reason).toMatch(
            /cuda.preferredLinalgLibrary is "magma", which is unavailable: libmagma/,
          );
        }
        expect(linalgLibraryStatus("cusolver")).toMatchObject({ available: true });
      } finally {
        backends.cuda.preferredLinalgLibrary(prev);
      }
    });
  });
});
