/**
 * WASM SIMD kernels: GEMM (packed panels, 4x8 f32x4 register tile), elementwise ops,
 * softmax, FFT and float64 linalg, all reading tensors where they live in the CPU memory.
 * Each kernel's supports() refuses what it does not handle (the reference takes it) and says why.
 */
import { type DType, empty, linalgFailure, type Tensor } from "@backplane/core";
import {
  type AnyKernelDefinition,
  type BinaryParams,
  type FftParams,
  type KernelDefinition,
  type LinalgParams,
  type MatmulParams,
  type OpParams,
  qrShapes,
  type SoftmaxParams,
  solveOutputShape,
  svdShapes,
  type UnaryParams,
} from "@backplane/core/backend";
import {
  addressOf,
  cpuThreads,
  f64View,
  i32View,
  inWasmMemory,
  matricesOf,
  parallelFor,
  pivotsTensor,
  rightHandSides,
  Scratch,
  stackMatrices,
  writeNumber,
} from "@backplane/core/cpu";
import type { GemmModule, KernelsModule } from "../wasm/exports.ts";
import { planGemm } from "./gemm-layout.ts";
import { attentionKernels } from "./wasm-attention.ts";

export const modules: { gemm?: GemmModule; kernels?: KernelsModule } = {};

const F32_F64: readonly DType[] = ["float32", "float64"];
const notInMemory =
  "a tensor is not in the CPU memory WASM kernels share (created before the WASM memory existed?)";
const alive = (...ts: Tensor[]): true | string => (ts.every(inWasmMemory) ? true : notInMemory);

function kernel<P extends OpParams>(
  op: string,
  name: string,
  run: (p: P) => unknown,
  supports?: (p: P) => true | string,
  dtypes = F32_F64,
): KernelDefinition<P> {
  return {
    op,
    name,
    device: "cpu",
    dtypes,
    deterministic: true,
    priority: 50,
    supports,
    run,
  };
}

// ---- GEMM ----

function gemm(p: MatmulParams): Tensor {
  const g = modules.gemm!;
  const { m, n, k } = p;
  const out = empty(p.outShape, { dtype: p.dtype });
  if (m === 0 || n === 0) return out;
  if (k === 0) {
    out.hostData().fill(0 as never, 0, out.numel);
    return out;
  }
  let plan: ReturnType<typeof planGemm> | undefined;
  const scratch = new Scratch();
  try {
    plan = planGemm(p);
    const f32 = p.dtype === "float32";
    const bpe = f32 ? 4 : 8;
    const threads = cpuThreads();
    const ws = (f32 ? g.sgemmWorkspaceBytes : g.dgemmWorkspaceBytes)(m, n, k);
    const wsStride = Math.ceil(ws / 64) * 64;
    const work = scratch.alloc(wsStride * threads);
    const A = addressOf(plan.a.tensor);
    const B = addressOf(plan.b.tensor);
    const C = addressOf(out);
    const { a, b } = plan;
    // Split the rows of C over the threads (the columns when C is wide and short): each
    // thread runs the same kernel on its block with its own packing space, so every
    // element sums over k in the same order whatever the thread count.
    const byRows = m >= n;
    for (let i = 0; i < plan.aOffsets.length; i++) {
      const args = [
        m,
        n,
        k,
        A + plan.aOffsets[i] * bpe,
        a.ld,
        a.trans ? 1 : 0,
        B + plan.bOffsets[i] * bpe,
        b.ld,
        b.trans ? 1 : 0,
        C + i * m * n * bpe,
        n,
        work,
      ];
      const step = byRows
        ? [0, 0, 0, (a.trans ? 1 : a.ld) * bpe, 0, 0, 0, 0, 0, n * bpe, 0, 0]
        : [0, 0, 0, 0, 0, 0, (b.trans ? b.ld : 1) * bpe, 0, 0, bpe, 0, 0];
      parallelFor(
        {
          module: "backend-cpu-mkl/gemm",
          fn: f32 ? "sgemm" : "dgemm",
          args,
          step,
          countArg: byRows ? 0 : 1,
          threadArgs: [{ index: 11, stride: wsStride }],
          items: byRows ? m : n,
          label: "gemm",
        },
        threads,
      );
    }
    return out;
  } catch (err) {
    out.dispose(); // a failed plan or run (out of memory) leaves no output behind
    throw err;
  } finally {
    scratch.release();
    plan?.release();
  }
}

