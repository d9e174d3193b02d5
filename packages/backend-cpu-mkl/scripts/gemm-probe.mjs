// Standalone correctness + speed probe for wasm/gemm.wasm (and gemm.nothreads.wasm).
//   node scripts/gemm-probe.mjs                 correctness + benchmark (threads build)
//   node scripts/gemm-probe.mjs --check         correctness only (both builds)
//   node scripts/gemm-probe.mjs --bench [sizes] benchmark only, e.g. --bench 512,1024
//   options: --runs N (default 7), --f32 / --f64 (only one precision)
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const wasmDir = join(here, "..", "wasm");

const args = process.argv.slice(2);
const onlyCheck = args.includes("--check");
const onlyBench = args.includes("--bench");
const runsIdx = args.indexOf("--runs");
const RUNS = runsIdx >= 0 ? Number(args[runsIdx + 1]) : 7;
const benchIdx = args.indexOf("--bench");
let benchSizes = [256, 512, 1024, 2048];
if (benchIdx >= 0 && args[benchIdx + 1] && /^\d/.test(args[benchIdx + 1])) {
  benchSizes = args[benchIdx + 1].split(",").map(Number);
}
const precs = args.includes("--f32") ? ["f32"] : args.includes("--f64") ? ["f64"] : ["f32", "f64"];

function instantiate(file, shared) {
  const memory = new WebAssembly.Memory({ initial: 256, maximum: 65536, shared });
  const mod = new WebAssembly.Module(readFileSync(join(wasmDir, file)));
  const imports = WebAssembly.Module.imports(mod);
  const names = imports.map((i) => `${i.module}.${i.name}:${i.kind}`).sort();
  for (const n of names) {
    if (n !== "env.memory:memory" && n !== "env.abort:function")
      throw new Error(`unexpected import ${n}`);
  }
  const inst = new WebAssembly.Instance(mod, {
    env: {
      memory,
      abort() {
        throw new Error("abort");
      },
    },
  });
  return { memory, ex: inst.exports, imports: names };
}

// ------------------------------------------------------------------ simple bump allocator
class Heap {
  constructor(memory) {
    this.memory = memory;
    this.top = 65536;
  }
  reset() {
    this.top = 65536;
  }
  alloc(bytes, align = 65536) {
    const p = Math.ceil(this.top / align) * align;
    this.top = p + bytes;
    const need = Math.ceil(this.top / 65536);
    const have = this.memory.buffer.byteLength / 65536;
    if (need > have) this.memory.grow(need - have);
    return p;
  }
}

// deterministic RNG
let seed = 12345;
function rnd() {
  seed = (seed * 1103515245 + 12345) >>> 0;
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 4294967296;
}
function val() {
  const v = 0.1 + rnd(); // [0.1, 1.1)
  return rnd() < 0.5 ? -v : v;
}

function view(memory, prec, ptr, len) {
  return prec === "f32"
    ? new Float32Array(memory.buffer, ptr, len)
    : new Float64Array(memory.buffer, ptr, len);
}

