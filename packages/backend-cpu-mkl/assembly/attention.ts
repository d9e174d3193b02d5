// The "attention" WASM module of backend-cpu-mkl: a flash-style scaled dot-product
// attention kernel in f32 SIMD. See assembly/README.md for the conventions (imported
// env.memory, byte-offset pointers, caller-provided workspace).
//
// One call runs `count` work items starting at `first`. Item = (bh, query block):
// bh = item / nQB is a flat index over the output's batch dims (heads included) and the
// query block holds BR consecutive query rows. For each item:
//
//   Qp = pre-broadcast (Q rows * scale * log2 e)              BR x E, packed once
//   for each key block of BC keys (causal: only up to the block's last row):
//     KT = K block transposed into 8-key slivers             E x BC
//     Sb = Qp KT                                             BR x BC  (4x8 register tiles)
//     mask (causal, boolean, additive, key padding); per row: block max, new running
//     max m, correction 2^(m_old - m), P = 2^(Sb - m) (vectorised exp2), running sum l
//     O = O * correction + P V                               BR x Ev  (4x8 register tiles)
//   out rows = O / l   (a row with no key left, m = -inf, is 0, as the reference and PyTorch)
//
// Memory: the workspace (flashWorkspaceBytes) holds one item's tiles; nothing grows with
// the sequence lengths. Each output row is computed by one call in a fixed order, so the
// result does not depend on how items are split over threads.
//
// Accuracy: scores, P and O accumulate in f32 (O over a key block in a register tile,
// then added to the f32 row); the running sum l is f64. exp2 is a degree-5 polynomial
// (relative error 2.4e-7 in f32). Scores live in the log2 domain, so additive masks are
// multiplied by log2 e (finite values clamped to the f32 range, -inf kept).
//
// Dropout reproduces the core reference's seeded stream: the reference draws one
// mulberry32 number per (bh, i, j) in row-major order, and mulberry32's k-th draw is a
// function of seed + (k + 1) * 0x6d2b79f5 alone, so any element's draw is computed here
// directly. l sums the weights before dropout (the reference normalises, then drops).

const BR: i32 = 32; // query rows per item (multiple of 4)
const BC: i32 = 64; // keys per block (multiple of 8)

// Descriptor (byte offsets); written by src/wasm/attention.ts.
const D_L: usize = 0;
const D_S: usize = 4;
const D_E: usize = 8;
const D_EV: usize = 12;
const D_NQB: usize = 16;
const D_FLAGS: usize = 20;
const D_SCALE: usize = 24;
const D_QS: usize = 28; // row strides in bytes
const D_KS: usize = 32;
const D_VS: usize = 36;
const D_MS0: usize = 40; // mask row / column strides in bytes
const D_MS1: usize = 44;
const D_TABLE: usize = 48; // per bh: 5 u32 addresses (q, k, v, mask, out)
const D_SEED: usize = 52;
const D_INVKEEP: usize = 56; // f32: 1 / (1 - dropoutP)
const D_P: usize = 64; // f64 dropoutP

const F_CAUSAL: i32 = 1;
const F_BOOL: i32 = 2;
const F_ADDITIVE: i32 = 4;
const F_DROPOUT: i32 = 8;

/** Query rows per work item (the caller splits each (batch, head) pair into ceil(L / this) items). */
export function flashBlockRows(): i32 {
  return BR;
}

/** Bytes of the descriptor flash_f32 reads. */
export function flashDescriptorBytes(): i32 {
  return 72;
}

// @ts-ignore: decorator
@inline
function imin(a: i32, b: i32): i32 {
  return a < b ? a : b;
}

// @ts-ignore: decorator
@inline
function align64(x: i32): i32 {
  return (x + 63) & ~63;
}

// @ts-ignore: decorator
@inline
function ev8(ev: i32): i32 {
  return (ev + 7) & ~7;
}

// Workspace layout, in bytes from the start of a thread's workspace.
// @ts-ignore: decorator
@inline
function offKT(e: i32): i32 {
  return align64(BR * e * 16);
}
// @ts-ignore: decorator
@inline
function offSb(e: i32): i32 {
  return offKT(e) + align64(BC * e * 4);
}
// @ts-ignore: decorator
@inline
function offPp(e: i32): i32 {
  return offSb(e) + align64(BR * BC * 4);
}
// @ts-ignore: decorator
@inline
function offVp(e: i32): i32 {
  return offPp(e) + align64(BR * BC * 16);
}
// @ts-ignore: decorator
@inline
function offO(e: i32, ev: i32): i32 {
  return offVp(e) + align64(BC * ev8(ev) * 4);
}
// @ts-ignore: decorator
@inline
function offM(e: i32, ev: i32): i32 {
  return offO(e, ev) + align64(BR * ev8(ev) * 4);
}
// @ts-ignore: decorator
@inline
function offL(e: i32, ev: i32): i32 {
  return offM(e, ev) + align64(BR * 4);
}
// @ts-ignore: decorator
@inline
function offCorr(e: i32, ev: i32): i32 {
  return offL(e, ev) + align64(BR * 8);
}

/** Bytes of one thread's workspace for head dims e (queries/keys) and ev (values). */
export function flashWorkspaceBytes(e: i32, ev: i32): i32 {
  return offCorr(e, ev) + align64(BR * 4) + 64;
}

// ------------------------------------------------------------------ exp (f32x4)

