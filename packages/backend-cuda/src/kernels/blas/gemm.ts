/**
 * Row-major batched GEMM on cuBLAS or cuBLASLt. Tensors are row-major with arbitrary
 * strides; cuBLAS is column-major, so C = A B is computed as C^T = B^T A^T: each operand is
 * described by the transpose flag and leading dimension that make its column-major view
 * right (a transposed view costs nothing), batches use the strided-batched call when every
 * operand's batch offsets form an arithmetic sequence (broadcast dims give stride 0) and
 * pointer arrays otherwise. Operands no GEMM can read (e.g. every other column) are first
 * gathered into a contiguous buffer by the copy2d kernel.
 */
import { DeviceError } from "@backplane/core";
import { launchCopy2d } from "../../copy2d.ts";
import { check } from "../../errors.ts";
import type { CublasLtSymbols } from "../../layer.ts";
import {
  HEURISTIC_RESULT,
  HEURISTIC_RESULT_BYTES,
  LIBRARY_ENUMS as X,
} from "../../native/library-api.ts";
import type { CudaRuntime, DeviceScratch } from "../../runtime.ts";
import { cublasWorkspaceBytes, type GemmMode } from "./modes.ts";

/** One logical (rows x cols) matrix per batch entry: element offsets and element strides. */
export interface Operand {
  ptr: bigint;
  offsets: ArrayLike<number>;
  rs: number;
  cs: number;
}

export interface ColumnMajor {
  /** cublasOperation_t applied to the stored matrix. */
  op: number;
  ld: number;
}

/** cuBLAS takes m, n, k, leading dimensions and batch counts as C int. */
export const CUBLAS_INT_MAX = 2 ** 31 - 1;

/**
 * How cuBLAS must read a row-major logical r x c matrix X (strides rs, cs) so that op(stored)
 * is X^T: CUBLAS_OP_N when rows are contiguous (cs = 1, ld = rs), CUBLAS_OP_T when columns are
 * (rs = 1, ld = cs); null when neither, or when the leading dimension does not fit cuBLAS's
 * int (a narrow slice of a huge tensor): it must be gathered first.
 */
export function columnMajorView(r: number, c: number, rs: number, cs: number): ColumnMajor | null {
  const fits = (ld: number, min: number) => ld >= Math.max(min, 1) && ld <= CUBLAS_INT_MAX;
  if (c <= 1 || cs === 1) {
    const ld = r <= 1 ? Math.max(c, 1) : rs;
    if (fits(ld, c)) return { op: X.CUBLAS_OP_N, ld };
  }
  if (r <= 1 || rs === 1) {
    const ld = c <= 1 ? Math.max(r, 1) : cs;
    if (fits(ld, r)) return { op: X.CUBLAS_OP_T, ld };
  }
  return null;
}

/** Why cuBLAS cannot take a problem's sizes (C int arguments), or undefined when it can. */
export function cublasSizeProblem(
  m: number,
  n: number,
  k: number,
  batch: number,
): string | undefined {
  const big = Object.entries({ m, n, k, batch }).filter(([, v]) => v > CUBLAS_INT_MAX);
  if (big.length === 0) return undefined;
  const list = big.map(([name, v]) => `${name}=${v}`).join(", ");
  return `cuBLAS takes int sizes (at most ${CUBLAS_INT_MAX}); got ${list}`;
}

/** The common difference of the offsets (0 for one entry or a broadcast), or null. */
export function uniformStride(offsets: ArrayLike<number>): number | null {
  if (offsets.length <= 1) return 0;
  const d = offsets[1]! - offsets[0]!;
  if (d < 0) return null;
  for (let i = 2; i < offsets.length; i++) if (offsets[i]! - offsets[i - 1]! !== d) return null;
  return d;
}

export interface GemmProblem {
  m: number;
  n: number;
  k: number;
  batch: number;
  a: Operand;
  b: Operand;
  /** C: row-major rows of ldc elements, batch entries at c.offsets. */
  c: { ptr: bigint; offsets: ArrayLike<number>; ldc: number };
  /** Bytes per element of A/B and of C. */
  abBytes: number;
  cBytes: number;
}

/** The column-major call that computes a row-major problem. */
export interface GemmPlan {
  transa: number;
  transb: number;
  /** cuBLAS's m, n, k (= the problem's n, m, k). */
  M: number;
  N: number;
  K: number;
  lda: number;
  ldb: number;
  ldc: number;
  batch: number;
  /** Strided batched (all offsets uniform) or pointer arrays. */
  strided: boolean;
  strideA: number;
  strideB: number;
  strideC: number;
  /** cuBLAS's A is the problem's B and vice versa. */
  A: Operand;
  B: Operand;
}

