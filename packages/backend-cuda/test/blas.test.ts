/**
 * Flags to cuBLAS: compute types, math modes, cuBLASLt reduction schemes, torch's
 * CUBLAS_WORKSPACE_CONFIG rule, the row-major -> column-major GEMM plan, and matmul through
 * the dispatcher onto the recorded cuBLAS / cuBLASLt calls.
 */
import {
  backends,
  explain,
  matmul,
  randn,
  setFloat32MatmulPrecision,
  Tensor,
  useDeterministicAlgorithms,
} from "@backplane/core";
import { describe, expect, it } from "vitest";
import {
  CublasWorkspaceConfigError,
  checkCublasDeterminism,
  columnMajorView,
  cublasWorkspaceBytes,
  type GemmFlags,
  gemmMode,
  planGemm,
  uniformStride,
  LIBRARY_ENUMS as X,
} from "../src/internals.ts";
import { withEnv, withRecording } from "./helpers.ts";

const FLAGS: GemmFlags = {
  allowTf32: false,
  float32MatmulPrecision: "highest",
  allowFp16ReducedPrecisionReduction: true,
  allowBf16ReducedPrecisionReduction: true,
};

describe("flag -> cuBLAS translation", () => {
  it("float32: CUBLAS_COMPUTE_32F unless TF32 is allowed", () => {
    expect(gemmMode("float32", FLAGS)).toMatchObject({
      computeType: X.CUBLAS_COMPUTE_32F,
      mathMode: X.CUBLAS_DEFAULT_MATH,
      tf32: false,
    });
    for (const f of [
      { ...FLAGS, allowTf32: true },
      { ...FLAGS, float32MatmulPrecision: "high" as const },
      { ...FLAGS, float32MatmulPrecision: "medium" as const },
    ]) {
      expect(gemmMode("float32", f)).toMatchObject({
        computeType: X.CUBLAS_COMPUTE_32F_FAST_TF32,
        computeTypeName: "CUBLAS_COMPUTE_32F_FAST_TF32",
        mathMode: X.CUBLAS_TF32_TENSOR_OP_MATH,
        tf32: true,
      });
    }
    expect(gemmMode("float32", FLAGS, true).computeType).toBe(77);
    expect(gemmMode("float64", { ...FLAGS, allowTf32: true })).toMatchObject({
      computeType: X.CUBLAS_COMPUTE_64F,
      scaleType: X.CUDA_R_64F,
    });
  });

  it("reduced-precision reductions map to CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION", () => {
    expect(gemmMode("float16", FLAGS)).toMatchObject({
      computeType: X.CUBLAS_COMPUTE_32F,
      dataType: X.CUDA_R_16F,
      mathMode: 0,
      reductionSchemeMask: X.CUBLASLT_REDUCTION_SCHEME_MASK,
    });
    const fp16 = gemmMode("float16", { ...FLAGS, allowFp16ReducedPrecisionReduction: false });
    expect(fp16.mathMode).toBe(16);
    expect(fp16.mathModeName).toBe(
      "CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION",
    );
    expect(fp16.reductionSchemeMask).toBe(X.CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
    // Each flag governs its own dtype.
    expect(
      gemmMode("bfloat16", { ...FLAGS, allowFp16ReducedPrecisionReduction: false }).mathMode,
    ).toBe(0);
    const bf16 = gemmMode("bfloat16", { ...FLAGS, allowBf16ReducedPrecisionReduction: false });
    expect(bf16).toMatchObject({ mathMode: 16, dataType: X.CUDA_R_16BF });
  });

  it("deterministic mode follows torch's CUBLAS_WORKSPACE_CONFIG rule", () => {
    expect(checkCublasDeterminism(false, false, undefined)).toBeUndefined();
    expect(checkCublasDeterminism(true, false, ":4096:8")).toBeUndefined();
    expect(checkCublasDeterminism(true, false, ":16:8")).toBeUndefined();
    for (const bad of [undefined, ":4096:2:16:8", "4096:8", ":4096:2"]) {
      let err: unknown;
      try {
        checkCublasDeterminism(true, false, bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CublasWorkspaceConfigError);
      const e = err as CublasWorkspaceConfigError;
      expect(e.variable).toBe("CUBLAS_WORKSPACE_CONFIG");
      expect(e.code).toBe("E_NONDETERMINISTIC");
      expect(e.message).toContain(
        "CUBLAS_WORKSPACE_CONFIG=:4096:8 or CUBLAS_WORKSPACE_CONFIG=:16:8",
      );
    }
    expect(checkCublasDeterminism(true, true, undefined)).toMatch(/CUBLAS_WORKSPACE_CONFIG/);
  });

  it("sizes the cuBLAS workspace from CUBLAS_WORKSPACE_CONFIG like torch", () => {
    expect(cublasWorkspaceBytes(":4096:8", 8)).toBe(4096 * 1024 * 8);
    expect(cublasWorkspaceBytes(":16:8", 8)).toBe(16 * 1024 * 8);
    expect(cublasWorkspaceBytes(":4096:2:16:8", 8)).toBe(4096 * 1024 * 2 + 16 * 1024 * 8);
    expect(cublasWorkspaceBytes(undefined, 8)).toBe(4096 * 1024 * 2 + 16 * 1024 * 8);
    expect(cublasWorkspaceBytes(undefined, 9)).toBe(4096 * 1024 * 8);
  });
});

describe("row-major GEMM on column-major cuBLAS", () => {
  it("reads contiguous and transposed operands without copies", () => {
    expect(columnMajorView(3, 4, 4, 1)).toEqual({ op: X.CUBLAS_OP_N, ld: 4 });
    expect(columnMajorView(3, 4, 1, 3)).toEqual({ op: X.CUBLAS_OP_T, ld: 3 });
    expect(columnMajorView(1, 5, 0, 1)).toEqual({ op: X.CUBLAS_OP_N, ld: 5 });
    expect(columnMajorView(3, 4, 8, 2)).toBeNull(); // every other column
    expect(uniformStride([0, 12, 24])).toBe(12);
    expect(uniformStride([0, 0, 12, 12])).toBeNull();
    expect(uniformStride([5, 5, 5])).toBe(0);
  });

  it("computes C^T = B^T A^T: cuBLAS's m, n are the problem's n, m", () => {
    const plan = planGemm({
      m: 2,
      n: 5,
      k: 3,
      batch: 4,
      a: { ptr: 0n, offsets: [0, 6, 12, 18], rs: 3, cs: 1 },
      b: { ptr: 1n, offsets: [0, 0, 0, 0], rs: 1, cs: 3 }, // B = W^T of a [5, 3] weight
      c: { ptr: 2n, offsets: [0, 10, 20, 30], ldc: 5 },
      abBytes: 4,
      cBytes: 4,
    });
    expect(plan).toMatchObject({
      transa: X.CUBLAS_OP_T,
      transb: X.CUBLAS_OP_N,
      M: 5,
      N: 2,
      K: 3,
      lda: 3,
      ldb: 3,
      ldc: 5,
      strided: true,
      strideA: 0,
      strideB: 6,
      strideC: 10,
    });
  });
});

describe("matmul through the dispatcher (RecordingLayer)", () => {
  const cuda = (shape: number[], seed: number, dtype: "float32" | "float16" = "float32") =>
    randn(shape, { seed, dtype }).to("cuda");

  it("runs cublasGemmEx with CUBLAS_COMPUTE_32F by default, TF32 when allowed", async () => {
    await withRecording({}, (layer) => {
      const a = cuda([4, 3], 1);
      const b = cuda([3, 5], 2);
      expect(explain("matmul", a, b).selected).toBe("cublas-gemm");
      const c = matmul(a, b);
      expect(c.shape).toEqual([4, 5]);
      expect(c.device).toBe("cuda:0");
      const call = layer.callsOf("cublasGemmEx")[0]!;
      // handle, transa, transb, m, n, k, ..., computeType, algo
      expect(call.args.slice(1, 6)).toEqual([X.CUBLAS_OP_N, X.CUBLAS_OP_N, 5, 4, 3]);
      expect(call.args[17]).toBe(X.CUBLAS_COMPUTE_32F);
      expect(layer.callsOf("cublasSetMathMode").at(-1)!.args[1]).toBe(X.CUBLAS_DEFAULT_MATH);
      expect(layer.callsOf("cublasSetWorkspace_v2")).toHaveLength(1);
      {
        using _ = backends.cuda.flags({ matmul: { allowTf32: true } });
        matmul(a, b);
      }
      expect(layer.callsOf("cublasGemmEx").at(-1)!.args[17]).toBe(X.CUBLAS_COMPUTE_32F_FAST_TF32);
      expect(layer.callsOf("cublasSetMathMode").at(-1)!.args[1]).toBe(X.CUBLAS_TF32_TENSOR_OP_MATH);
      setFloat32MatmulPrecision("high");
      try {
        expect(explain("matmul", a, b).selected).toBe("cublas-gemm-tf32");
        matmul(a, b);
        expect(layer.callsOf("cublasGemmEx").at(-1)!.args[17]).toBe(77);
      } finally {
        setFloat32MatmulPrecision("highest");
      }
    });
  });

  it("maps allowFp16ReducedPrecisionReduction = false to the math mode", async () => {
    await withRecording({}, (layer) => {
      const a = cuda([8, 8], 3, "float16");
      const b = cuda([8, 8], 4, "float16");
      using _ = backends.cuda.flags({ matmul: { allowFp16ReducedPrecisionReduction: false } });
      matmul(a, b);
      expect(layer.callsOf("cublasSetMathMode").at(-1)!.args[1]).toBe(16);
      const g = layer.callsOf("cublasGemmEx").at(-1)!;
      expect([g.args[8], g.args[11], g.args[15]]).toEqual([
        X.CUDA_R_16F,
        X.CUDA_R_16F,
        X.CUDA_R_16F,
      ]);
      expect(g.args[17]).toBe(X.CUBLAS_COMPUTE_32F);
    });
  });

  it("batches: strided when offsets are even, pointer arrays for broadcast patterns", async () => {
    await withRecording({}, (layer) => {
      matmul(cuda([3, 4, 5], 5), cuda([5, 2], 6));
      const s = layer.callsOf("cublasGemmStridedBatchedEx")[0]!;
      expect(s.args[20]).toBe(3); // batchCount
      expect([s.args[10], s.args[14], s.args[19]]).toEqual([0, 20, 8]); // strideA (=B), strideB (=A), strideC
      matmul(cuda([2, 1, 4, 5], 7), cuda([1, 3, 5, 2], 8));
      expect(layer.callsOf("cublasGemmBatchedEx")).toHaveLength(1);
      // A transposed view is read with CUBLAS_OP_T, not copied.
      const w = cuda([6, 5], 9);
      const t = w.transpose();
      layer.clear();
      matmul(cuda([4, 5], 10), t);
      expect(layer.launches).toHaveLength(0);
      expect(layer.callsOf("cublasGemmEx")[0]!.args[1]).toBe(X.CUBLAS_OP_T);
    });
  });

  it('preferredBlasLibrary("cublaslt") runs cublasLtMatmul with the same compute type', async () => {
    await withRecording({}, (layer) => {
      const a = cuda([2, 4, 3], 11);
      const b = cuda([2, 3, 5], 12);
      expect(
        explain("matmul", a, b).candidates.find((c) => c.kernel === "cublaslt-gemm")!.reason,
      ).toBe('cuda.preferredBlasLibrary is "cublas"');
      const before = backends.cuda.preferredBlasLibrary();
      backends.cuda.preferredBlasLibrary("cublaslt");
      try {
        expect(explain("matmul", a, b).selected).toBe("cublaslt-gemm");
        matmul(a, b);
        expect(layer.callsOf("cublasLtMatmul")).toHaveLength(1);
        expect(layer.callsOf("cublasLtMatmulDescCreate")[0]!.args.slice(1)).toEqual([
          X.CUBLAS_COMPUTE_32F,
          X.CUDA_R_32F,
        ]);
        const attrs = layer.callsOf("cublasLtMatrixLayoutSetAttribute").map((c) => c.args[1]);
        expect(attrs).toContain(X.CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
        expect(layer.callsOf("cublasLtMatmulDescDestroy")).toHaveLength(1);
        // A broadcast batch pattern is not a strided batch: cuBLAS takes it.
        const e = explain("matmul", cuda([2, 1, 4, 5], 13), cuda([1, 3, 5, 2], 14));
        expect(e.selected).toBe("cublas-gemm");
        expect(e.candidates.find((c) => c.kernel === "cublaslt-gemm")!.reason).toMatch(
          /cuBLASLt takes strided batches only/,
        );
      } finally {
        backends.cuda.preferredBlasLibrary(before);
      }
    });
  });

  it("tells cuBLASLt each operand's alignment: a view at an odd offset is not 256-byte aligned", async () => {
    await withRecording({}, (layer) => {
      /** MIN_ALIGNMENT_A/B/C/D_BYTES of the last cuBLASLt call, as set (uint32_t each). */
      const alignments = () => {
        const set = layer.callsOf("cublasLtMatmulPreferenceSetAttribute");
        const value = (attr: number) => {
          const c = set.filter((x) => x.args[1] === attr).at(-1);
          expect(c, `preference ${attr} is set`).toBeDefined();
          expect(c!.args[3]).toBe(4);
          return (c!.args[2] as Uint32Array)[0];
        };
        return [
          X.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
          X.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          X.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
          X.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
        ].map(value);
      };
      const before = backends.cuda.preferredBlasLibrary();
      backends.cuda.preferredBlasLibrary("cublaslt");
      try {
        // Fresh storages start 512-byte aligned: the default (256) holds.
        matmul(cuda([64, 64], 21), cuda([64, 64], 22));
        expect(alignments()).toEqual([256, 256, 256, 256]);
        // A [64, 64] view one float into its storage: cuBLAS's B is the problem's A.
        const big = cuda([65, 64], 23);
        big.storage.retain();
        const a = new Tensor(big.storage, "float32", [64, 64], [64, 1], 1);
        layer.clear();
        matmul(a, cuda([64, 64], 24));
        expect(layer.callsOf("cublasLtMatmul")).toHaveLength(1);
        expect(Number((layer.callsOf("cublasLtMatmul")[0]!.args[5] as bigint) % 256n)).toBe(4);
        expect(alignments()).toEqual([256, 4, 256, 256]);
        // Batches: each matrix starts a batch stride (3 x 4 floats = 48 bytes) after the last.
        layer.clear();
        matmul(cuda([2, 3, 4], 25), cuda([2, 4, 8], 26));
        expect(alignments()).toEqual([128, 16, 32, 32]);
      } finally {
        backends.cuda.preferredBlasLibrary(before);
      }
    });
  });

  it("refuses cuBLAS in deterministic mode unless CUBLAS_WORKSPACE_CONFIG is :4096:8 or :16:8", async () => {
    await withRecording({}, async () => {
      const a = cuda([2, 2], 15);
      useDeterministicAlgorithms(true);
      try {
        await withEnv("CUBLAS_WORKSPACE_CONFIG", undefined, () => {
          expect(() => matmul(a, a)).toThrow(CublasWorkspaceConfigError);
        });
        await withEnv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", () => {
          expect(matmul(a, a).shape).toEqual([2, 2]);
        });
      } finally {
        useDeterministicAlgorithms(false);
      }
    });
  });

  it("refuses TF32 and bfloat16 GEMM before sm_80, with the reason", async () => {
    await withRecording(
      { devices: [{ name: "Fake T4", major: 7, minor: 5, totalMemory: 2 ** 34 }] },
      () => {
        setFloat32MatmulPrecision("high");
        try {
          const e = explain("matmul", cuda([2, 2], 16), cuda([2, 2], 17));
          expect(e.candidates.find((c) => c.kernel === "cublas-gemm-tf32")!.reason).toBe(
            "TF32 needs compute capability 8.0+ (Ampere), cuda:0 is 7.5",
          );
          expect(e.selected).toBe("cublas-gemm");
        } finally {
          setFloat32MatmulPrecision("highest");
        }
      },
    );
  });
});