// Scores are kept in the log2 domain (scale * log2(e) is folded into Q, additive masks
// are multiplied by log2(e)), so the softmax needs exp2 only.
const LOG2E: f64 = Math.LOG2E;
const EXP2_LO: f32 = -126.0; // 2^x below this is taken as exactly 0
const MAGIC: f32 = 12582912.0; // 1.5 * 2^23: adding it rounds to an integer held in the low bits
const BIAS: i32 = 127 - 0x4b400000; // turns those bits into a biased exponent
// Near-minimax (relative error) polynomial for 2^r on |r| <= 1/2, degree 5: error 7.5e-8
// in exact arithmetic, 2.4e-7 evaluated in f32.
const P0: f32 = 1.0000000716546549;
const P1: f32 = 0.69314696706386481;
const P2: f32 = 0.24022119723934016;
const P3: f32 = 0.055507132749614191;
const P4: f32 = 0.0096755413306739563;
const P5: f32 = 0.00132764715194017;

/** 2^x for x <= 0, 4 lanes; x < -126 (and -inf) gives exactly 0; NaN stays NaN. */
function exp2Neg4(x: v128): v128 {
  const t = f32x4.add(x, f32x4.splat(MAGIC));
  const r = f32x4.sub(x, f32x4.sub(t, f32x4.splat(MAGIC)));
  let y = f32x4.add(f32x4.mul(f32x4.splat(P5), r), f32x4.splat(P4));
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P3));
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P2));
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P1));
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P0));
  const pow2n = i32x4.shl(i32x4.add(t, i32x4.splat(BIAS)), 23);
  return v128.andnot(f32x4.mul(y, pow2n), f32x4.lt(x, f32x4.splat(EXP2_LO)));
}

const F32_MAX: f64 = 3.4028234663852886e38;

/**
 * An additive mask value in the log2 domain. Finite values stay finite (clamped to the f32
 * range), so a row masked with finfo.min everywhere is uniform, as in the reference, and
 * not NaN; infinities stay infinite (+inf makes its row NaN, as softmax does).
 */
// @ts-ignore: decorator
@inline
function maskLog2(m: f32): f32 {
  if (m === -Infinity || m === Infinity) return m;
  const x = <f64>m * LOG2E;
  return <f32>(x < -F32_MAX ? -F32_MAX : x > F32_MAX ? F32_MAX : x);
}

/**
 * One row of a score block: p[c] = 2^(s[c] - m) for c < n4 (a multiple of 4). With
 * `keep`, p goes back into srow; else it is written pre-broadcast (64 bytes per key, at
 * pRow + c * 64) for the P V tiles. Returns the sum of p. The constants are locals so
 * that they are materialised once, not in every iteration.
 */
function expRow(srow: usize, n4: i32, m: f32, pRow: usize, keep: bool): f32 {
  const vmax = f32x4.splat(m);
  const magic = f32x4.splat(MAGIC);
  const bias = i32x4.splat(BIAS);
  const lo = f32x4.splat(EXP2_LO);
  const p0 = f32x4.splat(P0);
  const p1 = f32x4.splat(P1);
  const p2 = f32x4.splat(P2);
  const p3 = f32x4.splat(P3);
  const p4 = f32x4.splat(P4);
  const p5 = f32x4.splat(P5);
  let vsum = f32x4.splat(0);
  for (let c = 0; c < n4; c += 4) {
    const x = f32x4.sub(v128.load(srow + (<usize>c << 2)), vmax);
    const t = f32x4.add(x, magic);
    const r = f32x4.sub(x, f32x4.sub(t, magic));
    let y = f32x4.add(f32x4.mul(p5, r), p4);
    y = f32x4.add(f32x4.mul(y, r), p3);
    y = f32x4.add(f32x4.mul(y, r), p2);
    y = f32x4.add(f32x4.mul(y, r), p1);
    y = f32x4.add(f32x4.mul(y, r), p0);
    const e = f32x4.mul(y, i32x4.shl(i32x4.add(t, bias), 23));
    const p = v128.andnot(e, f32x4.lt(x, lo));
    vsum = f32x4.add(vsum, p);
    if (keep) {
      v128.store(srow + (<usize>c << 2), p);
    } else {
      const d = pRow + (<usize>c << 6);
      v128.store(d, v128.shuffle<f32>(p, p, 0, 0, 0, 0));
      v128.store(d, v128.shuffle<f32>(p, p, 1, 1, 1, 1), 64);
      v128.store(d, v128.shuffle<f32>(p, p, 2, 2, 2, 2), 128);
      v128.store(d, v128.shuffle<f32>(p, p, 3, 3, 3, 3), 192);
    }
  }
  return (f32x4.extract_lane(vsum, 0) + f32x4.extract_lane(vsum, 1)) +
    (f32x4.extract_lane(vsum, 2) + f32x4.extract_lane(vsum, 3));
}

// ------------------------------------------------------------------ 4 x 8 tile