/** Plans the cuBLAS call for a row-major problem; a string says which operand needs gathering. */
export function planGemm(p: GemmProblem): GemmPlan | string {
  const viewB = columnMajorView(p.k, p.n, p.b.rs, p.b.cs);
  const viewA = columnMajorView(p.m, p.k, p.a.rs, p.a.cs);
  if (!viewA) return `A's strides [${p.a.rs}, ${p.a.cs}] are neither row- nor column-major`;
  if (!viewB) return `B's strides [${p.b.rs}, ${p.b.cs}] are neither row- nor column-major`;
  const sA = uniformStride(p.b.offsets);
  const sB = uniformStride(p.a.offsets);
  const sC = uniformStride(p.c.offsets);
  const strided = p.batch <= 1 || (sA !== null && sB !== null && sC !== null);
  return {
    transa: viewB.op,
    transb: viewA.op,
    M: p.n,
    N: p.m,
    K: p.k,
    lda: viewB.ld,
    ldb: viewA.ld,
    ldc: p.c.ldc,
    batch: p.batch,
    strided,
    strideA: sA ?? 0,
    strideB: sB ?? 0,
    strideC: sC ?? 0,
    A: p.b,
    B: p.a,
  };
}

/**
 * Gathers a strided batched matrix into a contiguous [batch, rows, cols] scratch buffer (the
 * copy2d kernel) and returns it as a row-major operand.
 */
export function gatherOperand(
  rt: CudaRuntime,
  s: DeviceScratch,
  op: Operand,
  rows: number,
  cols: number,
  batch: number,
  elemBytes: number,
): Operand {
  const dst = s.alloc(batch * rows * cols * elemBytes);
  launchCopy2d(rt, s.device, elemBytes, {
    dst,
    src: op.ptr,
    table: s.upload(BigInt64Array.from(Array.from(op.offsets, (o) => BigInt(o)))),
    srcBatch: 0,
    batch,
    rows,
    cols,
    srcRowStride: op.rs,
    srcColStride: op.cs,
    dstBatch: rows * cols,
    dstRowStride: cols,
    dstColStride: 1,
  });
  return {
    ptr: dst,
    offsets: Array.from({ length: batch }, (_, i) => i * rows * cols),
    rs: cols,
    cs: 1,
  };
}

/** Makes every operand of the problem GEMM-readable, gathering where needed. */
export function readyProblem(rt: CudaRuntime, s: DeviceScratch, p: GemmProblem): GemmPlan {
  let plan = planGemm(p);
  if (typeof plan === "string") {
    const q = { ...p };
    if (!columnMajorView(p.m, p.k, p.a.rs, p.a.cs))
      q.a = gatherOperand(rt, s, p.a, p.m, p.k, p.batch, p.abBytes);
    if (!columnMajorView(p.k, p.n, p.b.rs, p.b.cs))
      q.b = gatherOperand(rt, s, p.b, p.k, p.n, p.batch, p.abBytes);
    plan = planGemm(q);
    if (typeof plan === "string") throw new DeviceError(`GEMM planning failed: ${plan}`);
  }
  return plan;
}

function scalars(mode: GemmMode, alpha: number, beta: number): [ArrayBufferView, ArrayBufferView] {
  return mode.computeType === X.CUBLAS_COMPUTE_64F
    ? [Float64Array.of(alpha), Float64Array.of(beta)]
    : [Float32Array.of(alpha), Float32Array.of(beta)];
}

const addr = (op: Operand, i: number, bytes: number) => op.ptr + BigInt(op.offsets[i]! * bytes);

/** cuBLASLt's largest alignment preference (and its default when none is set). */
const MAX_ALIGNMENT = 256;

/**
 * The largest power of two up to 256 that divides a matrix's address and its batch stride in
 * bytes (0: one matrix, or a broadcast): what its MIN_ALIGNMENT preference says (torch's
 * _getAlignment, pytorch/pytorch#98975). cuBLASLt assumes 256 unless told, and a view's
 * pointer (storage + offset) is often only element-aligned.
 */
function ltAlignment(ptr: bigint, strideBytes = 0): number {
  let a = MAX_ALIGNMENT;
  while (a > 1 && (ptr % BigInt(a) !== 0n || strideBytes % a !== 0)) a /= 2;
  return a;
}

