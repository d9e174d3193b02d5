#!/usr/bin/env node
// Standalone correctness probe for wasm/kernels.wasm (and kernels.nothreads.wasm):
//   node scripts/kernels-probe.mjs [--nothreads] [--quick]
// Elementwise ops and softmax against float64 JS, gelu against a BigInt high-precision
// reference, FFTs against a naive DFT, linalg by reconstruction/orthogonality residuals
// (and, when the monorepo's `typescript` is importable, against the core reference port:
// sizes <= 97, or all with --fullref). --only=elementwise|gelu|softmax|fft|linalg runs one part.
// Every output buffer is poisoned with NaN before each call so unwritten entries show up.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const args = new Set(process.argv.slice(2));
const nothreads = args.has("--nothreads");
const quick = args.has("--quick");

const memory = new WebAssembly.Memory({ initial: 256, maximum: 65536, shared: !nothreads });
const wasmFile = join(root, "wasm", nothreads ? "kernels.nothreads.wasm" : "kernels.wasm");
const module = new WebAssembly.Module(readFileSync(wasmFile));
const imports = WebAssembly.Module.imports(module).map((i) => `${i.module}.${i.name}:${i.kind}`);
const K = new WebAssembly.Instance(module, {
  env: {
    memory,
    abort() {
      throw new Error("abort");
    },
  },
}).exports;

// ------------------------------------------------------------------------------------------
// Bump allocator over the shared memory (>= 65536, 64-byte aligned).
let top = 65536;
function alloc(bytes) {
  const p = top;
  top += Math.ceil(Math.max(bytes, 1) / 64) * 64;
  const need = top + 64;
  if (need > memory.buffer.byteLength)
    memory.grow(Math.ceil((need - memory.buffer.byteLength) / 65536));
  return p;
}
function resetHeap() {
  top = 65536;
}
const F64 = (p, n) => new Float64Array(memory.buffer, p, n);
const F32 = (p, n) => new Float32Array(memory.buffer, p, n);
const I32 = (p, n) => new Int32Array(memory.buffer, p, n);
function putF64(arr) {
  const p = alloc(arr.length * 8);
  F64(p, arr.length).set(arr);
  return p;
}
function putF32(arr) {
  const p = alloc(arr.length * 4);
  F32(p, arr.length).set(arr);
  return p;
}
function poisonF64(n) {
  const p = alloc(n * 8);
  F64(p, n).fill(NaN);
  return p;
}
function poisonF32(n) {
  const p = alloc(n * 4);
  F32(p, n).fill(NaN);
  return p;
}
const getF64 = (p, n) => Float64Array.from(F64(p, n));
const getF32 = (p, n) => Float32Array.from(F32(p, n));

// Deterministic RNG; values in +-[0.1, 1.1).
let seed = 12345;
function rnd() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const rval = () => (rnd() < 0.5 ? -1 : 1) * (0.1 + rnd());
const randArr = (n) => Float64Array.from({ length: n }, rval);

// ------------------------------------------------------------------------------------------
// Reporting
const worst = new Map(); // name -> max error
const failures = [];
function record(name, err, limit) {
  const prev = worst.get(name);
  if (prev === undefined || !(err <= prev.err)) worst.set(name, { err, limit });
  if (!(err <= limit)) failures.push(`${name}: ${err} > ${limit}`);
}
function check(name, cond, detail = "") {
  if (!cond) failures.push(`${name}${detail ? `: ${detail}` : ""}`);
}

// ------------------------------------------------------------------------------------------
// Dense helpers (row-major Float64Array)
function matmul(a, b, m, k, n) {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let p = 0; p < k; p++) {
      const aip = a[i * k + p];
      if (aip === 0) continue;
      const bo = p * n;
      const co = i * n;
      for (let j = 0; j < n; j++) c[co + j] += aip * b[bo + j];
    }
  }
  return c;
}
function transpose(a, m, n) {
  const t = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) t[j * m + i] = a[i * n + j];
  return t;
}
function fro(a) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * a[i];
  return Math.sqrt(s);
}
function diffFro(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  return Math.sqrt(s);
}
function allFinite(a) {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return false;
  return true;
}
/** ||Q^T Q - I||_F / sqrt(cols) for an m x c matrix with orthonormal columns. */
function orthCols(q, m, c) {
  if (c === 0) return 0;
  const g = matmul(transpose(q, m, c), q, c, m, c);
  for (let i = 0; i < c; i++) g[i * c + i] -= 1;
  return fro(g) / Math.sqrt(c);
}
function orthRows(q, r, n) {
  return orthCols(transpose(q, r, n), n, r);
}
const rel = (e, s) => (s === 0 ? e : e / s);

// ------------------------------------------------------------------------------------------
// Optional: the core reference implementations, transpiled with the monorepo's typescript.
async function loadReference() {
  try {
    const ts = (
      await import(
        pathToFileURL(join(root, "..", "..", "node_modules", "typescript", "lib", "typescript.js"))
          .href
      )
    ).default;
    let src = readFileSync(join(root, "..", "core", "src", "reference", "linalg-math.ts"), "utf8");
    // Stub whatever it imports from ../errors.ts: constructible and with any factory method.
    src = src.replace(/^import \{([^}]*)\} from "\.\.\/errors\.ts";$/m, (_, names) =>
      names
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)
        .map(
          (x) =>
            `const ${x} = new Proxy(function () {}, { construct: () => new Error("${x}"), get: () => (...a) => new Error(String(a)) });`,
        )
        .join("\n"),
    );
    const js = ts.transpileModule(src, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    return await import(`data:text/javascript;base64,${Buffer.from(js).toString("base64")}`);
  } catch (e) {
    console.log(`(reference cross-check skipped: ${e.message})`);
    return undefined;
  }
}