// c[0..4][0..8] (row stride ldcB bytes) = (accum ? c : 0) + sum_p a[p] * b[p], where a is a
// pre-broadcast 4-row sliver (64 bytes per p) and b[p] 8 floats at pb + p * ldbB. kc >= 1.
// Unrolled 4x with an exit test after every step (keeps V8 from spilling; see gemm.ts).
function tile4x8(
  kc: i32, pa: usize, pb: usize, ldbB: usize, c: usize, ldcB: usize, accum: i32,
): void {
  let c00 = f32x4.splat(0);
  let c01 = f32x4.splat(0);
  let c10 = f32x4.splat(0);
  let c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0);
  let c21 = f32x4.splat(0);
  let c30 = f32x4.splat(0);
  let c31 = f32x4.splat(0);
  let rem = kc;
  let b0: v128, b1: v128, a: v128;
  while (true) {
    b0 = v128.load(pb, 0);
    b1 = v128.load(pb, 16);
    a = v128.load(pa, 0);
    c00 = f32x4.add(c00, f32x4.mul(a, b0));
    c01 = f32x4.add(c01, f32x4.mul(a, b1));
    a = v128.load(pa, 16);
    c10 = f32x4.add(c10, f32x4.mul(a, b0));
    c11 = f32x4.add(c11, f32x4.mul(a, b1));
    a = v128.load(pa, 32);
    c20 = f32x4.add(c20, f32x4.mul(a, b0));
    c21 = f32x4.add(c21, f32x4.mul(a, b1));
    a = v128.load(pa, 48);
    c30 = f32x4.add(c30, f32x4.mul(a, b0));
    c31 = f32x4.add(c31, f32x4.mul(a, b1));
    if (rem === 1) break;
    pb += ldbB;
    b0 = v128.load(pb, 0);
    b1 = v128.load(pb, 16);
    a = v128.load(pa, 64);
    c00 = f32x4.add(c00, f32x4.mul(a, b0));
    c01 = f32x4.add(c01, f32x4.mul(a, b1));
    a = v128.load(pa, 80);
    c10 = f32x4.add(c10, f32x4.mul(a, b0));
    c11 = f32x4.add(c11, f32x4.mul(a, b1));
    a = v128.load(pa, 96);
    c20 = f32x4.add(c20, f32x4.mul(a, b0));
    c21 = f32x4.add(c21, f32x4.mul(a, b1));
    a = v128.load(pa, 112);
    c30 = f32x4.add(c30, f32x4.mul(a, b0));
    c31 = f32x4.add(c31, f32x4.mul(a, b1));
    if (rem === 2) break;
    pb += ldbB;
    b0 = v128.load(pb, 0);
    b1 = v128.load(pb, 16);
    a = v128.load(pa, 128);
    c00 = f32x4.add(c00, f32x4.mul(a, b0));
    c01 = f32x4.add(c01, f32x4.mul(a, b1));
    a = v128.load(pa, 144);
    c10 = f32x4.add(c10, f32x4.mul(a, b0));
    c11 = f32x4.add(c11, f32x4.mul(a, b1));
    a = v128.load(pa, 160);
    c20 = f32x4.add(c20, f32x4.mul(a, b0));
    c21 = f32x4.add(c21, f32x4.mul(a, b1));
    a = v128.load(pa, 176);
    c30 = f32x4.add(c30, f32x4.mul(a, b0));
    c31 = f32x4.add(c31, f32x4.mul(a, b1));
    if (rem === 3) break;
    pb += ldbB;
    b0 = v128.load(pb, 0);
    b1 = v128.load(pb, 16);
    a = v128.load(pa, 192);
    c00 = f32x4.add(c00, f32x4.mul(a, b0));
    c01 = f32x4.add(c01, f32x4.mul(a, b1));
    a = v128.load(pa, 208);
    c10 = f32x4.add(c10, f32x4.mul(a, b0));
    c11 = f32x4.add(c11, f32x4.mul(a, b1));
    a = v128.load(pa, 224);
    c20 = f32x4.add(c20, f32x4.mul(a, b0));
    c21 = f32x4.add(c21, f32x4.mul(a, b1));
    a = v128.load(pa, 240);
    c30 = f32x4.add(c30, f32x4.mul(a, b0));
    c31 = f32x4.add(c31, f32x4.mul(a, b1));
    pa += 256;
    pb += ldbB;
    rem -= 4;
    if (rem === 0) break;
  }
  const r1 = c + ldcB;
  const r2 = r1 + ldcB;
  const r3 = r2 + ldcB;
  if (accum !== 0) {
    c00 = f32x4.add(v128.load(c), c00);
    c01 = f32x4.add(v128.load(c, 16), c01);
    c10 = f32x4.add(v128.load(r1), c10);
    c11 = f32x4.add(v128.load(r1, 16), c11);
    c20 = f32x4.add(v128.load(r2), c20);
    c21 = f32x4.add(v128.load(r2, 16), c21);
    c30 = f32x4.add(v128.load(r3), c30);
    c31 = f32x4.add(v128.load(r3, 16), c31);
  }
  v128.store(c, c00);
  v128.store(c, c01, 16);
  v128.store(r1, c10);
  v128.store(r1, c11, 16);
  v128.store(r2, c20);
  v128.store(r2, c21, 16);
  v128.store(r3, c30);
  v128.store(r3, c31, 16);
}

// ------------------------------------------------------------------ packing

// Q rows [i0, i0 + rows) times scale, pre-broadcast in 4-row slivers: sliver s, step e,
// row r at dst + (s * e + e) * 64 + r * 16. Rows past `rows` (to a multiple of 4) are zero.
function packQ(q: usize, qs: usize, i0: i32, rows: i32, e: i32, scale: f32, dst: usize): void {
  const vs = f32x4.splat(scale);
  let d = dst;
  for (let s = 0; s < rows; s += 4) {
    const n = imin(4, rows - s);
    let r0 = q + <usize>(i0 + s) * qs;
    if (n === 4) {
      let r1 = r0 + qs;
      let r2 = r1 + qs;
      let r3 = r2 + qs;
      for (let p = 0; p < e; p++) {
        v128.store(d, f32x4.mul(v128.load32_splat(r0), vs));
        v128.store(d, f32x4.mul(v128.load32_splat(r1), vs), 16);
        v128.store(d, f32x4.mul(v128.load32_splat(r2), vs), 32);
        v128.store(d, f32x4.mul(v128.load32_splat(r3), vs), 48);
        r0 += 4;
        r1 += 4;
        r2 += 4;
        r3 += 4;
        d += 64;
      }
    } else {
      for (let p = 0; p < e; p++) {
        let src = r0 + (<usize>p << 2);
        for (let r = 0; r < 4; r++) {
          v128.store(d, r < n ? f32x4.mul(v128.load32_splat(src), vs) : f32x4.splat(0));
          src += qs;
          d += 16;
        }
      }
    }
  }
}