/** Runs a planned GEMM through cuBLAS (cublasGemmEx / StridedBatchedEx / BatchedEx). */
// Long: one cuBLAS call per layout case (plain, strided-batched, pointer-array), each reading the same plan.
export function runCublas(
  rt: CudaRuntime,
  s: DeviceScratch,
  plan: GemmPlan,
  p: GemmProblem,
  mode: GemmMode,
  cType: number,
  alpha = 1,
  beta = 0,
): void {
  const { handle, lib } = rt.cublas(s.device);
  check("cublas", "cublasSetMathMode", lib.cublasSetMathMode(handle, mode.mathMode));
  const [al, be] = scalars(mode, alpha, beta);
  const cOp: Operand = { ptr: p.c.ptr, offsets: p.c.offsets, rs: p.c.ldc, cs: 1 };
  const ab = p.abBytes;
  if (plan.batch <= 1) {
    check(
      "cublas",
      "cublasGemmEx",
      lib.cublasGemmEx(
        handle,
        plan.transa,
        plan.transb,
        plan.M,
        plan.N,
        plan.K,
        al,
        addr(plan.A, 0, ab),
        mode.dataType,
        plan.lda,
        addr(plan.B, 0, ab),
        mode.dataType,
        plan.ldb,
        be,
        addr(cOp, 0, p.cBytes),
        cType,
        plan.ldc,
        mode.computeType,
        X.CUBLAS_GEMM_DEFAULT,
      ),
    );
  } else if (plan.strided) {
    check(
      "cublas",
      "cublasGemmStridedBatchedEx",
      lib.cublasGemmStridedBatchedEx(
        handle,
        plan.transa,
        plan.transb,
        plan.M,
        plan.N,
        plan.K,
        al,
        addr(plan.A, 0, ab),
        mode.dataType,
        plan.lda,
        plan.strideA,
        addr(plan.B, 0, ab),
        mode.dataType,
        plan.ldb,
        plan.strideB,
        be,
        addr(cOp, 0, p.cBytes),
        cType,
        plan.ldc,
        plan.strideC,
        plan.batch,
        mode.computeType,
        X.CUBLAS_GEMM_DEFAULT,
      ),
    );
  } else {
    const table = (op: Operand, bytes: number) =>
      s.upload(BigUint64Array.from({ length: plan.batch }, (_, i) => addr(op, i, bytes)));
    check(
      "cublas",
      "cublasGemmBatchedEx",
      lib.cublasGemmBatchedEx(
        handle,
        plan.transa,
        plan.transb,
        plan.M,
        plan.N,
        plan.K,
        al,
        table(plan.A, ab),
        mode.dataType,
        plan.lda,
        table(plan.B, ab),
        mode.dataType,
        plan.ldb,
        be,
        table(cOp, p.cBytes),
        cType,
        plan.ldc,
        plan.batch,
        mode.computeType,
        X.CUBLAS_GEMM_DEFAULT,
      ),
    );
  }
}