// ---- elementwise ----

const sameShape = (x: readonly number[], y: readonly number[]) =>
  x.length === y.length && x.every((d, i) => d === y[i]);

/** `small` without its leading 1s is a suffix of `big`: it repeats over big's rows. */
function isTrailingRow(big: readonly number[], small: readonly number[]): boolean {
  let i = 0;
  while (i < small.length && small[i] === 1) i++;
  const rest = small.slice(i);
  return rest.length <= big.length && rest.every((d, j) => d === big[big.length - rest.length + j]);
}

/** How b combines with a: the same shape, or one repeated over the other's rows (+ and * commute). */
function binaryLayout(
  p: BinaryParams,
): { a: Tensor; b: Tensor; rows: number; cols: number } | string {
  const { a, b, outShape } = p;
  if (!a.isContiguous || !b.isContiguous) return "strided inputs (a transposed view)";
  if (sameShape(a.shape, b.shape)) return { a, b, rows: 1, cols: a.numel };
  if (sameShape(a.shape, outShape) && isTrailingRow(a.shape, b.shape))
    return { a, b, rows: a.numel / Math.max(b.numel, 1), cols: b.numel };
  if (sameShape(b.shape, outShape) && isTrailingRow(b.shape, a.shape))
    return { a: b, b: a, rows: b.numel / Math.max(a.numel, 1), cols: a.numel };
  return "broadcast other than a row repeated over the other operand";
}

function binary(which: "add" | "mul") {
  return kernel<BinaryParams>(
    which,
    `wasm-${which}`,
    (p) => {
      const m = modules.kernels!;
      const l = binaryLayout(p) as { a: Tensor; b: Tensor; rows: number; cols: number };
      const out = empty(p.outShape, { dtype: p.dtype });
      if (out.numel === 0) return out;
      const sfx = p.dtype === "float32" ? "_f32" : "_f64";
      if (l.rows === 1)
        m[`${which}${sfx}` as "add_f32"](addressOf(l.a), addressOf(l.b), addressOf(out), l.cols);
      else
        m[`${which}Row${sfx}` as "addRow_f32"](
          addressOf(l.a),
          addressOf(l.b),
          addressOf(out),
          l.rows,
          l.cols,
        );
      return out;
    },
    (p) => {
      const ok = alive(p.a, p.b);
      if (ok !== true) return ok;
      const l = binaryLayout(p);
      return typeof l === "string" ? l : true;
    },
  );
}

function unary(op: "relu" | "gelu") {
  return kernel<UnaryParams>(
    op,
    `wasm-${op}`,
    (p) => {
      const m = modules.kernels!;
      const out = empty(p.x.shape, { dtype: p.dtype });
      if (out.numel === 0) return out;
      const sfx = p.dtype === "float32" ? "_f32" : "_f64";
      const fn =
        op === "relu" ? `relu${sfx}` : p.approximate === "tanh" ? `geluTanh${sfx}` : `gelu${sfx}`;
      m[fn as "relu_f32"](addressOf(p.x), addressOf(out), out.numel);
      return out;
    },
    (p) => (p.x.isContiguous ? alive(p.x) : "strided input (a transposed view)"),
  );
}