// ------------------------------------------------------------------------------------------
// High-precision erf/gelu with BigInt fixed point (P fractional bits).
const P = 256n;
const ONE = 1n << P;
function isqrt(v) {
  if (v < 2n) return v;
  let x = 1n << BigInt(Math.ceil(v.toString(2).length / 2) + 1); // above the root
  for (;;) {
    const y = (x + v / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}
function atanInv(k) {
  // atan(1/k) in fixed point
  const K = BigInt(k);
  const k2 = K * K;
  let term = ONE / K;
  let sum = term;
  for (let n = 1n; term !== 0n; n++) {
    term = -term / k2;
    sum += term / (2n * n + 1n);
  }
  return sum;
}
const PI_FX = 16n * atanInv(5) - 4n * atanInv(239);
const SQRT2_FX = isqrt(2n << (2n * P));
const SQRTPI_FX = isqrt(PI_FX << P);
function toFixed(x) {
  // exact for |x| >= 2^-200
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, x);
  const bits = buf.getBigUint64(0);
  const sign = bits >> 63n ? -1n : 1n;
  const e = Number((bits >> 52n) & 0x7ffn);
  let mant = bits & ((1n << 52n) - 1n);
  let exp;
  if (e === 0) exp = -1074;
  else {
    mant |= 1n << 52n;
    exp = e - 1075;
  }
  const sh = BigInt(exp) + P;
  return sign * (sh >= 0n ? mant << sh : mant >> -sh);
}
function fixedToNumber(v) {
  // correctly rounded (BigInt -> Number rounds to nearest), then an exact power-of-two scale
  return Number(v) / 2 ** Number(P);
}
function erfFixed(z) {
  // 2/sqrt(pi) * sum (-1)^n z^(2n+1) / (n! (2n+1))
  const z2 = (z * z) >> P;
  let term = z;
  let sum = z;
  for (let n = 1n; term !== 0n; n++) {
    term = -((term * z2) >> P) / n;
    sum += term / (2n * n + 1n);
  }
  return (2n * sum * ONE) / SQRTPI_FX;
}
function geluExact(x) {
  if (x === 0) return x;
  const X = toFixed(x);
  const Z = (X * ONE) / SQRT2_FX;
  const E = erfFixed(Z);
  return fixedToNumber((X * (ONE + E)) / (2n * ONE));
}
function ulp64(v) {
  const a = Math.abs(v);
  if (a < 2.2250738585072014e-308) return 5e-324;
  return 2 ** (Math.floor(Math.log2(a)) - 52);
}
function ulp32(v) {
  const a = Math.abs(v);
  if (a < 1.1754943508222875e-38) return 2 ** -149;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
}
/** core/src/reference/basic.ts erf (for comparison with the JS reference formula). */
function erfRef(x) {
  const ax = Math.abs(x);
  if (ax < 2.5) {
    let term = x;
    let sum = x;
    const x2 = x * x;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  if (ax > 6) return Math.sign(x);
  let f = ax;
  const tiny = 1e-300;
  let C = f;
  let D = 0;
  for (let n = 1; n < 300; n++) {
    const an = n / 2;
    D = ax + an * D;
    D = D === 0 ? tiny : 1 / D;
    C = ax + an / C;
    if (C === 0) C = tiny;
    const delta = C * D;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}

// ------------------------------------------------------------------------------------------
function probeElementwise() {
  const sizes = [0, 1, 2, 3, 5, 7, 8, 9, 31, 64, 97, 256, 1001];
  for (const n of sizes) {
    resetHeap();
    const a = randArr(n);
    const b = randArr(n);
    // f64
    const pa = putF64(a);
    const pb = putF64(b);
    for (const [name, f] of [
      ["add_f64", (x, y) => x + y],
      ["mul_f64", (x, y) => x * y],
    ]) {
      const po = poisonF64(n);
      K[name](pa, pb, po, n);
      const o = getF64(po, n);
      let bad = 0;
      for (let i = 0; i < n; i++) if (!Object.is(o[i], f(a[i], b[i]))) bad++;
      check(`${name} n=${n}`, bad === 0, `${bad} mismatches`);
    }
    // f32
    const a32 = Float32Array.from(a);
    const b32 = Float32Array.from(b);
    const qa = putF32(a32);
    const qb = putF32(b32);
    for (const [name, f] of [
      ["add_f32", (x, y) => Math.fround(x + y)],
      ["mul_f32", (x, y) => Math.fround(x * y)],
    ]) {
      const po = poisonF32(n);
      K[name](qa, qb, po, n);
      const o = getF32(po, n);
      let bad = 0;
      for (let i = 0; i < n; i++) if (!Object.is(o[i], f(a32[i], b32[i]))) bad++;
      check(`${name} n=${n}`, bad === 0, `${bad} mismatches`);
    }
    // relu with NaN / -0 / inf sprinkled in
    const r = Float64Array.from(a);
    if (n > 2) {
      r[0] = NaN;
      r[1] = -0;
      r[2] = -Infinity;
    }
    const pr = putF64(r);
    const pr32 = putF32(Float32Array.from(r));
    const o64 = poisonF64(n);
    const o32 = poisonF32(n);
    K.relu_f64(pr, o64, n);
    K.relu_f32(pr32, o32, n);
    const g64 = getF64(o64, n);
    const g32 = getF32(o32, n);
    let bad = 0;
    for (let i = 0; i < n; i++) {
      const want = r[i] > 0 ? r[i] : Number.isNaN(r[i]) ? NaN : 0;
      if (!Object.is(g64[i], want) && !(Number.isNaN(want) && Number.isNaN(g64[i]))) bad++;
      const w32 = Math.fround(want);
      if (!Object.is(g32[i], w32) && !(Number.isNaN(w32) && Number.isNaN(g32[i]))) bad++;
    }
    check(`relu n=${n}`, bad === 0, `${bad} mismatches`);
  }
  // row broadcasting
  for (const [rows, cols] of [
    [0, 5],
    [3, 0],
    [1, 1],
    [3, 7],
    [5, 8],
    [17, 33],
    [4, 97],
  ]) {
    resetHeap();
    const a = randArr(rows * cols);
    const row = randArr(cols);
    const pa = putF64(a);
    const prow = putF64(row);
    const qa = putF32(Float32Array.from(a));
    const qrow = putF32(Float32Array.from(row));
    const a32 = Float32Array.from(a);
    const row32 = Float32Array.from(row);
    for (const [name, f, is32] of [
      ["addRow_f64", (x, y) => x + y, false],
      ["mulRow_f64", (x, y) => x * y, false],
      ["addRow_f32", (x, y) => Math.fround(x + y), true],
      ["mulRow_f32", (x, y) => Math.fround(x * y), true],
    ]) {
      const n = rows * cols;
      const po = is32 ? poisonF32(n + 4) : poisonF64(n + 4);
      K[name](is32 ? qa : pa, is32 ? qrow : prow, po, rows, cols);
      const o = is32 ? getF32(po, n + 4) : getF64(po, n + 4);
      let bad = 0;
      for (let r = 0; r < rows; r++)
        for (let c = 0; c < cols; c++) {
          const want = is32 ? f(a32[r * cols + c], row32[c]) : f(a[r * cols + c], row[c]);
          if (!Object.is(o[r * cols + c], want)) bad++;
        }
      for (let i = n; i < n + 4; i++) if (!Number.isNaN(o[i])) bad++; // no overrun
      check(`${name} ${rows}x${cols}`, bad === 0, `${bad} mismatches`);
    }
  }
}

function probeGelu() {
  resetHeap();
  const xs = [];
  for (let i = 0; i < (quick ? 400 : 1500); i++) xs.push((rnd() * 2 - 1) * 10);
  for (let i = 0; i < 200; i++) xs.push((rnd() * 2 - 1) * 1.5);
  for (const v of [
    0.84375, -0.84375, 1.25, -1.25, 2.857142857142857, -2.857142857142857, 6, -6, 8.5, -8.5, 1e-5,
    -1e-5, 1e-12, -1e-12, 3e-300, -3e-300, 11.9, -11.9,
  ])
    xs.push(v);
  const n = xs.length;
  const px = putF64(Float64Array.from(xs));
  const po = poisonF64(n);
  K.gelu_f64(px, po, n);
  const got = getF64(po, n);
  const x32 = Float32Array.from(xs);
  const px32 = putF32(x32);
  const po32 = poisonF32(n);
  K.gelu_f32(px32, po32, n);
  const got32 = getF32(po32, n);
  let maxUlp = 0;
  let maxUlpCore = 0;
  let maxUlp32 = 0;
  let maxRelVsJs = 0;
  let maxAbsVsJs = 0;
  for (let i = 0; i < n; i++) {
    const x = xs[i];
    const ref = geluExact(x);
    // (below 2^-200 the fixed-point reference is not exact: there gelu(x) rounds to x/2)
    const e =
      Math.abs(x) < 1e-60
        ? got[i] === x * 0.5
          ? 0
          : Infinity
        : Math.abs(got[i] - ref) / ulp64(ref);
    if (x >= 0 && !(e <= maxUlpCore)) maxUlpCore = e;
    if (!(e <= maxUlp)) maxUlp = e;
    if (process.env.DEBUG_GELU && e > 1) console.log("gelu", x, got[i], ref, e);
    const js = 0.5 * x * (1 + erfRef(x / Math.SQRT2));
    maxAbsVsJs = Math.max(maxAbsVsJs, Math.abs(got[i] - js));
    // (the JS formula itself cancels in 1 + erf for x < -1)
    if (x > -1 && x < 3)
      maxRelVsJs = Math.max(maxRelVsJs, Math.abs(got[i] - js) / Math.max(Math.abs(js), 1e-300));
    if (process.env.DEBUG_GELU && x > -1 && x < 3 && Math.abs(got[i] - js) > 1e-14 * Math.abs(js))
      console.log("js", x, got[i], js, ref);
    const r32 = Math.fround(geluExact(x32[i]));
    const e32 = Math.abs(got32[i] - r32) / ulp32(r32);
    if (!(e32 <= maxUlp32)) maxUlp32 = e32;
  }
  record("gelu_f64 ulp vs exact (BigInt), x >= 0", maxUlpCore, 1);
  record("gelu_f64 ulp vs exact (BigInt), all |x| <= 12", maxUlp, 4);
  record("gelu_f32 ulp(f32) vs exact", maxUlp32, 1);
  record("gelu_f64 rel vs JS erf formula -1<x<3", maxRelVsJs, 2e-15);
  record("gelu_f64 abs vs JS erf formula |x|<=10", maxAbsVsJs, 1e-13);
  // specials
  resetHeap();
  const sp = [NaN, Infinity, -Infinity, 40, -40, 0, -0];
  const ps = putF64(Float64Array.from(sp));
  const pso = poisonF64(sp.length);
  K.gelu_f64(ps, pso, sp.length);
  const gs = getF64(pso, sp.length);
  check("gelu(NaN)", Number.isNaN(gs[0]));
  check("gelu(inf)", gs[1] === Infinity);
  check("gelu(40)", gs[3] === 40);
  check("gelu(-40)", gs[4] === 0);
  check("gelu(0)", Object.is(gs[5], 0));
  // tanh approximation vs the JS formula
  resetHeap();
  const pxt = putF64(Float64Array.from(xs));
  const pot = poisonF64(n);
  K.geluTanh_f64(pxt, pot, n);
  const gt = getF64(pot, n);
  const pxt32 = putF32(x32);
  const pot32 = poisonF32(n);
  K.geluTanh_f32(pxt32, pot32, n);
  const gt32 = getF32(pot32, n);
  let tRel = 0;
  let tAbs = 0;
  let tUlp32 = 0;
  for (let i = 0; i < n; i++) {
    const x = xs[i];
    const ref = 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
    tAbs = Math.max(tAbs, Math.abs(gt[i] - ref));
    if (x > -1) tRel = Math.max(tRel, Math.abs(gt[i] - ref) / Math.max(Math.abs(ref), 1e-300));
    const x3 = x32[i];
    const r3 = Math.fround(
      0.5 * x3 * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x3 + 0.044715 * x3 * x3 * x3))),
    );
    if (x3 > -3) tUlp32 = Math.max(tUlp32, Math.abs(gt32[i] - r3) / ulp32(r3));
  }
  record("geluTanh_f64 rel vs JS tanh formula (x>-1)", tRel, 2e-15);
  record("geluTanh_f64 abs vs JS tanh formula", tAbs, 1e-14);
  record("geluTanh_f32 ulp(f32) vs JS (x>-3)", tUlp32, 2);
}