/** Runs a planned, strided GEMM through cuBLASLt (descriptors, heuristic, cublasLtMatmul). */
// Long: the cuBLASLt descriptor set-up in the order the library requires, released in one finally.
export function runCublasLt(
  rt: CudaRuntime,
  s: DeviceScratch,
  plan: GemmPlan,
  p: GemmProblem,
  mode: GemmMode,
  cType: number,
  alpha = 1,
  beta = 0,
): void {
  if (!plan.strided)
    throw new DeviceError("cuBLASLt takes strided batches only; this batch needs pointer arrays");
  const { handle, lib } = rt.cublasLt(s.device);
  const out = new BigUint64Array(1);
  const created: [string, bigint][] = [];
  const i32 = (v: number) => Int32Array.of(v);
  const i64 = (v: number) => BigInt64Array.of(BigInt(v));
  try {
    check(
      "cublas",
      "cublasLtMatmulDescCreate",
      lib.cublasLtMatmulDescCreate(out, mode.computeType, mode.scaleType),
    );
    const desc = out[0]!;
    created.push(["desc", desc]);
    const setDesc = (attr: number, v: Int32Array) =>
      check(
        "cublas",
        "cublasLtMatmulDescSetAttribute",
        lib.cublasLtMatmulDescSetAttribute(desc, attr, v, v.byteLength),
      );
    setDesc(X.CUBLASLT_MATMUL_DESC_TRANSA, i32(plan.transa));
    setDesc(X.CUBLASLT_MATMUL_DESC_TRANSB, i32(plan.transb));
    const layout = (type: number, rows: number, cols: number, ld: number, stride: number) => {
      check(
        "cublas",
        "cublasLtMatrixLayoutCreate",
        lib.cublasLtMatrixLayoutCreate(out, type, rows, cols, ld),
      );
      const l = out[0]!;
      created.push(["layout", l]);
      if (plan.batch > 1) {
        const c = i32(plan.batch);
        check(
          "cublas",
          "cublasLtMatrixLayoutSetAttribute",
          lib.cublasLtMatrixLayoutSetAttribute(
            l,
            X.CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
            c,
            c.byteLength,
          ),
        );
        const st = i64(stride);
        check(
          "cublas",
          "cublasLtMatrixLayoutSetAttribute",
          lib.cublasLtMatrixLayoutSetAttribute(
            l,
            X.CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
            st,
            st.byteLength,
          ),
        );
      }
      return l;
    };
    const N = X.CUBLAS_OP_N;
    const aDesc = layout(
      mode.dataType,
      plan.transa === N ? plan.M : plan.K,
      plan.transa === N ? plan.K : plan.M,
      plan.lda,
      plan.strideA,
    );
    const bDesc = layout(
      mode.dataType,
      plan.transb === N ? plan.K : plan.N,
      plan.transb === N ? plan.N : plan.K,
      plan.ldb,
      plan.strideB,
    );
    const cDesc = layout(cType, plan.M, plan.N, plan.ldc, plan.strideC);
    check("cublas", "cublasLtMatmulPreferenceCreate", lib.cublasLtMatmulPreferenceCreate(out));
    const pref = out[0]!;
    created.push(["pref", pref]);
    const aPtr = addr(plan.A, 0, p.abBytes);
    const bPtr = addr(plan.B, 0, p.abBytes);
    const cPtr = p.c.ptr + BigInt(p.c.offsets[0]! * p.cBytes);
    const batched = plan.batch > 1;
    ltPreferences(lib, pref, {
      // cuBLASLt's workspace limit is torch's (CUBLASLT_WORKSPACE_SIZE defaults to the cuBLAS
      // workspace, 32 MiB on sm_90): Hopper's fastest kernels want more than 4 MiB.
      workspaceBytes: cublasWorkspaceBytes(undefined, rt.driver.device(s.device).major),
      reductionSchemeMask: mode.reductionSchemeMask,
      a: ltAlignment(aPtr, batched ? plan.strideA * p.abBytes : 0),
      b: ltAlignment(bPtr, batched ? plan.strideB * p.abBytes : 0),
      // D is C (the product is written in place).
      c: ltAlignment(cPtr, batched ? plan.strideC * p.cBytes : 0),
    });
    const results = new Uint8Array(HEURISTIC_RESULT_BYTES);
    const count = new Int32Array(1);
    check(
      "cublas",
      "cublasLtMatmulAlgoGetHeuristic",
      lib.cublasLtMatmulAlgoGetHeuristic(
        handle,
        desc,
        aDesc,
        bDesc,
        cDesc,
        cDesc,
        pref,
        1,
        results,
        count,
      ),
    );
    if (count[0] === 0)
      throw new DeviceError(
        `cublasLtMatmulAlgoGetHeuristic found no algorithm for this ${mode.computeTypeName} GEMM`,
      );
    const dv = new DataView(results.buffer);
    const wsBytes = Number(dv.getBigUint64(HEURISTIC_RESULT.workspaceSize, true));
    const wsPtr = wsBytes > 0 ? s.alloc(wsBytes) : 0n;
    const [al, be] = scalars(mode, alpha, beta);
    check(
      "cublas",
      "cublasLtMatmul",
      lib.cublasLtMatmul(
        handle,
        desc,
        al,
        aPtr,
        aDesc,
        bPtr,
        bDesc,
        be,
        cPtr,
        cDesc,
        cPtr,
        cDesc,
        results.subarray(HEURISTIC_RESULT.algo, HEURISTIC_RESULT.algo + 64),
        wsPtr,
        wsBytes,
        rt.driver.stream(s.device),
      ),
    );
  } finally {
    for (const [kind, h] of created.reverse()) {
      if (kind === "desc") lib.cublasLtMatmulDescDestroy(h);
      else if (kind === "layout") lib.cublasLtMatrixLayoutDestroy(h);
      else lib.cublasLtMatmulPreferenceDestroy(h);
    }
  }
}

/**
 * Sets the heuristic's preferences: the workspace limit, the reduction schemes the flags allow
 * (only when narrower than all), and the alignment of A, B and C = D in bytes (uint32_t each,
 * as cublasLt.h documents them).
 */
function ltPreferences(
  lib: CublasLtSymbols,
  pref: bigint,
  v: { workspaceBytes: number; reductionSchemeMask: number; a: number; b: number; c: number },
): void {
  const set = (attr: number, value: BigUint64Array | Uint32Array) =>
    check(
      "cublas",
      "cublasLtMatmulPreferenceSetAttribute",
      lib.cublasLtMatmulPreferenceSetAttribute(pref, attr, value, value.byteLength),
    );
  set(X.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, BigUint64Array.of(BigInt(v.workspaceBytes)));
  if (v.reductionSchemeMask !== X.CUBLASLT_REDUCTION_SCHEME_MASK)
    set(X.CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, Uint32Array.of(v.reductionSchemeMask));
  set(X.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, Uint32Array.of(v.a));
  set(X.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, Uint32Array.of(v.b));
  set(X.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, Uint32Array.of(v.c));
  set(X.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, Uint32Array.of(v.c));
}