function softmaxKernel(op: "softmax" | "logSoftmax") {
  return kernel<SoftmaxParams>(
    op,
    `wasm-${op}`,
    (p) => {
      const m = modules.kernels!;
      const out = empty(p.x.shape, { dtype: p.dtype });
      const cols = p.x.rank === 0 ? 1 : p.x.shape[p.dim];
      if (out.numel === 0) return out;
      const fn = `${op}${p.dtype === "float32" ? "_f32" : "_f64"}` as "softmax_f32";
      m[fn](addressOf(p.x), addressOf(out), out.numel / cols, cols);
      return out;
    },
    (p) => {
      if (!p.x.isContiguous) return "strided input (a transposed view)";
      if (p.x.rank > 0 && p.dim !== p.x.rank - 1)
        return "softmax over a dimension other than the last";
      return alive(p.x);
    },
  );
}

// ---- FFT ----

function fftKernel(kind: FftParams["kind"]) {
  return kernel<FftParams>(
    kind,
    `wasm-${kind}`,
    (p) => {
      const m = modules.kernels!;
      const { x, n, norm } = p;
      const inverse = kind === "ifft" || kind === "irfft";
      const scale =
        norm === "ortho" ? 1 / Math.sqrt(n) : (norm === "forward") !== inverse ? 1 / n : 1;
      const out = empty(p.outShape, { dtype: p.dtype });
      const bins = Math.floor(n / 2) + 1;
      const inLen = kind === "rfft" ? n : kind === "irfft" ? 2 * bins : 2 * n; // float64s per signal
      const outLen = kind === "irfft" ? n : kind === "rfft" ? 2 * bins : 2 * n;
      const signals = out.numel / Math.max(outLen, 1);
      const src = x.toFloat64();
      const scratch = new Scratch();
      try {
        const bytes = m.fftWorkspaceBytes(n);
        if (bytes < 0) throw new Error(`wasm-${kind}: workspace for n=${n} exceeds 2 GiB`);
        const work = scratch.alloc(bytes);
        const ip = scratch.alloc(inLen * 8);
        const op = scratch.alloc(outLen * 8);
        // Only after the allocations: growing a plain (unshared) WASM memory detaches views
        // taken before, and writes through one are silently lost (the output stayed zeros).
        const dst = out.hostData();
        for (let s = 0; s < signals; s++) {
          f64View(ip, inLen).set(src.subarray(s * inLen, (s + 1) * inLen));
          if (kind === "rfft") m.rfft_r2c(ip, op, n, work);
          else if (kind === "irfft") m.irfft_c2r(ip, op, n, work);
          else m.fft_c2c(ip, op, n, inverse ? 1 : 0, work);
          const res = f64View(op, outLen);
          for (let i = 0; i < outLen; i++)
            writeNumber(p.dtype, dst, s * outLen + i, res[i] * scale);
        }
      } finally {
        scratch.release();
      }
      return out;
    },
    (p) => {
      const last = p.complexInput ? p.x.rank - 2 : p.x.rank - 1;
      if (p.dim !== last) return "transforms along a dimension other than the last";
      const len = p.x.shape[p.dim];
      const expected = kind === "irfft" ? Math.floor(p.n / 2) + 1 : p.n;
      if (len !== expected) return "padding or trimming to n";
      // The WASM takes n as an i32: a longer n would wrap (2^31 + 2 to a negative length).
      if (p.n > 0x7fffffff) return `length ${p.n} needs more than 2 GiB of WASM workspace`;
      // -1: the workspace would pass 2 GiB (i32 bytes); a 64-byte block would then be overrun.
      if ((modules.kernels?.fftWorkspaceBytes(p.n) ?? 0) < 0)
        return `length ${p.n} needs more than 2 GiB of WASM workspace`;
      return true;
    },
  );
}

// ---- linalg ----

function linalg(op: string, run: (p: LinalgParams, m: KernelsModule, s: Scratch) => unknown) {
  return kernel<LinalgParams>(
    op,
    `wasm-${op}`,
    (p) => {
      const s = new Scratch();
      try {
        return run(p, modules.kernels!, s);
      } finally {
        s.release();
      }
    },
    workspaceFits,
  );
}