// K rows [j0, j0 + nk) transposed into 8-key slivers: sliver t, step p (head dim), key c at
// dst + (t * e + p) * 32 + c * 4. Keys past nk (to a multiple of 8) are zero.
function packKT(k: usize, ks: usize, j0: i32, nk: i32, e: i32, dst: usize): void {
  for (let t = 0; t < nk; t += 8) {
    const cols = imin(8, nk - t);
    const d0 = dst + (<usize>(t * e) << 2);
    const c0 = k + <usize>(j0 + t) * ks;
    if (cols === 8 && (e & 3) === 0) {
      const c1 = c0 + ks;
      const c2 = c1 + ks;
      const c3 = c2 + ks;
      const c4 = c3 + ks;
      const c5 = c4 + ks;
      const c6 = c5 + ks;
      const c7 = c6 + ks;
      let d = d0;
      for (let p = 0; p < e; p += 4) {
        const o = <usize>p << 2;
        let x0 = v128.load(c0 + o);
        let x1 = v128.load(c1 + o);
        let x2 = v128.load(c2 + o);
        let x3 = v128.load(c3 + o);
        let t0 = v128.shuffle<f32>(x0, x1, 0, 4, 1, 5);
        let t1 = v128.shuffle<f32>(x0, x1, 2, 6, 3, 7);
        let t2 = v128.shuffle<f32>(x2, x3, 0, 4, 1, 5);
        let t3 = v128.shuffle<f32>(x2, x3, 2, 6, 3, 7);
        v128.store(d, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
        v128.store(d, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7), 32);
        v128.store(d, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5), 64);
        v128.store(d, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7), 96);
        x0 = v128.load(c4 + o);
        x1 = v128.load(c5 + o);
        x2 = v128.load(c6 + o);
        x3 = v128.load(c7 + o);
        t0 = v128.shuffle<f32>(x0, x1, 0, 4, 1, 5);
        t1 = v128.shuffle<f32>(x0, x1, 2, 6, 3, 7);
        t2 = v128.shuffle<f32>(x2, x3, 0, 4, 1, 5);
        t3 = v128.shuffle<f32>(x2, x3, 2, 6, 3, 7);
        v128.store(d, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5), 16);
        v128.store(d, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7), 48);
        v128.store(d, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5), 80);
        v128.store(d, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7), 112);
        d += 128;
      }
    } else {
      for (let p = 0; p < e; p++) {
        const d = d0 + (<usize>(p * 8) << 2);
        const src = c0 + (<usize>p << 2);
        for (let c = 0; c < 8; c++) {
          store<f32>(d + (<usize>c << 2), c < cols ? load<f32>(src + <usize>c * ks) : <f32>0);
        }
      }
    }
  }
}

// V rows [j0, j0 + nk), Ev columns, copied with rows padded to a multiple of 8 columns.
function packV(v: usize, vs: usize, j0: i32, nk: i32, ev: i32, dst: usize): void {
  const w = ev8(ev);
  for (let j = 0; j < nk; j++) {
    const src = v + <usize>(j0 + j) * vs;
    const d = dst + (<usize>(j * w) << 2);
    let c = 0;
    for (; c + 4 <= ev; c += 4) v128.store(d + (<usize>c << 2), v128.load(src + (<usize>c << 2)));
    for (; c < ev; c++) store<f32>(d + (<usize>c << 2), load<f32>(src + (<usize>c << 2)));
    for (; c < w; c++) store<f32>(d + (<usize>c << 2), 0);
  }
}

// ------------------------------------------------------------------ dropout stream

/** The k-th (0-based) number of the core's seededRandom(seed) (mulberry32), in [0, 1). */
// @ts-ignore: decorator
@inline
function drawAt(seed: u32, k: u32): f64 {
  let t: u32 = seed + (k + 1) * 0x6d2b79f5;
  t = (t ^ (t >>> 15)) * (t | 1);
  t ^= t + (t ^ (t >>> 7)) * (t | 61);
  return <f64>(t ^ (t >>> 14)) / 4294967296.0;
}

// ------------------------------------------------------------------ the kernel

