/**
 * The one table of cuBLAS / cuBLASLt / cuFFT / cuSOLVER / cuSPARSELt / MAGMA prototypes
 * (src/native/library-api.ts), checked for shape. Those headers are not installed here, so
 * each `c` prototype is the documentation's; this test parses it and checks the FFI
 * declaration beside it: the exported name (cublas_v2.h's _v2 names), the arity, the size
 * class of every argument and of the result, handles declared as addresses, and the
 * documented enumerator numbers (transcribed again below, independently of the table).
 */

import { ACCEPTS, classify, pointerKind, prototype } from "@backplane/testkit/c-header";
import { describe, expect, it } from "vitest";
import {
  CUBLAS_DECL,
  CUBLAS_STATUS_NAMES,
  CUBLAS_V2_EXPORTS,
  CUBLASLT_DECL,
  CUFFT_DECL,
  CUFFT_RESULT_NAMES,
  CUSOLVER_DECL,
  CUSOLVER_STATUS_NAMES,
  HEURISTIC_RESULT,
  HEURISTIC_RESULT_BYTES,
  LIBRARY_API,
  LIBRARY_ENUMS,
  LIBRARY_TYPES,
} from "../src/native/library-api.ts";

/** Types of the table's prototypes: the table's own, plus the library_types.h enums. */
function definitions(): Map<string, string> {
  const defs = new Map<string, string>([
    ["cudaDataType", "enum"],
    ["cudaDataType_t", "enum"],
    ["libraryPropertyType", "enum"],
  ]);
  for (const [name, t] of Object.entries(LIBRARY_TYPES))
    defs.set(name, t.c === "enum" ? "enum" : t.c === "struct" ? "struct" : t.c);
  return defs;
}