// one correctness case
// opts: m,n,k,tA,tB,lda,ldb,ldc (defaults minimal), sub: [i0, mSub] (call on a row block)
function runCase(env, prec, opts) {
  const { memory, ex } = env;
  const heap = new Heap(memory);
  const es = prec === "f32" ? 4 : 8;
  const { m, n, k, tA = 0, tB = 0 } = opts;
  const lda = opts.lda ?? Math.max(1, tA ? m : k);
  const ldb = opts.ldb ?? Math.max(1, tB ? k : n);
  const ldc = opts.ldc ?? Math.max(1, n);
  const aRows = tA ? k : m;
  const bRows = tB ? n : k;
  const aLen = Math.max(1, aRows * lda);
  const bLen = Math.max(1, bRows * ldb);
  const cLen = Math.max(1, m * ldc);
  const extra = (opts.misalign ?? 0) * es; // misalignment in elements
  const aPtr = heap.alloc(aLen * es + 64) + extra;
  const bPtr = heap.alloc(bLen * es + 64) + extra;
  const cPtr = heap.alloc(cLen * es + 64 + 64) + extra;
  const A = view(memory, prec, aPtr, aLen);
  const B = view(memory, prec, bPtr, bLen);
  for (let i = 0; i < aLen; i++) A[i] = val();
  for (let i = 0; i < bLen; i++) B[i] = val();
  // guard region after C
  const guardPtr = cPtr + cLen * es;
  const guard = new Float64Array(memory.buffer, guardPtr - (guardPtr % 8), 8);
  guard.fill(12345.5);
  let C = view(memory, prec, cPtr, cLen);
  C.fill(NaN);
  const Aget = (i, p) => (tA ? A[p * lda + i] : A[i * lda + p]);
  const Bget = (p, j) => (tB ? B[j * ldb + p] : B[p * ldb + j]);
  const ref = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += Aget(i, p) * Bget(p, j);
      ref[i * n + j] = s;
    }
  const gemm = prec === "f32" ? ex.sgemm : ex.dgemm;
  const wsFn = prec === "f32" ? ex.sgemmWorkspaceBytes : ex.dgemmWorkspaceBytes;
  const blocks = opts.blocks ?? [[0, m]]; // row blocks [i0, rows]
  const wsList = [];
  for (const [, rows] of blocks) {
    const wsBytes = wsFn(rows, n, k);
    const w = heap.alloc(wsBytes + 128, 64);
    // poison workspace + guard word after it
    new Uint8Array(memory.buffer, w, wsBytes + 64).fill(0xff);
    wsList.push([w, wsBytes]);
  }
  C = view(memory, prec, cPtr, cLen);
  for (let bi = 0; bi < blocks.length; bi++) {
    const [i0, rows] = blocks[bi];
    const aOff = tA ? i0 * es : i0 * lda * es;
    gemm(rows, n, k, aPtr + aOff, lda, tA, bPtr, ldb, tB, cPtr + i0 * ldc * es, ldc, wsList[bi][0]);
  }
  C = view(memory, prec, cPtr, cLen);
  let maxErr = 0;
  let maxRef = 0;
  let bad = null;
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      const r = ref[i * n + j];
      const c = C[i * ldc + j];
      const e = Math.abs(c - r);
      if (!(e <= Infinity)) {
        bad ??= `NaN at (${i},${j})`;
        maxErr = Infinity;
      } else if (e > maxErr) maxErr = e;
      maxRef = Math.max(maxRef, Math.abs(r));
    }
  // padding between rows (j >= n) must stay NaN
  for (let i = 0; i < m; i++)
    for (let j = n; j < ldc; j++)
      if (!Number.isNaN(C[i * ldc + j])) bad ??= `padding written at (${i},${j})`;
  const g = new Float64Array(memory.buffer, guardPtr - (guardPtr % 8), 8);
  if (g.some((x) => x !== 12345.5) && guardPtr % 8 === 0) bad ??= "wrote past C";
  // inputs untouched
  const A2 = view(memory, prec, aPtr, aLen);
  for (let i = 0; i < aLen; i++) if (A2[i] !== A[i]) bad ??= "A modified";
  const rel = m * n === 0 ? 0 : k === 0 ? maxErr : maxErr / maxRef;
  return { rel, bad };
}

function checkAll(env, label) {
  const cases = [];
  const dims = [
    [1, 1, 1],
    [7, 13, 5],
    [33, 97, 31],
    [0, 5, 3],
    [5, 0, 3],
    [0, 0, 0],
    [4, 8, 0],
    [3, 5, 0],
    [1, 1, 300],
    [1, 17, 1],
    [17, 1, 1],
    [13, 11, 7],
    [31, 37, 41],
    [4, 8, 4],
    [8, 16, 16],
    [5, 9, 257],
    [67, 71, 513],
    [129, 131, 300],
    [2, 3, 600],
    [101, 2053, 3],
    [257, 9, 19],
    [131, 1031, 263],
    [200, 300, 1000],
    [97, 2049, 17],
    [1, 3000, 5],
    [3000, 1, 5],
    [64, 64, 64],
    [96, 1024, 256],
    [130, 30, 2048],
  ];
  for (const [m, n, k] of dims)
    for (const tA of [0, 1]) for (const tB of [0, 1]) cases.push({ m, n, k, tA, tB });
  // larger leading dimensions
  for (const [m, n, k] of [
    [7, 13, 5],
    [33, 97, 31],
    [70, 45, 300],
    [5, 9, 2],
  ])
    for (const tA of [0, 1])
      for (const tB of [0, 1]) {
        cases.push({ m, n, k, tA, tB, lda: (tA ? m : k) + 3, ldb: (tB ? k : n) + 5, ldc: n + 7 });
        cases.push({
          m,
          n,
          k,
          tA,
          tB,
          lda: (tA ? m : k) + 16,
          ldb: (tB ? k : n) + 1,
          ldc: n + 1,
          misalign: 1,
        });
      }
  // sub-block calls (row blocks, as threads would do)
  for (const [m, n, k] of [
    [37, 29, 23],
    [130, 97, 300],
    [257, 33, 65],
    [64, 1030, 10],
  ])
    for (const tA of [0, 1])
      for (const tB of [0, 1]) {
        const blocks = [];
        let i0 = 0;
        let s = 1;
        while (i0 < m) {
          const rows = Math.min(m - i0, s * 7 + 1);
          blocks.push([i0, rows]);
          i0 += rows;
          s++;
        }
        cases.push({ m, n, k, tA, tB, blocks, lda: (tA ? m : k) + 2, ldc: n + 3 });
      }
  const worst = {};
  let fails = 0;
  for (const prec of ["f32", "f64"]) {
    const tol = prec === "f32" ? 1e-5 : 1e-12;
    let w = 0;
    let wcase = null;
    for (const c of cases) {
      const { rel, bad } = runCase(env, prec, c);
      if (bad || !(rel < tol)) {
        fails++;
        console.log(`FAIL ${label} ${prec}`, JSON.stringify(c), rel, bad ?? "");
      }
      if (rel > w) {
        w = rel;
        wcase = c;
      }
    }
    worst[prec] = {
      rel: w,
      case: `${wcase?.m}x${wcase?.n}x${wcase?.k} tA=${wcase?.tA} tB=${wcase?.tB}`,
    };
  }
  console.log(
    `${label}: ${cases.length * 2} cases, ${fails} failures; worst rel err f32 ${worst.f32.rel.toExponential(2)} (${worst.f32.case}), f64 ${worst.f64.rel.toExponential(2)} (${worst.f64.case})`,
  );
  return fails;
}

