// Standalone correctness + speed probe for wasm/gemm.wasm (and gemm.nothreads.wasm).
//   node scripts/gemm-probe.mjs                 correctness + benchmark (threads build)
//   node scripts/gemm-probe.mjs --check         correctness only (both builds)
//   node scripts/gemm-probe.mjs --bench [sizes] benchmark only, e.g. --bench 512,1024
//   options: --runs N (default 7), --f32 / --f64 (only one precision), --trans (also
//   time transA = transB = 1); GEMM_WASM_DIR=dir to probe other builds.
// Correctness: float64 reference, NaN-poisoned C, guards around C and after the
// workspace, padded leading dimensions, misaligned pointers, row/column/grid sub-block
// calls (bit-identical to one whole call), operands ending exactly at the memory end.
// The machine is shared: GFLOP/s vary with load, so the bench also prints flop/cycle
// against an integer-multiply clock estimate.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const wasmDir = process.env.GEMM_WASM_DIR ?? join(here, "..", "wasm");

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
// opts: m,n,k,tA,tB,lda,ldb,ldc (defaults minimal), misalign (elements, for a/b/c),
// blocks: [[i0, rows, j0, cols], ...] sub-block calls with offset pointers (as a
// threaded caller does); wsFull: size each block's workspace for the full m,n,k (as the
// loader does); workMisalign: byte offset added to each work pointer.
// Sub-block results must be bitwise identical to one call over the whole matrix.
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
  const GUARD = 16; // elements of guard before and after C
  const aPtr = heap.alloc(aLen * es + 64) + extra;
  const bPtr = heap.alloc(bLen * es + 64) + extra;
  const cBase = heap.alloc((cLen + 2 * GUARD) * es + 64) + extra;
  const cPtr = cBase + GUARD * es;
  const c2Base = heap.alloc((cLen + 2 * GUARD) * es + 64) + extra;
  const c2Ptr = c2Base + GUARD * es;
  const A = view(memory, prec, aPtr, aLen);
  const B = view(memory, prec, bPtr, bLen);
  for (let i = 0; i < aLen; i++) A[i] = val();
  for (let i = 0; i < bLen; i++) B[i] = val();
  const Acopy = A.slice();
  const Bcopy = B.slice();
  view(memory, prec, cBase, cLen + 2 * GUARD).fill(NaN);
  view(memory, prec, c2Base, cLen + 2 * GUARD).fill(NaN);
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
  const blocks = opts.blocks ?? [[0, m, 0, n]];
  const wm = opts.workMisalign ?? 0;
  const SENT = 0xa5;
  const wsList = [];
  for (const [, rows, , cols] of blocks) {
    const wsBytes = opts.wsFull ? wsFn(m, n, k) : wsFn(rows, cols, k);
    if (!(wsBytes >= 0) || wsBytes !== (wsBytes | 0))
      throw new Error(`bad workspace size ${wsBytes}`);
    const w = heap.alloc(wsBytes + 256, 64) + wm;
    new Uint8Array(memory.buffer, w, wsBytes).fill(0xff); // poison
    new Uint8Array(memory.buffer, w + wsBytes, 64).fill(SENT); // guard after workspace
    wsList.push([w, wsBytes]);
  }
  let bad = null;
  for (let bi = 0; bi < blocks.length; bi++) {
    const [i0, rows, j0, cols] = blocks[bi];
    const aOff = (tA ? i0 : i0 * lda) * es;
    const bOff = (tB ? j0 * ldb : j0) * es;
    gemm(
      rows,
      cols,
      k,
      aPtr + aOff,
      lda,
      tA,
      bPtr + bOff,
      ldb,
      tB,
      cPtr + (i0 * ldc + j0) * es,
      ldc,
      wsList[bi][0],
    );
    const [w, wsBytes] = wsList[bi];
    if (new Uint8Array(memory.buffer, w + wsBytes, 64).some((x) => x !== SENT))
      bad ??= "wrote past workspace";
  }
  const C = view(memory, prec, cPtr, cLen);
  let maxErr = 0;
  let maxRef = 0;
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
  // padding between rows (j >= n) must stay NaN, and the guards around C
  for (let i = 0; i < m; i++)
    for (let j = n; j < ldc; j++)
      if (!Number.isNaN(C[i * ldc + j])) bad ??= `padding written at (${i},${j})`;
  const whole = view(memory, prec, cBase, cLen + 2 * GUARD);
  for (let i = 0; i < GUARD; i++) {
    if (!Number.isNaN(whole[i])) bad ??= "wrote before C";
    if (!Number.isNaN(whole[GUARD + cLen + i])) bad ??= "wrote past C";
  }
  // inputs untouched
  const A2 = view(memory, prec, aPtr, aLen);
  const B2 = view(memory, prec, bPtr, bLen);
  for (let i = 0; i < aLen; i++) if (!Object.is(A2[i], Acopy[i])) bad ??= "A modified";
  for (let i = 0; i < bLen; i++) if (!Object.is(B2[i], Bcopy[i])) bad ??= "B modified";
  // split calls must match one whole call bit for bit
  if (blocks.length > 1 && m > 0 && n > 0) {
    const ws = wsFn(m, n, k);
    const w = heap.alloc(ws + 64, 64);
    gemm(m, n, k, aPtr, lda, tA, bPtr, ldb, tB, c2Ptr, ldc, w);
    const C1 = view(memory, prec, cPtr, cLen);
    const C2 = view(memory, prec, c2Ptr, cLen);
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++)
        if (!Object.is(C1[i * ldc + j], C2[i * ldc + j]))
          bad ??= `split differs from whole at (${i},${j})`;
  }
  const rel = m * n === 0 ? 0 : k === 0 ? maxErr : maxErr / maxRef;
  return { rel, bad };
}