/** Runs items [first, first + count) of the attention described at `desc`; `work` is this thread's workspace. */
export function flash_f32(desc: usize, first: i32, count: i32, work: usize): void {
  const L = load<i32>(desc + D_L);
  const S = load<i32>(desc + D_S);
  const E = load<i32>(desc + D_E);
  const EV = load<i32>(desc + D_EV);
  const nQB = load<i32>(desc + D_NQB);
  const flags = load<i32>(desc + D_FLAGS);
  const scale2 = <f32>(<f64>load<f32>(desc + D_SCALE) * LOG2E);
  const qs = <usize>load<u32>(desc + D_QS);
  const ks = <usize>load<u32>(desc + D_KS);
  const vs = <usize>load<u32>(desc + D_VS);
  const ms0 = <usize>load<u32>(desc + D_MS0);
  const ms1 = <usize>load<u32>(desc + D_MS1);
  const table = <usize>load<u32>(desc + D_TABLE);
  const seed = load<u32>(desc + D_SEED);
  const invKeep = load<f32>(desc + D_INVKEEP);
  const dropP = load<f64>(desc + D_P);
  const causal = (flags & F_CAUSAL) !== 0;
  const boolMask = (flags & F_BOOL) !== 0;
  const addMask = (flags & F_ADDITIVE) !== 0;
  const dropout = (flags & F_DROPOUT) !== 0;

  const W = ev8(EV);
  const Qp = work;
  const KT = work + <usize>offKT(E);
  const Sb = work + <usize>offSb(E);
  const Pp = work + <usize>offPp(E);
  const Vp = work + <usize>offVp(E);
  const O = work + <usize>offO(E, EV);
  const Mr = work + <usize>offM(E, EV);
  const Lr = work + <usize>offL(E, EV);
  const Cr = work + <usize>offCorr(E, EV);
  const ldO = <usize>(W << 2);
  const ldS = <usize>(BC << 2);
  const packV_ = (EV & 7) !== 0;
  const NEG_INF = f32x4.splat(-Infinity);

  for (let item = first; item < first + count; item++) {
    const bh = item / nQB;
    const i0 = (item - bh * nQB) * BR;
    const rows = imin(BR, L - i0);
    const rows4 = (rows + 3) & ~3;
    const slivers = rows4 >> 2;
    const tb = table + <usize>bh * 20;
    const qPtr = <usize>load<u32>(tb);
    const kPtr = <usize>load<u32>(tb, 4);
    const vPtr = <usize>load<u32>(tb, 8);
    const mPtr = <usize>load<u32>(tb, 12);
    const oPtr = <usize>load<u32>(tb, 16);

    packQ(qPtr, qs, i0, rows, E, scale2, Qp);
    for (let r = 0; r < rows4; r++) {
      store<f32>(Mr + (<usize>r << 2), -Infinity);
      store<f64>(Lr + (<usize>r << 3), 0);
    }
    for (let x: usize = 0; x < <usize>rows4 * ldO; x += 16) v128.store(O + x, f32x4.splat(0));
    // Padded rows of P stay zero (their O rows are never written out).
    for (let r = rows; r < rows4; r++) {
      for (let c = 0; c < BC; c++) {
        v128.store(Pp + (<usize>(((r >> 2) * BC + c) << 6)) + (<usize>(r & 3) << 4), f32x4.splat(0));
      }
    }

    const jEnd = causal ? imin(S, i0 + rows) : S;
    for (let j0 = 0; j0 < jEnd; j0 += BC) {
      const nk = imin(BC, jEnd - j0);
      const nk4 = (nk + 3) & ~3;
      packKT(kPtr, ks, j0, nk, E, KT);
      // Sb = Qp KT
      for (let s = 0; s < slivers; s++) {
        const pa = Qp + (<usize>(s * E) << 6);
        const sr = Sb + <usize>(s * 4) * ldS;
        for (let t = 0; t < nk; t += 8) {
          tile4x8(E, pa, KT + (<usize>(t * E) << 2), 32, sr + (<usize>t << 2), ldS, 0);
        }
      }
      const diag = causal && j0 + nk - 1 > i0; // some key of the block is after some row
      for (let r = 0; r < rows; r++) {
        const i = i0 + r;
        const srow = Sb + <usize>r * ldS;
        // masks
        if (diag) {
          for (let c = imax(0, i - j0 + 1); c < nk; c++) store<f32>(srow + (<usize>c << 2), -Infinity);
        }
        if (boolMask) {
          const mrow = mPtr + <usize>i * ms0 + <usize>j0 * ms1;
          for (let c = 0; c < nk; c++) {
            if (load<u8>(mrow + <usize>c * ms1) === 0) store<f32>(srow + (<usize>c << 2), -Infinity);
          }
        } else if (addMask) {
          const mrow = mPtr + <usize>i * ms0 + <usize>j0 * ms1;
          for (let c = 0; c < nk; c++) {
            const a = srow + (<usize>c << 2);
            store<f32>(a, load<f32>(a) + maskLog2(load<f32>(mrow + <usize>c * ms1)));
          }
        }
        for (let c = nk; c < nk4; c++) store<f32>(srow + (<usize>c << 2), -Infinity);
        // block max (pmax: one maxps; NaN scores are skipped, as the reference's max skips them)
        let vm0 = NEG_INF;
        let vm1 = NEG_INF;
        let c = 0;
        for (; c + 8 <= nk4; c += 8) {
          vm0 = f32x4.pmax(vm0, v128.load(srow + (<usize>c << 2)));
          vm1 = f32x4.pmax(vm1, v128.load(srow + (<usize>c << 2), 16));
        }
        if (c < nk4) vm0 = f32x4.pmax(vm0, v128.load(srow + (<usize>c << 2)));
        vm0 = f32x4.pmax(vm0, vm1);
        vm0 = f32x4.pmax(vm0, v128.shuffle<f32>(vm0, vm0, 2, 3, 0, 1));
        vm0 = f32x4.pmax(vm0, v128.shuffle<f32>(vm0, vm0, 1, 0, 3, 2));
        const mb = f32x4.extract_lane(vm0, 0);
        const pRow = Pp + (<usize>(((r >> 2) * BC) << 6)) + (<usize>(r & 3) << 4);
        if (mb === -Infinity) {
          // No key of this block is left for the row: it adds nothing. Unless a score is NaN
          // (pmax skips those): then the row's sum becomes NaN, as the reference's does.
          for (let c = 0; c < nk4; c++) v128.store(pRow + (<usize>c << 6), f32x4.splat(0));
          store<f32>(Cr + (<usize>r << 2), 1);
          if (anyNaN(srow, nk)) store<f64>(Lr + (<usize>r << 3), NaN);
          continue;
        }
        const mOld = load<f32>(Mr + (<usize>r << 2));
        const mNew = mOld < mb ? mb : mOld;
        const corr: f32 =
          mOld === mNew
            ? 1
            : mOld == -Infinity
              ? 0
              : f32x4.extract_lane(exp2Neg4(f32x4.splat(mOld - mNew)), 0);
        const sum = expRow(srow, nk4, mNew, pRow, dropout);
        store<f64>(Lr + (<usize>r << 3), load<f64>(Lr + (<usize>r << 3)) * <f64>corr + <f64>sum);
        store<f32>(Mr + (<usize>r << 2), mNew);
        store<f32>(Cr + (<usize>r << 2), corr);
        if (dropout) {
          const k0 = (<u32>bh * <u32>L + <u32>i) * <u32>S + <u32>j0;
          for (let c = 0; c < nk4; c++) {
            let p = load<f32>(srow + (<usize>c << 2));
            if (c < nk) p = drawAt(seed, k0 + <u32>c) < dropP ? 0 : p * invKeep;
            v128.store(pRow + (<usize>c << 6), f32x4.splat(p));
          }
        }
      }
      // O = O * corr
      for (let r = 0; r < rows; r++) {
        const cr = load<f32>(Cr + (<usize>r << 2));
        if (cr == 1) continue;
        const orow = O + <usize>r * ldO;
        const vc = f32x4.splat(cr);
        for (let c = 0; c < W; c += 4) {
          const a = orow + (<usize>c << 2);
          v128.store(a, f32x4.mul(v128.load(a), vc));
        }
      }
      // O += P V
      let vb = vPtr + <usize>j0 * vs;
      let ldV = vs;
      if (packV_) {
        packV(vPtr, vs, j0, nk, EV, Vp);
        vb = Vp;
        ldV = ldO;
      }
      for (let s = 0; s < slivers; s++) {
        const pa = Pp + (<usize>(s * BC) << 6);
        const orow = O + <usize>(s * 4) * ldO;
        for (let ct = 0; ct < W; ct += 8) {
          tile4x8(nk, pa, vb + (<usize>ct << 2), ldV, orow + (<usize>ct << 2), ldO, 1);
        }
      }
    }
    // out rows = O / l
    for (let r = 0; r < rows; r++) {
      const orow = O + <usize>r * ldO;
      const dst = oPtr + <usize>(i0 + r) * <usize>(EV << 2);
      // A row whose every score was -inf (fully masked) attends to nothing: 0, as PyTorch
      // 2.13 gives (its O holds exp(-inf + inf) = NaN, so it is written, not scaled).
      const dead =
        load<f32>(Mr + (<usize>r << 2)) == -Infinity && load<f64>(Lr + (<usize>r << 3)) == 0;
      const inv: f32 = dead ? 0 : <f32>(1.0 / load<f64>(Lr + (<usize>r << 3)));
      const vi = f32x4.splat(inv);
      if (dead) {
        memory.fill(dst, 0, <usize>(EV << 2));
        continue;
      }
      let c = 0;
      for (; c + 4 <= EV; c += 4) {
        const o = <usize>c << 2;
        v128.store(dst + o, f32x4.mul(v128.load(orow + o), vi));
      }
      for (; c < EV; c++) {
        const o = <usize>c << 2;
        store<f32>(dst + o, load<f32>(orow + o) * inv);
      }
    }
  }
}

