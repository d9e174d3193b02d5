/**
 * cuBLAS takes m, n, k, leading dimensions and batch counts as C int: a leading dimension past
 * 2^31 - 1 (a narrow slice of a huge tensor) must be gathered into a contiguous operand first,
 * never passed on (the FFI would truncate it), and sizes past it are refused by supports().
 */
import { describe, expect, it } from "vitest";
import {
  CudaRuntime,
  columnMajorView,
  cublasSizeProblem,
  RecordingLayer,
  readyProblem,
  solverSizeProblem,
  LIBRARY_ENUMS as X,
} from "../src/internals.ts";

const INT_MAX = 2 ** 31 - 1;

describe("cuBLAS int limits", () => {
  it("a leading dimension past INT_MAX is not a column-major view", () => {
    expect(columnMajorView(2, 4, INT_MAX, 1)).toEqual({ op: X.CUBLAS_OP_N, ld: INT_MAX });
    expect(columnMajorView(2, 4, INT_MAX + 9, 1)).toBeNull();
    expect(columnMajorView(4, 2, 1, INT_MAX + 9)).toBeNull();
  });

  it("readyProblem gathers an operand whose row stride does not fit an int", () => {
    const layer = new RecordingLayer();
    const rt = new CudaRuntime(layer);
    const rs = INT_MAX + 9;
    const plan = rt.scratch(0, (s) =>
      readyProblem(rt, s, {
        m: 2,
        n: 3,
        k: 4,
        batch: 1,
        a: { ptr: 0x7000000000n, offsets: [5], rs, cs: 1 },
        b: { ptr: 0x7100000000n, offsets: [0], rs: 3, cs: 1 },
        c: { ptr: 0x7200000000n, offsets: [0], ldc: 3 },
        abBytes: 2,
        cBytes: 2,
      }),
    );
    expect(layer.launches.map((l) => l.kernel)).toEqual(["copy2d_b2"]);
    for (const ld of [plan.lda, plan.ldb, plan.ldc]) expect(ld).toBeLessThanOrEqual(INT_MAX);
    expect(plan.ldb).toBe(4);
  });

  it("sizes past INT_MAX are refused with the reason", () => {
    expect(cublasSizeProblem(INT_MAX, 1, 1, 1)).toBeUndefined();
    expect(cublasSizeProblem(1, 2 ** 31, 1, 1)).toBe(
      `cuBLAS takes int sizes (at most ${INT_MAX}); got n=2147483648`,
    );
    expect(cublasSizeProblem(1, 1, 1, 2 ** 32)).toMatch(/batch=4294967296/);
  });
});

describe("cuSOLVER int limits", () => {
  // The params solverSizeProblem reads; the tensors' shapes only (no memory behind them).
  const params = (m: number, n: number, b?: { shape: number[] }, bVector = false) =>
    ({ m, n, b: b ? { ...b, rank: b.shape.length } : null, bVector }) as never;

  it("matrices and right-hand sides of 2^31 elements or more are refused with the reason", () => {
    expect(solverSizeProblem(params(46340, 46340))).toBeUndefined(); // 2147395600 elements
    expect(solverSizeProblem(params(2 ** 31, 1))).toMatch(
      /32-bit API takes int sizes: a 2147483648x1 matrix has 2147483648 elements/,
    );
    expect(solverSizeProblem(params(46341, 46341))).toMatch(/more than 2\^31 - 1/);
    // solve: n x nrhs past the limit while A itself fits
    expect(solverSizeProblem(params(4, 4, { shape: [4, 2 ** 30] }))).toMatch(
      /with 1073741824 right-hand sides/,
    );
    expect(solverSizeProblem(params(4, 4, { shape: [4] }, true))).toBeUndefined();
  });
});