function softmaxRef(x, rows, cols, log) {
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    let max = -Infinity;
    for (let i = 0; i < cols; i++) max = Math.max(max, x[r * cols + i]);
    let sum = 0;
    for (let i = 0; i < cols; i++) sum += Math.exp(x[r * cols + i] - max);
    const lse = max + Math.log(sum);
    for (let i = 0; i < cols; i++) {
      const v = x[r * cols + i];
      out[r * cols + i] = log ? v - lse : Math.exp(v - lse);
    }
  }
  return out;
}

function probeSoftmax() {
  for (const [rows, cols, amp] of [
    [1, 1, 1],
    [3, 2, 1],
    [4, 3, 5],
    [5, 7, 1],
    [2, 8, 30],
    [7, 31, 10],
    [3, 97, 1],
    [2, 256, 50],
    [2, 1000, 3],
    [1, 4099, 700],
  ]) {
    resetHeap();
    const n = rows * cols;
    const x = Float64Array.from({ length: n }, () => rval() * amp);
    for (const is32 of [false, true]) {
      const xs = is32 ? Float64Array.from(Float32Array.from(x)) : x;
      const px = is32 ? putF32(Float32Array.from(x)) : putF64(x);
      for (const log of [false, true]) {
        const name = `${log ? "logSoftmax" : "softmax"}_${is32 ? "f32" : "f64"}`;
        const po = is32 ? poisonF32(n) : poisonF64(n);
        K[name](px, po, rows, cols);
        const o = is32 ? Float64Array.from(getF32(po, n)) : getF64(po, n);
        const ref = softmaxRef(xs, rows, cols, log);
        let maxRel = 0;
        let sumErr = 0;
        for (let r = 0; r < rows; r++) {
          let s = 0;
          for (let i = 0; i < cols; i++) {
            const k = r * cols + i;
            const v = log ? Math.exp(o[k]) : o[k];
            s += v;
            const denom = log ? Math.max(Math.abs(ref[k]), 1) : Math.max(Math.abs(ref[k]), 1e-300);
            if (!log && ref[k] < (is32 ? 1e-30 : 1e-290)) {
              maxRel = Math.max(
                maxRel,
                Math.abs(o[k] - ref[k]) > (is32 ? 1e-37 : 1e-300)
                  ? Math.abs(o[k] - ref[k]) / (is32 ? 1e-30 : 1e-290)
                  : 0,
              );
              continue;
            }
            const e = Math.abs(o[k] - ref[k]) / denom;
            if (!(e <= maxRel)) maxRel = e;
          }
          sumErr = Math.max(sumErr, Math.abs(s - 1));
          if (Number.isNaN(s)) sumErr = NaN;
        }
        record(`${name} |rowsum-1|`, sumErr, is32 ? 1e-6 : log ? 1e-13 : 1e-14);
        record(`${name} rel vs f64 JS`, maxRel, is32 ? 2.4e-7 : 1e-13);
      }
    }
  }
  // NaN and -inf rows behave like the JS reference (NaN)
  resetHeap();
  const x = Float64Array.from([1, NaN, 2, 3, -Infinity, -Infinity, -Infinity, -Infinity]);
  const px = putF64(x);
  const po = poisonF64(8);
  K.softmax_f64(px, po, 2, 4);
  const o = getF64(po, 8);
  check("softmax NaN row", o.slice(0, 4).every(Number.isNaN));
  check("softmax all -inf row (NaN like reference)", o.slice(4).every(Number.isNaN));
  const x2 = Float64Array.from([-Infinity, 0, -Infinity, 1]);
  const px2 = putF64(x2);
  const po2 = poisonF64(4);
  K.softmax_f64(px2, po2, 1, 4);
  const o2 = getF64(po2, 4);
  const r2 = softmaxRef(x2, 1, 4, false);
  check(
    "softmax with -inf entries",
    o2.every((v, i) => Math.abs(v - r2[i]) < 1e-15),
    `${o2}`,
  );
}