function splits(total, first) {
  const out = [];
  let i0 = 0;
  let s = first;
  while (i0 < total) {
    const len = Math.min(total - i0, s);
    out.push([i0, len]);
    i0 += len;
    s = s * 2 + 1;
  }
  return out;
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
  // sub-block calls (row blocks / column blocks / both, as threads would do)
  for (const [m, n, k] of [
    [37, 29, 23],
    [130, 97, 300],
    [257, 33, 65],
    [64, 1030, 10],
    [3, 300, 17],
  ])
    for (const tA of [0, 1])
      for (const tB of [0, 1]) {
        const rowB = splits(m, 1).map(([i0, r]) => [i0, r, 0, n]);
        const colB = splits(n, 1).map(([j0, c]) => [0, m, j0, c]);
        const grid = [];
        for (const [i0, r] of splits(m, 5))
          for (const [j0, c] of splits(n, 3)) grid.push([i0, r, j0, c]);
        const ld = { lda: (tA ? m : k) + 2, ldb: (tB ? k : n) + 1, ldc: n + 3 };
        cases.push({ m, n, k, tA, tB, blocks: rowB, ...ld });
        cases.push({ m, n, k, tA, tB, blocks: colB, wsFull: true, ...ld });
        cases.push({ m, n, k, tA, tB, blocks: grid, workMisalign: 4, misalign: 1 });
      }
  // workspace not 64-byte aligned; k = 0 with padded ldc
  for (const tA of [0, 1])
    for (const tB of [0, 1]) {
      cases.push({ m: 45, n: 23, k: 600, tA, tB, workMisalign: 16 });
      cases.push({ m: 45, n: 23, k: 7, tA, tB, workMisalign: 4 });
      cases.push({ m: 5, n: 3, k: 0, tA, tB, ldc: 8 });
      cases.push({ m: 0, n: 3, k: 4, tA, tB, ldc: 8 });
      cases.push({ m: 3, n: 0, k: 4, tA, tB, ldc: 8 });
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

// Rough core clock estimate (GHz): a dependent chain of 32-bit integer multiplies
// (3-cycle latency on current x86 cores). Only used to put GFLOP/s in context on a
// shared machine whose clock and load vary.
function imulChain(n, x, y) {
  for (let i = 0; i < n; i++) {
    x = Math.imul(x, y);
    x = Math.imul(x, y);
    x = Math.imul(x, y);
    x = Math.imul(x, y);
    x = Math.imul(x, y);
    x = Math.imul(x, y);
    x = Math.imul(x, y);
    x = Math.imul(x, y);
  }
  return x;
}
for (let i = 0; i < 20; i++) imulChain(1e5, 1, 3);
function clockGHz() {
  let best = 0;
  for (let t = 0; t < 3; t++) {
    const n = 2e6;
    const t0 = performance.now();
    imulChain(n, 1, 3);
    const dt = (performance.now() - t0) / 1e3;
    best = Math.max(best, (n * 8 * 3) / dt / 1e9);
  }
  return best;
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
  const perCycle = [];
  for (let r = 0; r < runs; r++) {
    const g0 = clockGHz();
    t0 = performance.now();
    for (let q = 0; q < reps; q++) call();
    const dt = (performance.now() - t0) / reps / 1000;
    const g1 = clockGHz();
    const gf = flops / dt / 1e9;
    samples.push(gf);
    perCycle.push(gf / ((g0 + g1) / 2));
  }
  const med = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  samples.sort((x, y) => x - y);
  return {
    median: samples[samples.length >> 1],
    best: samples[samples.length - 1],
    worst: samples[0],
    perCycle: med(perCycle),
  };
}

// Each operand in turn placed so that it ends exactly at the end of memory: any read or
// write past it (an over-read in an edge path) traps.
function endOfMemoryChecks(file, shared) {
  const mod = new WebAssembly.Module(readFileSync(join(wasmDir, file)));
  let fails = 0;
  let count = 0;
  for (const prec of ["f32", "f64"]) {
    const es = prec === "f32" ? 4 : 8;
    for (const [m, n, k] of [
      [7, 13, 5],
      [5, 3, 9],
      [33, 17, 300],
      [1, 1, 1],
      [4, 9, 1],
    ])
      for (const tA of [0, 1])
        for (const tB of [0, 1])
          for (const last of ["a", "b", "c"]) {
            count++;
            const lda = tA ? m : k;
            const ldb = tB ? k : n;
            const sizes = { a: (tA ? k : m) * lda * es, b: (tB ? n : k) * ldb * es, c: m * n * es };
            const ex0 = new WebAssembly.Instance(mod, {
              env: {
                memory: new WebAssembly.Memory({ initial: 17, maximum: 65536, shared }),
                abort() {},
              },
            }).exports;
            const wsBytes = (prec === "f32" ? ex0.sgemmWorkspaceBytes : ex0.dgemmWorkspaceBytes)(
              m,
              n,
              k,
            );
            // layout: [64 KiB][work][the two other operands][last operand ends at memory end]
            const others = ["a", "b", "c"].filter((x) => x !== last);
            const total =
              65536 + wsBytes + 64 + sizes[others[0]] + sizes[others[1]] + 64 + sizes[last];
            const pages = Math.ceil(total / 65536);
            const memory = new WebAssembly.Memory({ initial: pages, maximum: 65536, shared });
            const ex = new WebAssembly.Instance(mod, {
              env: {
                memory,
                abort() {
                  throw new Error("abort");
                },
              },
            }).exports;
            const ptr = {};
            let top = 65536;
            const work = top;
            top += wsBytes + 64;
            for (const o of others) {
              ptr[o] = top;
              top += sizes[o];
            }
            ptr[last] = pages * 65536 - sizes[last];
            const A = view(memory, prec, ptr.a, sizes.a / es);
            const B = view(memory, prec, ptr.b, sizes.b / es);
            for (let i = 0; i < A.length; i++) A[i] = val();
            for (let i = 0; i < B.length; i++) B[i] = val();
            view(memory, prec, ptr.c, m * n).fill(NaN);
            try {
              (prec === "f32" ? ex.sgemm : ex.dgemm)(
                m,
                n,
                k,
                ptr.a,
                lda,
                tA,
                ptr.b,
                ldb,
                tB,
                ptr.c,
                n,
                work,
              );
              const C = view(memory, prec, ptr.c, m * n);
              let maxErr = 0;
              let maxRef = 0;
              for (let i = 0; i < m; i++)
                for (let j = 0; j < n; j++) {
                  let r = 0;
                  for (let p = 0; p < k; p++)
                    r +=
                      (tA ? A[p * lda + i] : A[i * lda + p]) *
                      (tB ? B[j * ldb + p] : B[p * ldb + j]);
                  maxErr = Math.max(
                    maxErr,
                    Number.isNaN(C[i * n + j]) ? Infinity : Math.abs(C[i * n + j] - r),
                  );
                  maxRef = Math.max(maxRef, Math.abs(r));
                }
              if (!(maxErr / maxRef < (prec === "f32" ? 1e-5 : 1e-12)))
                throw new Error(`error ${maxErr / maxRef}`);
            } catch (e) {
              fails++;
              console.log(
                `FAIL ${file} end-of-memory ${prec} ${m}x${n}x${k} tA=${tA} tB=${tB} last=${last}: ${e.message}`,
              );
            }
          }
  }
  console.log(`${file}: ${count} end-of-memory cases, ${fails} failures`);
  return fails;
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
    fails += endOfMemoryChecks(file, shared);
  }
}
if (!onlyCheck) {
  const env = instantiate("gemm.wasm", true);
  const extra = args.includes("--trans");
  console.log(
    `benchmark (one thread, median of ${RUNS}), GFLOP/s; clock estimate now ${clockGHz().toFixed(2)} GHz`,
  );
  for (const prec of precs) {
    for (const N of benchSizes) {
      const r = bench(env, prec, N, RUNS);
      let line = `${prec === "f32" ? "sgemm" : "dgemm"} ${String(N).padStart(4)}^3: median ${r.median.toFixed(1).padStart(5)}  (min ${r.worst.toFixed(1).padStart(5)}, max ${r.best.toFixed(1).padStart(5)})  ${r.perCycle.toFixed(2)} flop/cycle`;
      if (extra) {
        const t = bench(env, prec, N, RUNS, 1, 1);
        line += `   tA=tB=1: ${t.median.toFixed(1)}`;
      }
      console.log(line);
    }
  }
}
process.exit(fails ? 1 : 0);