/** Whether any of the first n floats at p is NaN (the scores pmax's block maximum skips). */
function anyNaN(p: usize, n: i32): bool {
  for (let c = 0; c < n; c++) {
    const x = load<f32>(p + (<usize>c << 2));
    if (x != x) return true;
  }
  return false;
}

// @ts-ignore: decorator
@inline
function imax(a: i32, b: i32): i32 {
  return a > b ? a : b;
}

// ------------------------------------------------------------------ BLAS-tiled flash steps
//
// flash-cpu-blas (src/native/flash-blas.ts) runs the two products of each (query block,
// key block) pair through the native sgemm and calls these for the rest: the online
// softmax between the products, and the final division by the row sums.

/**
 * Online-softmax step for `rows` rows of one score block S (row stride ld floats), scores
 * already in the log2 domain (the sgemm's alpha is scale * log2 e). Row r may use
 * columns c < valid(r): all `cols` without causal masking, else diag + r + 1 clamped to
 * [0, cols] (diag = first query row - first key of the block: key j sees rows i >= j).
 * Per row: m' = max(m, max S), corr = 2^(m - m'), S = 2^(S - m') (columns past valid(r)
 * become 0, so the P V product can use the whole block), l = l * corr + sum, the row of O
 * (ev floats, row stride ldo) *= corr, m = m'. m is f32, l is f64 (one per row).
 * A row with no valid column in this block is left as it was.
 */