// ------------------------------------------------------------------------------------------
// FFT
function naiveDft(re, im, n, inverse) {
  const sign = inverse ? 1 : -1;
  const cs = new Float64Array(n);
  const sn = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    cs[k] = Math.cos((2 * Math.PI * k) / n);
    sn[k] = sign * Math.sin((2 * Math.PI * k) / n);
  }
  const ore = new Float64Array(n);
  const oim = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    let sr = 0;
    let si = 0;
    for (let j = 0, t = 0; j < n; j++) {
      const c = cs[t];
      const s = sn[t];
      sr += re[j] * c - im[j] * s;
      si += re[j] * s + im[j] * c;
      t += k;
      if (t >= n) t -= n;
    }
    ore[k] = sr;
    oim[k] = si;
  }
  return [ore, oim];
}

function probeFft() {
  const sizes = [];
  for (let n = 1; n <= 40; n++) sizes.push(n);
  sizes.push(63, 64, 97, 100, 127, 128, 255, 256, 500, 512, 997, 1000, 1009, 1024);
  let wsMax = 0;
  for (const n of sizes) {
    resetHeap();
    const ws = K.fftWorkspaceBytes(n);
    check(`fftWorkspaceBytes(${n}) >= 0`, ws >= 0);
    wsMax = Math.max(wsMax, ws / Math.max(n, 1));
    const work = alloc(ws);
    const re = randArr(n);
    const im = randArr(n);
    const inter = new Float64Array(2 * n);
    for (let j = 0; j < n; j++) {
      inter[2 * j] = re[j];
      inter[2 * j + 1] = im[j];
    }
    for (const inverse of [0, 1]) {
      const [rr, ri] = naiveDft(re, im, n, inverse === 1);
      let scale = 0;
      for (let k = 0; k < n; k++) scale = Math.max(scale, Math.hypot(rr[k], ri[k]));
      const pin = putF64(inter);
      const pout = poisonF64(2 * n);
      F64(work, ws / 8).fill(NaN);
      K.fft_c2c(pin, pout, n, inverse, work);
      const o = getF64(pout, 2 * n);
      let err = 0;
      for (let k = 0; k < n; k++)
        err = Math.max(err, Math.hypot(o[2 * k] - rr[k], o[2 * k + 1] - ri[k]));
      record(`fft_c2c vs naive DFT (rel, max|.|)`, err / scale, 1e-12);
      check(
        `fft_c2c input untouched n=${n}`,
        F64(pin, 2 * n).every((v, i) => v === inter[i]),
      );
      // in place
      const pio = putF64(inter);
      K.fft_c2c(pio, pio, n, inverse, work);
      const o2 = getF64(pio, 2 * n);
      check(
        `fft_c2c in place n=${n}`,
        o2.every((v, i) => v === o[i]),
      );
    }
    // rfft vs naive, irfft
    const bins = Math.floor(n / 2) + 1;
    const [rr, ri] = naiveDft(re, new Float64Array(n), n, false);
    let scale = 0;
    for (let k = 0; k < n; k++) scale = Math.max(scale, Math.hypot(rr[k], ri[k]));
    const px = putF64(re);
    const pX = poisonF64(2 * bins + 2);
    F64(work, ws / 8).fill(NaN);
    K.rfft_r2c(px, pX, n, work);
    const X = getF64(pX, 2 * bins + 2);
    let err = 0;
    for (let k = 0; k < bins; k++)
      err = Math.max(err, Math.hypot(X[2 * k] - rr[k], X[2 * k + 1] - ri[k]));
    record(`rfft_r2c vs naive DFT (rel)`, err / scale, 1e-12);
    check(`rfft_r2c no overrun n=${n}`, Number.isNaN(X[2 * bins]) && Number.isNaN(X[2 * bins + 1]));
    check(
      `rfft DC/Nyquist imag exactly 0 n=${n}`,
      X[1] === 0 && (n % 2 === 1 || X[2 * (bins - 1) + 1] === 0),
    );
    // rfft in place (buffer of n/2+1 complex holding the n reals)
    const pip = alloc(16 * bins);
    F64(pip, 2 * bins).fill(NaN);
    F64(pip, n).set(re);
    K.rfft_r2c(pip, pip, n, work);
    check(
      `rfft_r2c in place n=${n}`,
      getF64(pip, 2 * bins).every((v, i) => v === X[i]),
    );
    // irfft(rfft(x)) / n == x
    const Xd = Float64Array.from(X.subarray(0, 2 * bins));
    Xd[1] = 123.5; // ignored
    if (n % 2 === 0) Xd[2 * (bins - 1) + 1] = -77; // ignored
    const pX2 = putF64(Xd);
    const py = poisonF64(n + 2);
    F64(work, ws / 8).fill(NaN);
    K.irfft_c2r(pX2, py, n, work);
    const y = getF64(py, n + 2);
    let rt = 0;
    let xs = 0;
    for (let j = 0; j < n; j++) {
      rt = Math.max(rt, Math.abs(y[j] / n - re[j]));
      xs = Math.max(xs, Math.abs(re[j]));
    }
    record(`irfft(rfft(x))/n round trip (rel)`, rt / xs, 1e-13);
    check(`irfft_c2r no overrun n=${n}`, Number.isNaN(y[n]) && Number.isNaN(y[n + 1]));
    // irfft vs naive inverse DFT of an arbitrary Hermitian spectrum
    const Hr = new Float64Array(n);
    const Hi = new Float64Array(n);
    const spec = new Float64Array(2 * bins);
    for (let k = 0; k < bins; k++) {
      spec[2 * k] = rval();
      spec[2 * k + 1] = rval();
    }
    for (let k = 0; k < n; k++) {
      const kk = k < bins ? k : n - k;
      Hr[k] = spec[2 * kk];
      Hi[k] = k < bins ? spec[2 * kk + 1] : -spec[2 * kk + 1];
    }
    Hi[0] = 0;
    if (n % 2 === 0) Hi[n / 2] = 0;
    const [yr] = naiveDft(Hr, Hi, n, true);
    let ys = 0;
    for (let j = 0; j < n; j++) ys = Math.max(ys, Math.abs(yr[j]));
    const ps = putF64(spec);
    const py2 = poisonF64(n);
    K.irfft_c2r(ps, py2, n, work);
    const y2 = getF64(py2, n);
    let e2 = 0;
    for (let j = 0; j < n; j++) e2 = Math.max(e2, Math.abs(y2[j] - yr[j]));
    record(`irfft_c2r vs naive inverse DFT (rel)`, e2 / ys, 1e-12);
    // irfft in place
    const pin2 = putF64(spec);
    K.irfft_c2r(pin2, pin2, n, work);
    check(
      `irfft_c2r in place n=${n}`,
      getF64(pin2, n).every((v, i) => v === y2[i]),
    );
  }
  // n = 0 is a no-op
  K.fft_c2c(65536, 65536, 0, 0, 65536);
  K.rfft_r2c(65536, 65536, 0, 65536);
  K.irfft_c2r(65536, 65536, 0, 65536);
  return wsMax;
}