describe("the cuBLAS / cuFFT / cuSOLVER table (documented prototypes)", () => {
  const defs = definitions();
  const entries = Object.entries(LIBRARY_API);

  it("every declaration matches its documented prototype", () => {
    const problems: string[] = [];
    for (const [symbol, e] of entries) {
      const proto = prototype(`${e.c};`, /(\w+)\s*\(/.exec(e.c)![1]!);
      if (!proto) {
        problems.push(`${symbol}: cannot parse ${e.c}`);
        continue;
      }
      if (proto.name !== symbol && CUBLAS_V2_EXPORTS[proto.name] !== symbol)
        problems.push(
          `${symbol}: the documented name is ${proto.name}, which exports as ${CUBLAS_V2_EXPORTS[proto.name] ?? proto.name}`,
        );
      if (proto.params.length !== e.args.length)
        problems.push(
          `${symbol}: ${e.args.length} arguments declared, documented ${proto.params.length}`,
        );
      proto.params.forEach((p, i) => {
        const t = e.args[i];
        if (t === undefined) return;
        let cls: string;
        try {
          cls = classify(p.type, defs);
        } catch (err) {
          problems.push(`${symbol}: ${(err as Error).message}`);
          return;
        }
        if (!ACCEPTS[cls as keyof typeof ACCEPTS].includes(t))
          problems.push(`${symbol}: argument ${i} (${p.type} ${p.name}) is ${cls}, declared ${t}`);
        if (pointerKind(p.type, defs) === "handle" && t !== "usize")
          problems.push(`${symbol}: argument ${i} (${p.type}) is a handle: declare it usize`);
      });
      const rc = classify(proto.returns, defs);
      if (!ACCEPTS[rc].filter((x) => x !== "buffer").includes(e.returns))
        problems.push(`${symbol}: returns ${proto.returns} (${rc}), declared ${e.returns}`);
    }
    expect(problems).toEqual([]);
    expect(entries.length).toBeGreaterThan(60);
  });

  it("every entry cites the documentation section it comes from", () => {
    for (const [symbol, e] of entries) {
      expect(e.doc, symbol).toMatch(/ › .+ — (\/cuda\/\S+|icl\.utk\.edu\S*)$/);
    }
    for (const [name, t] of Object.entries(LIBRARY_TYPES)) expect(t.doc, name).toMatch(/ — \S+/);
  });

  it("handle types are pointers (cufftHandle is the documented int), enums are ints", () => {
    for (const [name, t] of Object.entries(LIBRARY_TYPES)) {
      if (t.kind === "handle") {
        expect(t.c.trim().endsWith("*"), name).toBe(true);
        expect(classify(name, defs), name).toBe("pointer");
      }
      if (t.kind === "int-handle") expect(classify(name, defs), name).toBe("i32");
      if (t.kind === "enum") expect(["enum", "i32"]).toContain(classify(name, defs));
    }
    expect(LIBRARY_TYPES.cufftHandle!.kind).toBe("int-handle");
    // Every handle argument in the table is carried as a pointer-width address.
    for (const [symbol, e] of entries) {
      const proto = prototype(`${e.c};`, /(\w+)\s*\(/.exec(e.c)![1]!)!;
      proto.params.forEach((p, i) => {
        const base = p.type.replace(/\bconst\b/g, "").trim();
        if (LIBRARY_TYPES[base]?.kind === "handle")
          expect(e.args[i], `${symbol} ${p.name}`).toBe("usize");
        if (base === "cufftHandle") expect(e.args[i], `${symbol} ${p.name}`).toBe("i32");
      });
    }
  });

  it("the per-library declarations are the table's rows", () => {
    const count = (lib: string) => entries.filter(([, e]) => e.lib === lib).length;
    expect(Object.keys(CUBLAS_DECL)).toHaveLength(count("cublas"));
    expect(Object.keys(CUBLASLT_DECL)).toHaveLength(count("cublasLt"));
    expect(Object.keys(CUFFT_DECL)).toHaveLength(count("cufft"));
    expect(Object.keys(CUSOLVER_DECL)).toHaveLength(count("cusolver"));
    expect(CUBLAS_DECL.cublasGemmStridedBatchedEx.args).toHaveLength(23);
    expect(CUBLASLT_DECL.cublasLtMatmul.args).toHaveLength(16);
    expect(CUSOLVER_DECL.cusolverDnSgesvd.args).toHaveLength(16);
  });

  it("enumerator values are the documented numbers", () => {
    // Transcribed from the documentation's type sections, independently of the table.
    expect(LIBRARY_ENUMS).toEqual({
      CUBLAS_OP_N: 0,
      CUBLAS_OP_T: 1,
      CUBLAS_FILL_MODE_LOWER: 0,
      CUBLAS_FILL_MODE_UPPER: 1,
      CUBLAS_DEFAULT_MATH: 0,
      CUBLAS_PEDANTIC_MATH: 2,
      CUBLAS_TF32_TENSOR_OP_MATH: 3,
      CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: 16,
      CUBLAS_COMPUTE_16F: 64,
      CUBLAS_COMPUTE_32F: 68,
      CUBLAS_COMPUTE_32F_PEDANTIC: 69,
      CUBLAS_COMPUTE_64F: 70,
      CUBLAS_COMPUTE_32F_FAST_16F: 74,
      CUBLAS_COMPUTE_32F_FAST_16BF: 75,
      CUBLAS_COMPUTE_32F_FAST_TF32: 77,
      CUBLAS_GEMM_DEFAULT: -1,
      CUDA_R_32F: 0,
      CUDA_R_64F: 1,
      CUDA_R_16F: 2,
      CUDA_C_32F: 4,
      CUDA_C_64F: 5,
      CUDA_R_16BF: 14,
      MAJOR_VERSION: 0,
      MINOR_VERSION: 1,
      PATCH_LEVEL: 2,
      CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: 0,
      CUBLASLT_MATMUL_DESC_SCALE_TYPE: 1,
      CUBLASLT_MATMUL_DESC_TRANSA: 3,
      CUBLASLT_MATMUL_DESC_TRANSB: 4,
      CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: 5,
      CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: 6,
      CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: 1,
      CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: 3,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: 5,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: 6,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: 7,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: 8,
      CUBLASLT_REDUCTION_SCHEME_NONE: 0,
      CUBLASLT_REDUCTION_SCHEME_INPLACE: 1,
      CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: 2,
      CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: 4,
      CUBLASLT_REDUCTION_SCHEME_MASK: 7,
      CUFFT_R2C: 42,
      CUFFT_C2R: 44,
      CUFFT_C2C: 41,
      CUFFT_D2Z: 106,
      CUFFT_Z2D: 108,
      CUFFT_Z2Z: 105,
      CUFFT_FORWARD: -1,
      CUFFT_INVERSE: 1,
      CUSOLVER_EIG_MODE_NOVECTOR: 0,
      CUSOLVER_EIG_MODE_VECTOR: 1,
    });
    expect(CUBLAS_STATUS_NAMES[15]).toBe("CUBLAS_STATUS_NOT_SUPPORTED");
    expect(CUBLAS_STATUS_NAMES[13]).toBe("CUBLAS_STATUS_EXECUTION_FAILED");
    expect(CUFFT_RESULT_NAMES[8]).toBe("CUFFT_INVALID_SIZE");
    expect(CUSOLVER_STATUS_NAMES[7]).toBe("CUSOLVER_STATUS_INTERNAL_ERROR");
  });

  it("cublasLtMatmulHeuristicResult_t is laid out as documented (96 bytes)", () => {
    // algo: uint64_t data[8]; size_t workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4]
    expect(HEURISTIC_RESULT).toEqual({ algo: 0, workspaceSize: 64, state: 72, wavesCount: 76 });
    expect(HEURISTIC_RESULT_BYTES).toBe(64 + 8 + 4 + 4 + 16);
  });
});