/**
 * One block of `length` float64 that each matrix of a batch is copied into in turn, for the
 * routines to read: a block per matrix (Scratch.f64) held a second copy of the whole batch
 * in the CPU memory until the kernel returned.
 */
function reusedInput(s: Scratch, length: number): (data: Float64Array) => number {
  const p = s.alloc(length * 8);
  return (data) => {
    f64View(p, data.length).set(data); // a fresh view: an allocation may have grown the memory
    return p;
  };
}

/** The routines' workspace must fit an i32 (linalgWorkspaceBytes is -1 past it): else the reference runs. */
function workspaceFits(p: LinalgParams): true | string {
  const m = modules.kernels;
  if (!m) return "the WASM kernels module is not loaded";
  return m.linalgWorkspaceBytes(p.m, p.n) >= 0
    ? true
    : `a ${p.m} x ${p.n} matrix needs a workspace over 2 GiB`;
}

const linalgKernels = [
  linalg("cholesky", (p, m, s) => {
    const n = p.n;
    const l = s.alloc(n * n * 8);
    const input = reusedInput(s, n * n);
    const parts = matricesOf(p.a, n, n).map((a) => {
      const info = m.cholesky(input(a), l, n, p.upper ? 1 : 0);
      if (info > 0) throw linalgFailure.notPositiveDefinite("cholesky", info);
      const r = f64View(l, n * n).slice();
      if (!p.upper) return r;
      const t = new Float64Array(n * n);
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) t[j * n + i] = r[i * n + j];
      return t;
    });
    return stackMatrices(parts, [...p.a.shape], p.dtype);
  }),
  linalg("inv", (p, m, s) => {
    const n = p.n;
    const out = s.alloc(n * n * 8);
    const work = s.alloc(m.linalgWorkspaceBytes(n, n));
    const input = reusedInput(s, n * n);
    const parts = matricesOf(p.a, n, n).map((a) => {
      const info = m.inv(input(a), n, out, work);
      if (info > 0) throw linalgFailure.singular("inv", info);
      return f64View(out, n * n).slice();
    });
    return stackMatrices(parts, [...p.a.shape], p.dtype);
  }),
  linalg("solve", (p, m, s) => {
    const n = p.n;
    const { bs, nrhs } = rightHandSides(p);
    const x = s.alloc(n * nrhs * 8);
    const work = s.alloc(m.linalgWorkspaceBytes(n, n));
    const inputA = reusedInput(s, n * n);
    const inputB = reusedInput(s, n * nrhs);
    const parts = matricesOf(p.a, n, n).map((a, i) => {
      const info = m.solve(inputA(a), n, inputB(bs[i]), nrhs, x, work);
      if (info > 0) throw linalgFailure.singular("solve", info);
      return f64View(x, n * nrhs).slice();
    });
    return stackMatrices(parts, solveOutputShape(p, nrhs), p.dtype);
  }),
  linalg("luFactor", (p, m, s) => {
    const n = p.n;
    const lu = s.alloc(n * n * 8);
    const piv = s.alloc(n * 4);
    const input = reusedInput(s, n * n);
    const res = matricesOf(p.a, n, n).map((a) => {
      const info = m.luFactor(input(a), lu, piv, n);
      // torch.linalg.lu_factor raises on an exactly zero pivot, as inv does.
      if (info > 0) throw linalgFailure.singular("luFactor", info);
      return { lu: f64View(lu, n * n).slice(), pivots: i32View(piv, n).slice() };
    });
    return {
      LU: stackMatrices(
        res.map((r) => r.lu),
        [...p.a.shape],
        p.dtype,
      ),
      pivots: pivotsTensor(
        res.map((r) => r.pivots),
        p,
      ),
    };
  }),
  linalg("qr", (p, m, s) => {
    const shapes = qrShapes(p);
    const qn = shapes.q[shapes.q.length - 1] * p.m;
    const rn = shapes.r[shapes.r.length - 2] * p.n;
    const q = s.alloc(qn * 8);
    const r = s.alloc(rn * 8);
    const work = s.alloc(m.linalgWorkspaceBytes(p.m, p.n));
    const input = reusedInput(s, p.m * p.n);
    const res = matricesOf(p.a, p.m, p.n).map((a) => {
      m.qr(input(a), p.m, p.n, p.mode === "complete" ? 1 : 0, q, r, work);
      return { q: f64View(q, qn).slice(), r: f64View(r, rn).slice() };
    });
    return {
      Q: stackMatrices(
        res.map((x) => x.q),
        shapes.q,
        p.dtype,
      ),
      R: stackMatrices(
        res.map((x) => x.r),
        shapes.r,
        p.dtype,
      ),
    };
  }),
  linalg("eigh", (p, m, s) => {
    const n = p.n;
    const w = s.alloc(n * 8);
    const v = s.alloc(n * n * 8);
    const work = s.alloc(m.linalgWorkspaceBytes(n, n));
    const input = reusedInput(s, n * n);
    const res = matricesOf(p.a, n, n).map((a) => {
      const info = m.eigh(input(a), n, w, v, work);
      if (info !== 0)
        throw linalgFailure.didNotConverge(
          "eigh",
          `code ${info}: NaN or infinity in the input, or too many QL sweeps`,
        );
      return { w: f64View(w, n).slice(), v: f64View(v, n * n).slice() };
    });
    return {
      eigenvalues: stackMatrices(
        res.map((r) => r.w),
        [...p.batchShape, n],
        p.dtype,
      ),
      eigenvectors: stackMatrices(
        res.map((r) => r.v),
        [...p.a.shape],
        p.dtype,
      ),
    };
  }),
  linalg("svd", (p, m, s) => {
    const shapes = svdShapes(p);
    const un = p.m * shapes.u[shapes.u.length - 1];
    const k = Math.min(p.m, p.n);
    const vn = shapes.vh[shapes.vh.length - 2] * p.n;
    const u = s.alloc(un * 8);
    const sv = s.alloc(k * 8);
    const vh = s.alloc(vn * 8);
    const work = s.alloc(m.linalgWorkspaceBytes(p.m, p.n));
    const input = reusedInput(s, p.m * p.n);
    const res = matricesOf(p.a, p.m, p.n).map((a) => {
      const info = m.svd(input(a), p.m, p.n, p.fullMatrices ? 1 : 0, u, sv, vh, work);
      if (info !== 0)
        throw linalgFailure.didNotConverge(
          "svd",
          `code ${info}: NaN or infinity in the input, or too many Jacobi sweeps`,
        );
      return { u: f64View(u, un).slice(), s: f64View(sv, k).slice(), vh: f64View(vh, vn).slice() };
    });
    return {
      U: stackMatrices(
        res.map((r) => r.u),
        shapes.u,
        p.dtype,
      ),
      S: stackMatrices(
        res.map((r) => r.s),
        shapes.s,
        p.dtype,
      ),
      Vh: stackMatrices(
        res.map((r) => r.vh),
        shapes.vh,
        p.dtype,
      ),
    };
  }),
];

export function wasmKernels(): AnyKernelDefinition[] {
  return [
    kernel<MatmulParams>("matmul", "wasm-gemm", gemm, (p) => alive(p.a, p.b)),
    binary("add"),
    binary("mul"),
    unary("relu"),
    unary("gelu"),
    softmaxKernel("softmax"),
    softmaxKernel("logSoftmax"),
    fftKernel("fft"),
    fftKernel("ifft"),
    fftKernel("rfft"),
    fftKernel("irfft"),
    ...linalgKernels,
    ...attentionKernels(),
  ];
}