// ------------------------------------------------------------------------------------------
// Linalg
function spd(n) {
  const b = randArr(n * n);
  const a = matmul(b, transpose(b, n, n), n, n, n);
  for (let i = 0; i < n; i++) a[i * n + i] += n;
  return a;
}

function probeLinalg(ref) {
  // The JS reference is slow at 256 (its SVD alone takes seconds): cross-check up to 97
  // unless --fullref.
  const useRef = (m, n) => ref !== undefined && (args.has("--fullref") || Math.max(m, n) <= 97);
  const sizes = quick ? [0, 1, 2, 3, 7, 31, 64] : [0, 1, 2, 3, 7, 31, 64, 97, 256];
  for (const n of sizes) {
    resetHeap();
    const ws = K.linalgWorkspaceBytes(n, n);
    check(`linalgWorkspaceBytes(${n},${n}) >= 0`, ws >= 0);
    const work = alloc(ws);
    const pw = () => F64(work, Math.floor(ws / 8)).fill(NaN);

    // cholesky
    {
      const a = spd(n);
      const pa = putF64(a);
      // poison the strict upper triangle of the input copy: only the lower one may be read
      const aLower = Float64Array.from(a);
      for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) aLower[i * n + j] = NaN;
      const pal = putF64(aLower);
      const pl = poisonF64(n * n);
      const info = K.cholesky(pal, pl, n);
      check(`cholesky info n=${n}`, info === 0, `info=${info}`);
      const l = getF64(pl, n * n);
      let upperOk = true;
      for (let i = 0; i < n; i++)
        for (let j = i + 1; j < n; j++) if (l[i * n + j] !== 0) upperOk = false;
      check(`cholesky upper zero n=${n}`, upperOk);
      record(
        "cholesky ||A-LL^T||/||A||",
        rel(diffFro(a, matmul(l, transpose(l, n, n), n, n, n)), fro(a)),
        1e-12,
      );
      if (useRef(n, n) && n > 0) {
        const lr = ref.cholesky(a, n);
        record("cholesky vs core reference (max rel)", rel(diffFro(l, lr), fro(lr)), 1e-13);
      }
      void pa;
      if (n >= 3) {
        const bad = Float64Array.from(a);
        const k = Math.floor(n / 2);
        bad[k * n + k] = -1;
        const pb = putF64(bad);
        check(`cholesky not PD n=${n}`, K.cholesky(pb, poisonF64(n * n), n) === k + 1);
        bad[k * n + k] = NaN;
        const pb2 = putF64(bad);
        check(`cholesky NaN n=${n}`, K.cholesky(pb2, poisonF64(n * n), n) === k + 1);
      }
    }
    // LU, luSolve, solve, inv
    {
      const a = randArr(n * n);
      const pa = putF64(a);
      const plu = poisonF64(n * n);
      const ppiv = alloc(4 * n);
      I32(ppiv, n).fill(-7);
      const info = K.luFactor(pa, plu, ppiv, n);
      check(`luFactor info n=${n}`, info === 0, `info=${info}`);
      const lu = getF64(plu, n * n);
      const piv = Int32Array.from(I32(ppiv, n));
      const L = new Float64Array(n * n);
      const U = new Float64Array(n * n);
      for (let i = 0; i < n; i++)
        for (let j = 0; j < n; j++) {
          if (j < i) L[i * n + j] = lu[i * n + j];
          else U[i * n + j] = lu[i * n + j];
          if (i === j) L[i * n + j] = 1;
        }
      const pA = Float64Array.from(a);
      for (let i = 0; i < n; i++) {
        const p = piv[i] - 1;
        check(`luFactor pivot range n=${n}`, p >= i && p < n);
        if (p !== i)
          for (let c = 0; c < n; c++)
            [pA[i * n + c], pA[p * n + c]] = [pA[p * n + c], pA[i * n + c]];
      }
      record("luFactor ||PA-LU||/||A||", rel(diffFro(pA, matmul(L, U, n, n, n)), fro(a)), 1e-12);
      if (useRef(n, n) && n > 0) {
        const r = ref.luFactor(a, n);
        check(
          `luFactor pivots == reference n=${n}`,
          r.pivots.every((v, i) => v === piv[i]),
        );
        record("luFactor vs core reference (rel)", rel(diffFro(lu, r.lu), fro(r.lu)), 1e-13);
      }
      for (const nrhs of [1, 3]) {
        const b = randArr(n * nrhs);
        const pb = putF64(b);
        pw();
        const px = poisonF64(n * nrhs);
        const si = K.solve(pa, n, pb, nrhs, px, work);
        check(`solve info n=${n}`, si === 0);
        const x = getF64(px, n * nrhs);
        const res = diffFro(matmul(a, x, n, n, nrhs), b);
        record("solve ||AX-B||/(||A|| ||X||)", rel(res, fro(a) * fro(x)), 1e-12);
        // luSolve in place on a copy of b
        const pb2 = putF64(b);
        K.luSolve(plu, ppiv, n, pb2, nrhs);
        const x2 = getF64(pb2, n * nrhs);
        record(
          "luSolve ||AX-B||/(||A|| ||X||)",
          rel(diffFro(matmul(a, x2, n, n, nrhs), b), fro(a) * fro(x2)),
          1e-12,
        );
      }
      pw();
      const pinv = poisonF64(n * n);
      const ii = K.inv(pa, n, pinv, work);
      check(`inv info n=${n}`, ii === 0);
      const ai = getF64(pinv, n * n);
      const eye = new Float64Array(n * n);
      for (let i = 0; i < n; i++) eye[i * n + i] = 1;
      record(
        "inv ||A inv(A) - I||/(||A|| ||inv||)",
        rel(diffFro(matmul(a, ai, n, n, n), eye), fro(a) * fro(ai)),
        1e-12,
      );
      if (n >= 2) {
        // singular: duplicate a row (exact zero pivot appears in some column)
        const s = Float64Array.from(a);
        for (let c = 0; c < n; c++) s[(n - 1) * n + c] = s[c];
        const z = new Float64Array(n * n); // all-zero: info 1
        const ps = putF64(s);
        const pz = putF64(z);
        pw();
        const i1 = K.solve(pz, n, putF64(randArr(n)), 1, poisonF64(n), work);
        check(`solve singular (zero matrix) n=${n}`, i1 === 1, `info=${i1}`);
        pw();
        const i2 = K.inv(pz, n, poisonF64(n * n), work);
        check(`inv singular n=${n}`, i2 === 1, `info=${i2}`);
        const i3 = K.luFactor(ps, poisonF64(n * n), alloc(4 * n), n);
        check(`luFactor rank-deficient n=${n} info>=0`, i3 >= 0);
      }
    }
    // eigh
    {
      const b = randArr(n * n);
      const a = new Float64Array(n * n);
      for (let i = 0; i < n; i++)
        for (let j = 0; j < n; j++) a[i * n + j] = 0.5 * (b[i * n + j] + b[j * n + i]);
      const aLower = Float64Array.from(a);
      for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) aLower[i * n + j] = NaN;
      const pa = putF64(aLower);
      const pwv = poisonF64(n);
      const pv = poisonF64(n * n);
      pw();
      const t0 = performance.now();
      const info = K.eigh(pa, n, pwv, pv, work);
      const t1 = performance.now();
      if (n === 256) timings.push(`eigh n=256: ${(t1 - t0).toFixed(1)} ms`);
      check(`eigh info n=${n}`, info === 0, `info=${info}`);
      const w = getF64(pwv, n);
      const v = getF64(pv, n * n);
      const av = matmul(a, v, n, n, n);
      const vw = new Float64Array(n * n);
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) vw[i * n + j] = v[i * n + j] * w[j];
      record("eigh ||AV-VW||/||A||", rel(diffFro(av, vw), fro(a)), 1e-12);
      record("eigh ||V^T V - I||", orthCols(v, n, n), 1e-12);
      let asc = true;
      for (let i = 1; i < n; i++) if (!(w[i] >= w[i - 1])) asc = false;
      check(`eigh ascending n=${n}`, asc);
      if (useRef(n, n) && n > 0) {
        const r = ref.eigh(a, n);
        record(
          "eigh values vs core reference (rel)",
          rel(diffFro(w, r.values), fro(r.values)),
          1e-13,
        );
        record(
          "eigh vectors vs core reference (same signs)",
          rel(diffFro(v, r.vectors), fro(r.vectors)),
          1e-9,
        );
      }
      if (n >= 2) {
        const an = Float64Array.from(a);
        an[n * n - 1] = NaN;
        pw();
        check(`eigh NaN n=${n}`, K.eigh(putF64(an), n, poisonF64(n), poisonF64(n * n), work) !== 0);
        // rank-deficient / repeated eigenvalues: a = u u^T
        const u = randArr(n);
        const rk = new Float64Array(n * n);
        for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) rk[i * n + j] = u[i] * u[j];
        const pw2 = poisonF64(n);
        const pv2 = poisonF64(n * n);
        pw();
        check(`eigh rank-1 info n=${n}`, K.eigh(putF64(rk), n, pw2, pv2, work) === 0);
        const w2 = getF64(pw2, n);
        const v2 = getF64(pv2, n * n);
        const vw2 = new Float64Array(n * n);
        for (let i = 0; i < n; i++)
          for (let j = 0; j < n; j++) vw2[i * n + j] = v2[i * n + j] * w2[j];
        record(
          "eigh rank-1 ||AV-VW||/||A||",
          rel(diffFro(matmul(rk, v2, n, n, n), vw2), fro(rk)),
          1e-12,
        );
        record("eigh rank-1 ||V^T V - I||", orthCols(v2, n, n), 1e-12);
      }
      // zero matrix
      pw();
      const pz = poisonF64(n * n);
      check(
        `eigh zero n=${n}`,
        K.eigh(putF64(new Float64Array(n * n)), n, poisonF64(n), pz, work) === 0 &&
          allFinite(getF64(pz, n * n)),
      );
    }
  }

  // QR and SVD on rectangular shapes.
  const shapes = quick
    ? [
        [0, 0],
        [0, 3],
        [3, 0],
        [1, 1],
        [1, 5],
        [5, 1],
        [2, 2],
        [3, 3],
        [7, 3],
        [3, 7],
        [7, 7],
        [31, 31],
        [64, 31],
        [31, 64],
      ]
    : [
        [0, 0],
        [0, 3],
        [3, 0],
        [1, 1],
        [1, 5],
        [5, 1],
        [2, 2],
        [3, 3],
        [7, 3],
        [3, 7],
        [7, 7],
        [31, 31],
        [64, 64],
        [64, 31],
        [31, 64],
        [97, 97],
        [97, 31],
        [31, 97],
        [256, 256],
        [256, 97],
        [97, 256],
      ];
  for (const [m, n] of shapes) {
    resetHeap();
    const ws = K.linalgWorkspaceBytes(m, n);
    check(`linalgWorkspaceBytes(${m},${n}) >= 0`, ws >= 0);
    const work = alloc(ws);
    const pw = () => F64(work, Math.floor(ws / 8)).fill(NaN);
    const k = Math.min(m, n);
    for (const rankDef of [false, true]) {
      if (rankDef && k < 3) continue;
      let a = randArr(m * n);
      const rank = rankDef ? Math.max(1, Math.floor(k / 3)) : k;
      if (rankDef) a = matmul(randArr(m * rank), randArr(rank * n), m, rank, n);
      const pa = putF64(a);
      const tag = rankDef ? " (rank-deficient)" : "";
      for (const complete of [0, 1]) {
        const qc = complete ? m : k;
        const rr = complete ? m : k;
        const pq = poisonF64(m * qc + 1);
        const pr = poisonF64(rr * n + 1);
        pw();
        K.qr(pa, m, n, complete, pq, pr, work);
        const q = getF64(pq, m * qc + 1);
        const r = getF64(pr, rr * n + 1);
        check(`qr no overrun ${m}x${n}`, Number.isNaN(q[m * qc]) && Number.isNaN(r[rr * n]));
        const qm = q.subarray(0, m * qc);
        const rm = r.subarray(0, rr * n);
        check(`qr finite ${m}x${n}`, allFinite(qm) && allFinite(rm));
        let upper = true;
        for (let i = 0; i < rr; i++)
          for (let j = 0; j < Math.min(i, n); j++) if (rm[i * n + j] !== 0) upper = false;
        check(`qr R upper ${m}x${n}`, upper);
        record(`qr ||A-QR||/||A||${tag}`, rel(diffFro(a, matmul(qm, rm, m, qc, n)), fro(a)), 1e-12);
        record(`qr ||Q^T Q - I||${tag}`, orthCols(qm, m, qc), 1e-12);
        if (useRef(m, n)) {
          const rq = ref.qr(a, m, n, complete ? "complete" : "reduced");
          // Only the first `rank` columns of Q / rows of R are determined by A (the rest
          // come from rounding noise when A is rank-deficient).
          const qa = new Float64Array(m * rank);
          const qb = new Float64Array(m * rank);
          for (let i = 0; i < m; i++)
            for (let j = 0; j < rank; j++) {
              qa[i * rank + j] = qm[i * qc + j];
              qb[i * rank + j] = rq.q[i * qc + j];
            }
          const ra = rm.subarray(0, rank * n);
          const rb = rq.r.subarray(0, rank * n);
          record(
            `qr vs core reference (same signs)${tag}`,
            Math.max(rel(diffFro(qa, qb), fro(qb)), rel(diffFro(ra, rb), fro(rb))),
            1e-10,
          );
        }
      }
      for (const full of [0, 1]) {
        const uc = full ? m : k;
        const vr = full ? n : k;
        const pu = poisonF64(m * uc + 1);
        const ps = poisonF64(k + 1);
        const pv = poisonF64(vr * n + 1);
        pw();
        const t0 = performance.now();
        const info = K.svd(pa, m, n, full, pu, ps, pv, work);
        const t1 = performance.now();
        if (m === 256 && n === 256 && !rankDef)
          timings.push(`svd 256x256 ${full ? "full" : "reduced"}: ${(t1 - t0).toFixed(1)} ms`);
        check(`svd info ${m}x${n}${tag}`, info === 0, `info=${info}`);
        const u = getF64(pu, m * uc + 1);
        const s = getF64(ps, k + 1);
        const vh = getF64(pv, vr * n + 1);
        check(
          `svd no overrun ${m}x${n}`,
          Number.isNaN(u[m * uc]) && Number.isNaN(s[k]) && Number.isNaN(vh[vr * n]),
        );
        const um = u.subarray(0, m * uc);
        const sm = s.subarray(0, k);
        const vm = vh.subarray(0, vr * n);
        check(`svd finite ${m}x${n}`, allFinite(um) && allFinite(sm) && allFinite(vm));
        let desc = true;
        for (let i = 0; i < k; i++) if (!(sm[i] >= 0) || (i > 0 && sm[i] > sm[i - 1])) desc = false;
        check(`svd descending ${m}x${n}`, desc);
        // A - U[:, :k] S Vh[:k, :]
        const us = new Float64Array(m * k);
        for (let i = 0; i < m; i++)
          for (let j = 0; j < k; j++) us[i * k + j] = um[i * uc + j] * sm[j];
        const recon = matmul(us, vm.subarray(0, k * n), m, k, n);
        record(`svd ||A-USVh||/||A||${tag}`, rel(diffFro(a, recon), fro(a)), 1e-12);
        record(`svd ||U^T U - I||${tag}`, orthCols(um, m, uc), 1e-12);
        record(`svd ||Vh Vh^T - I||${tag}`, orthRows(vm, vr, n), 1e-12);
        if (useRef(m, n)) {
          const r = ref.svd(a, m, n, full === 1);
          record(`svd s vs core reference (rel)${tag}`, rel(diffFro(sm, r.s), fro(r.s)), 1e-13);
          if (!rankDef) {
            // Singular vectors are unique up to a common sign per triplet: align, then compare.
            let flips = 0;
            let e = 0;
            for (let t = 0; t < k; t++) {
              let d = 0;
              for (let i = 0; i < m; i++) d += um[i * uc + t] * r.u[i * uc + t];
              const sg = d < 0 ? -1 : 1;
              if (sg < 0) flips++;
              let eu = 0;
              for (let i = 0; i < m; i++) eu += (um[i * uc + t] - sg * r.u[i * uc + t]) ** 2;
              let ev = 0;
              for (let j = 0; j < n; j++) ev += (vm[t * n + j] - sg * r.vh[t * n + j]) ** 2;
              e = Math.max(e, Math.sqrt(eu), Math.sqrt(ev));
            }
            record(`svd vectors vs core reference (per-triplet sign aligned)`, e, 1e-9);
            if (flips)
              signFlips.push(
                `svd ${m}x${n} full=${full}: ${flips} of ${k} triplets sign-flipped vs reference`,
              );
          }
        }
      }
    }
    if (k >= 1) {
      const an = randArr(m * n);
      an[0] = NaN;
      pw();
      check(
        `svd NaN ${m}x${n}`,
        K.svd(putF64(an), m, n, 0, poisonF64(m * k), poisonF64(k), poisonF64(k * n), work) !== 0,
      );
    }
  }
}