export function flash_block_softmax(
  s: usize, ld: i32, rows: i32, cols: i32, m: usize, l: usize, o: usize, ldo: i32,
  ev: i32, causal: i32, diag: i32,
): void {
  for (let r = 0; r < rows; r++) {
    const srow = s + ((<usize>r * <usize>ld) << 2);
    const valid = causal ? imin(cols, imax(0, diag + r + 1)) : cols;
    if (valid == 0) {
      memory.fill(srow, 0, <usize>cols << 2);
      continue;
    }
    const n4 = valid & ~3;
    let vmax = f32x4.splat(-Infinity);
    for (let c = 0; c < n4; c += 4) vmax = f32x4.pmax(vmax, v128.load(srow + (<usize>c << 2)));
    let bmax = Mathf.max(
      Mathf.max(f32x4.extract_lane(vmax, 0), f32x4.extract_lane(vmax, 1)),
      Mathf.max(f32x4.extract_lane(vmax, 2), f32x4.extract_lane(vmax, 3)),
    );
    for (let c = n4; c < valid; c++) bmax = Mathf.max(bmax, load<f32>(srow + (<usize>c << 2)));
    const mOld = load<f32>(m + (<usize>r << 2));
    const mNew = Mathf.max(mOld, bmax);
    if (mNew == -Infinity) {
      // Every score so far is -inf (only possible with -inf inputs): nothing to add yet.
      // NaN scores (pmax skips them) make the row's sum NaN, as the reference's.
      if (anyNaN(srow, valid)) store<f64>(l + (<usize>r << 3), NaN);
      memory.fill(srow, 0, <usize>cols << 2);
      continue;
    }
    const n8 = valid & ~7;
    let sum = <f64>expRowInPlace8(srow, n8, mNew);
    if (n4 > n8) sum += <f64>expRow(srow + (<usize>n8 << 2), 4, mNew, 0, true);
    for (let c = n4; c < valid; c++) {
      const p = f32x4.extract_lane(
        exp2Neg4(f32x4.splat(load<f32>(srow + (<usize>c << 2)) - mNew)),
        0,
      );
      store<f32>(srow + (<usize>c << 2), p);
      sum += <f64>p;
    }
    if (valid < cols) memory.fill(srow + (<usize>valid << 2), 0, <usize>(cols - valid) << 2);
    const corr = mOld == -Infinity ? <f32>0 : f32x4.extract_lane(
      exp2Neg4(f32x4.splat(mOld - mNew)),
      0,
    );
    const lRow = l + (<usize>r << 3);
    store<f64>(lRow, load<f64>(lRow) * <f64>corr + sum);
    store<f32>(m + (<usize>r << 2), mNew);
    if (corr != 1) scaleRow(o + ((<usize>r * <usize>ldo) << 2), ev, corr);
  }
}

/** row[c] *= f for c < n. */
function scaleRow(row: usize, n: i32, f: f32): void {
  const vf = f32x4.splat(f);
  const n4 = n & ~3;
  for (let c = 0; c < n4; c += 4) {
    const at = row + (<usize>c << 2);
    v128.store(at, f32x4.mul(v128.load(at), vf));
  }
  for (let c = n4; c < n; c++) {
    const at = row + (<usize>c << 2);
    store<f32>(at, load<f32>(at) * f);
  }
}

/**
 * s[c] = 2^(s[c] - m) in place for c < n8 (a multiple of 8); returns the sum. Two vectors
 * per iteration (the polynomial's chain is long: two chains in flight keep the core busy),
 * and the low clamp is one pseudo-max: x < -127 gives exactly 0, NaN stays NaN.
 */
function expRowInPlace8(srow: usize, n8: i32, m: f32): f32 {
  const vmax = f32x4.splat(m);
  const magic = f32x4.splat(MAGIC);
  const bias = i32x4.splat(BIAS);
  const lo = f32x4.splat(-127.0);
  const p0 = f32x4.splat(P0);
  const p1 = f32x4.splat(P1);
  const p2 = f32x4.splat(P2);
  const p3 = f32x4.splat(P3);
  const p4 = f32x4.splat(P4);
  const p5 = f32x4.splat(P5);
  let vs0 = f32x4.splat(0);
  let vs1 = f32x4.splat(0);
  for (let c = 0; c < n8; c += 8) {
    const a = srow + (<usize>c << 2);
    const x0 = f32x4.pmax(f32x4.sub(v128.load(a), vmax), lo);
    const x1 = f32x4.pmax(f32x4.sub(v128.load(a, 16), vmax), lo);
    const t0 = f32x4.add(x0, magic);
    const t1 = f32x4.add(x1, magic);
    const r0 = f32x4.sub(x0, f32x4.sub(t0, magic));
    const r1 = f32x4.sub(x1, f32x4.sub(t1, magic));
    let y0 = f32x4.add(f32x4.mul(p5, r0), p4);
    let y1 = f32x4.add(f32x4.mul(p5, r1), p4);
    y0 = f32x4.add(f32x4.mul(y0, r0), p3);
    y1 = f32x4.add(f32x4.mul(y1, r1), p3);
    y0 = f32x4.add(f32x4.mul(y0, r0), p2);
    y1 = f32x4.add(f32x4.mul(y1, r1), p2);
    y0 = f32x4.add(f32x4.mul(y0, r0), p1);
    y1 = f32x4.add(f32x4.mul(y1, r1), p1);
    y0 = f32x4.add(f32x4.mul(y0, r0), p0);
    y1 = f32x4.add(f32x4.mul(y1, r1), p0);
    const e0 = f32x4.mul(y0, i32x4.shl(i32x4.add(t0, bias), 23));
    const e1 = f32x4.mul(y1, i32x4.shl(i32x4.add(t1, bias), 23));
    vs0 = f32x4.add(vs0, e0);
    vs1 = f32x4.add(vs1, e1);
    v128.store(a, e0);
    v128.store(a, e1, 16);
  }
  const v = f32x4.add(vs0, vs1);
  return (f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1)) +
    (f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3));
}

/**
 * O row r (ev floats, row stride ldo) /= l[r] (f64) for `rows` rows. l = 0 (every score of
 * the row -inf: fully masked) gives 0, as the reference and PyTorch 2.13; l = NaN gives NaN.
 * With absMax (not 0), absMax[r] (f32) = the row's largest |x| before the division, NaN
 * where it holds one: flash-cpu-dnnl's bounded-shift path checks that its products P V
 * neither flushed to 0 nor overflowed (src/dnnl/flash-bounded.ts).
 */
export function flash_block_finish(
  o: usize, ldo: i32, rows: i32, ev: i32, l: usize, absMax: usize,
): void {
  for (let r = 0; r < rows; r++) {
    const lr = load<f64>(l + (<usize>r << 3));
    const row = o + ((<usize>r * <usize>ldo) << 2);
    if (absMax == 0) {
      if (lr == 0) memory.fill(row, 0, <usize>(ev << 2));
      else scaleRow(row, ev, <f32>(1.0 / lr));
    } else store<f32>(absMax + (<usize>r << 2), scaleRowMax(row, ev, lr == 0 ? 0 : <f32>(1.0 / lr)));
  }
}