function bench(env, prec, N, runs, tA = 0, tB = 0) {
  const { memory, ex } = env;
  const heap = new Heap(memory);
  const es = prec === "f32" ? 4 : 8;
  const aPtr = heap.alloc(N * N * es);
  const bPtr = heap.alloc(N * N * es);
  const cPtr = heap.alloc(N * N * es);
  const wsFn = prec === "f32" ? ex.sgemmWorkspaceBytes : ex.dgemmWorkspaceBytes;
  const ws = heap.alloc(wsFn(N, N, N), 64);
  const A = view(memory, prec, aPtr, N * N);
  const B = view(memory, prec, bPtr, N * N);
  for (let i = 0; i < N * N; i++) {
    A[i] = val();
    B[i] = val();
  }
  const gemm = prec === "f32" ? ex.sgemm : ex.dgemm;
  const flops = 2 * N * N * N;
  const call = () => gemm(N, N, N, aPtr, N, tA, bPtr, N, tB, cPtr, N, ws);
  // warm-up: at least ~0.3 s
  let t0 = performance.now();
  let w = 0;
  while (performance.now() - t0 < 300 || w < 2) {
    call();
    w++;
  }
  // inner repetitions so that each timed sample is >= ~50 ms
  const one = (performance.now() - t0) / w;
  const reps = Math.max(1, Math.ceil(50 / one));
  const samples = [];
  for (let r = 0; r < runs; r++) {
    t0 = performance.now();
    for (let q = 0; q < reps; q++) call();
    const dt = (performance.now() - t0) / reps / 1000;
    samples.push(flops / dt / 1e9);
  }
  samples.sort((x, y) => x - y);
  return {
    median: samples[samples.length >> 1],
    best: samples[samples.length - 1],
    worst: samples[0],
  };
}

let fails = 0;
if (!onlyBench) {
  for (const [file, shared] of [
    ["gemm.wasm", true],
    ["gemm.nothreads.wasm", false],
  ]) {
    const env = instantiate(file, shared);
    console.log(`${file}: imports ${env.imports.join(", ")}`);
    fails += checkAll(env, file);
  }
}
if (!onlyCheck) {
  const env = instantiate("gemm.wasm", true);
  const extra = args.includes("--trans");
  console.log(`benchmark (one thread, median of ${RUNS}), GFLOP/s`);
  for (const prec of precs) {
    for (const N of benchSizes) {
      const r = bench(env, prec, N, RUNS);
      let line = `${prec === "f32" ? "sgemm" : "dgemm"} ${String(N).padStart(4)}^3: median ${r.median.toFixed(1).padStart(5)}  (min ${r.worst.toFixed(1)}, max ${r.best.toFixed(1)})`;
      if (extra) {
        const t = bench(env, prec, N, RUNS, 1, 1);
        line += `   tA=tB=1: ${t.median.toFixed(1)}`;
      }
      console.log(line);
    }
  }
}
process.exit(fails ? 1 : 0);