// ------------------------------------------------------------------------------------------
const timings = [];
const signFlips = [];
const t0 = performance.now();
console.log(`module ${wasmFile}\nimports: ${imports.join(", ")}`);
check(
  "imports only env.memory (+ env.abort)",
  imports.every((s) => s === "env.memory:memory" || s === "env.abort:function"),
);
const ref = await loadReference();
const only = [...args].find((a) => a.startsWith("--only="))?.slice(7);
function stage(name, fn) {
  if (only && only !== name) return undefined;
  const s = performance.now();
  const r = fn();
  console.log(`[${name}] ${(performance.now() - s).toFixed(0)} ms`);
  return r;
}
stage("elementwise", probeElementwise);
stage("gelu", probeGelu);
stage("softmax", probeSoftmax);
const fftWs = stage("fft", probeFft) ?? 0;
stage("linalg", () => probeLinalg(ref));
const t1 = performance.now();

const pad = Math.max(...[...worst.keys()].map((k) => k.length));
for (const [name, { err, limit }] of worst) {
  console.log(
    `${name.padEnd(pad)}  ${err.toExponential(2)}  (limit ${limit.toExponential(0)})${err <= limit ? "" : "  FAIL"}`,
  );
}
console.log(`fftWorkspaceBytes(n)/n max over tested n: ${fftWs.toFixed(1)}`);
for (const t of timings) console.log(t);
for (const t of signFlips) console.log(t);
console.log(`total ${(t1 - t0).toFixed(0)} ms`);
if (failures.length) {
  console.log(`\n${failures.length} FAILURE(S):`);
  for (const f of failures.slice(0, 60)) console.log(`  ${f}`);
  process.exit(1);
}
console.log("OK");