/**
 * row[c] *= f for c < n in one pass that returns the largest |row[c]| before (NaN where one
 * is). The magnitudes are compared as integers (a float's bits without the sign order as
 * its |x|, NaN above inf): one instruction a vector, where f32x4.max's NaN rules cost V8
 * about eight (the float max made flash-cpu-dnnl 5% slower on two threads).
 */
function scaleRowMax(row: usize, n: i32, f: f32): f32 {
  const vf = f32x4.splat(f);
  const magnitude = i32x4.splat(0x7fffffff);
  const n4 = n & ~3;
  let m = i32x4.splat(0);
  let c = 0;
  for (; c < n4; c += 4) {
    const at = row + (<usize>c << 2);
    const v = v128.load(at);
    m = i32x4.max_u(m, v128.and(v, magnitude));
    v128.store(at, f32x4.mul(v, vf));
  }
  let best = max<u32>(
    max<u32>(i32x4.extract_lane(m, 0), i32x4.extract_lane(m, 1)),
    max<u32>(i32x4.extract_lane(m, 2), i32x4.extract_lane(m, 3)),
  );
  for (; c < n; c++) {
    const at = row + (<usize>c << 2);
    const x = load<f32>(at);
    best = max<u32>(best, reinterpret<u32>(x) & 0x7fffffff);
    store<f32>(at, x * f);
  }
  return reinterpret<f32>(best);
}

/**
 * dst row r (row stride e + 1 floats) = [mul * src row r (e floats, row stride ld), last],
 * and norms[r] = the Euclidean norm of src row r (f32), for r < rows: the operands of
 * flash-cpu-dnnl's bounded-shift products (the query or key rows with one more column,
 * for the per-row shift; src/dnnl/flash-bounded.ts).
 */
export function attn_augment_rows(
  src: usize, ld: i32, rows: i32, e: i32, mul: f32, last: f32, dst: usize, norms: usize,
): void {
  const vm = f32x4.splat(mul);
  const e4 = e & ~3;
  for (let r = 0; r < rows; r++) {
    const s = src + ((<usize>r * <usize>ld) << 2);
    const d = dst + ((<usize>r * <usize>(e + 1)) << 2);
    let vs = f32x4.splat(0);
    for (let c = 0; c < e4; c += 4) {
      const x = v128.load(s + (<usize>c << 2));
      vs = f32x4.add(vs, f32x4.mul(x, x));
      v128.store(d + (<usize>c << 2), f32x4.mul(x, vm));
    }
    let sum = (f32x4.extract_lane(vs, 0) + f32x4.extract_lane(vs, 1)) +
      (f32x4.extract_lane(vs, 2) + f32x4.extract_lane(vs, 3));
    for (let c = e4; c < e; c++) {
      const x = load<f32>(s + (<usize>c << 2));
      sum += x * x;
      store<f32>(d + (<usize>c << 2), x * mul);
    }
    store<f32>(d + (<usize>e << 2), last);
    store<f32>(norms + (<usize>r << 2), Mathf.sqrt(sum));
  }
}

/**
 * sums[r] (f32) = the sum of the `cols` floats of row r of a block P (row stride ld
 * floats), plus what sums[r] held when `accumulate`, for r < rows: the row sums of
 * flash-cpu-dnnl's bounded-shift path (src/dnnl/flash-bounded.ts), in the order a BLAS
 * GEMV by a column of ones would add them up to rounding (four lanes of four partial sums).
 */
export function attn_row_sums(
  p: usize, ld: i32, rows: i32, cols: i32, sums: usize, accumulate: i32,
): void {
  const c16 = cols & ~15;
  const c4 = cols & ~3;
  for (let r = 0; r < rows; r++) {
    const row = p + ((<usize>r * <usize>ld) << 2);
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    let c = 0;
    for (; c < c16; c += 16) {
      const at = row + (<usize>c << 2);
      a0 = f32x4.add(a0, v128.load(at));
      a1 = f32x4.add(a1, v128.load(at, 16));
      a2 = f32x4.add(a2, v128.load(at, 32));
      a3 = f32x4.add(a3, v128.load(at, 48));
    }
    for (; c < c4; c += 4) a0 = f32x4.add(a0, v128.load(row + (<usize>c << 2)));
    const v = f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3));
    let sum = (f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1)) +
      (f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3));
    for (; c < cols; c++) sum += load<f32>(row + (<usize>c << 2));
    const out = sums + (<usize>r << 2);
    store<f32>(out, accumulate ? load<f32>(out) + sum : sum);
  }
}

/**
 * Sets to 0 the columns c >= diag + r + 1 (clamped to [0, cols]) of each of `rows` rows of
 * a block P (row stride ld floats): the keys row r may not see under causal masking (key
 * j sees rows i >= j; diag = first query row - first key of the block), as
 * flash_block_softmax does. flash-cpu-dnnl's bounded-shift path (src/dnnl/flash-bounded.ts)
 * calls it between its two products.
 */
export function flash_zero_hidden(p: usize, ld: i32, rows: i32, cols: i32, diag: i32): void {
  for (let r = 0; r < rows; r++) {
    const valid = imin(cols, imax(0, diag + r + 1));
    if (valid < cols) {
      const row = p + ((<usize>r * <usize>ld) << 2);
      memory.fill(row + (<usize>valid << 2), 0, <usize>(cols - valid) << 2);
    }
  }
}
