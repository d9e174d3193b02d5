// GEMM kernels: C = op(A) * op(B)   (beta = 0: C is fully overwritten).
//
// All pointers are byte offsets into the imported memory (env.memory).
// Row-major, leading dimensions in elements.
//   transA = 0: A is M x K (lda >= K);  transA = 1: A is stored K x M (lda >= M)
//   transB = 0: B is K x N (ldb >= N);  transB = 1: B is stored N x K (ldb >= K)
// m == 0 or n == 0: C untouched; k == 0: C = 0.
// `work` is caller-provided scratch of *WorkspaceBytes(m, n, k) bytes (at most about
// 2.25 MiB whatever the size; the size is monotone in m, n, k, so a workspace sized for
// a whole problem serves any sub-block of it). No pointer needs any alignment (64-byte
// aligned work is best); a sub-block is run by offsetting a/b/c.
//
// Structure (GotoBLAS / BLIS): for each N-block (NC) and K-block (KC), pack B into
// NR-column slivers; for each M-block (MC), pack A into MR-row slivers with every value
// pre-broadcast to a full v128 (measured faster in the kernel than v128.load32_splat from
// a plain panel, despite 4x the packing traffic); then run an MR x NR
// register-tile micro-kernel over all sliver pairs (B sliver outer, so it stays in L1;
// the A block streams from L2). Edges are zero-padded in the packed panels; partial
// tiles go through a small tile buffer in the workspace.
//
// The f32 micro-kernel's multiply-adds are madd(): mul + add, or in the relaxed-SIMD
// build (gemm.relaxed.wasm) f32x4.relaxed_madd, which V8 emits as one FMA (one rounding
// instead of two) and JSC as mul + add. Every element of C is summed in the same order
// (KC blocks in order; within a block sequentially from zero, then added to C) whatever
// m, n, the edges or the sub-block split, and every element by the same instruction, so
// the results are deterministic and bit-identical however a caller splits the rows or
// columns of C over threads.

/** c + a * b: fused where the relaxed-SIMD build runs on an engine that fuses. */
// @ts-ignore: decorator
@inline function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(c, f32x4.mul(a, b));
}

// ---------------------------------------------------------------- f32 parameters
// micro-tile: 5 rows x 8 columns = 10 f32x4 accumulators
const SMR: i32 = 5;
const SNR: i32 = 8;
const SKC: i32 = 256;
const SMC: i32 = 60;
const SNC: i32 = 2048;

// ---------------------------------------------------------------- f64 parameters
// micro-tile: 4 rows x 4 columns = 8 f64x2 accumulators
const DMR: i32 = 4;
const DNR: i32 = 4;
const DKC: i32 = 256;
const DMC: i32 = 64;
const DNC: i32 = 1024;

// @ts-ignore: decorator
@inline
function imin(a: i32, b: i32): i32 {
  return a < b ? a : b;
}

// @ts-ignore: decorator
@inline
function roundUp(x: i32, r: i32): i32 {
  return ((x + r - 1) / r) * r;
}

// @ts-ignore: decorator
@inline
function align64(x: i32): i32 {
  return (x + 63) & ~63;
}

// ====================================================================== f32 ======

export function sgemmWorkspaceBytes(m: i32, n: i32, k: i32): i32 {
  if (m <= 0 || n <= 0) return 192;
  const kc = k < 1 ? 1 : imin(k, SKC);
  const mc = roundUp(imin(m, SMC), SMR);
  const nc = roundUp(imin(n, SNC), SNR);
  return align64(mc * kc * 16) + align64(nc * kc * 4) + 192;
}

// Pack A[i0 .. i0+mc, p0 .. p0+kc] (op applied) into 5-row slivers, each value
// pre-broadcast to a full v128: sliver s, step p, row r at dst + (s*kc + p)*80 + r*16.
// Rows past mc are zero.
function spackA(
  a: usize, lda: i32, transA: i32, i0: i32, mc: i32, p0: i32, kc: i32, dst: usize,
): void {
  const ldaB = <usize>lda << 2;
  // address of element (i, p) = a + i*strideI + p*strideP
  const strideI: usize = transA == 0 ? ldaB : 4;
  const strideP: usize = transA == 0 ? 4 : ldaB;
  let d = dst;
  for (let s = 0; s < mc; s += SMR) {
    const rows = imin(SMR, mc - s);
    let r0 = a + <usize>(i0 + s) * strideI + <usize>p0 * strideP;
    if (rows == SMR) {
      let r1 = r0 + strideI;
      let r2 = r1 + strideI;
      let r3 = r2 + strideI;
      let r4 = r3 + strideI;
      for (let p = 0; p < kc; p++) {
        v128.store(d, v128.load32_splat(r0));
        v128.store(d, v128.load32_splat(r1), 16);
        v128.store(d, v128.load32_splat(r2), 32);
        v128.store(d, v128.load32_splat(r3), 48);
        v128.store(d, v128.load32_splat(r4), 64);
        r0 += strideP;
        r1 += strideP;
        r2 += strideP;
        r3 += strideP;
        r4 += strideP;
        d += 80;
      }
    } else {
      for (let p = 0; p < kc; p++) {
        let src = r0;
        for (let r = 0; r < SMR; r++) {
          v128.store(d, r < rows ? v128.load32_splat(src) : v128.splat<i32>(0));
          src += strideI;
          d += 16;
        }
        r0 += strideP;
      }
    }
  }
}

// Pack B[p0 .. p0+kc, j0 .. j0+nc] (op applied) into SNR-column slivers:
// sliver t holds, for each p, SNR consecutive values (cols 8t..8t+7), zero-padded.
function spackB(
  b: usize, ldb: i32, transB: i32, p0: i32, kc: i32, j0: i32, nc: i32, dst: usize,
): void {
  const ldb4 = <usize>ldb << 2;
  for (let t = 0; t < nc; t += SNR) {
    const cols = imin(SNR, nc - t);
    const d0 = dst + (<usize>(t * kc) << 2);
    if (transB == 0) {
      // element (p, j) at b + (p*ldb + j)*4
      let src = b + <usize>p0 * ldb4 + (<usize>(j0 + t) << 2);
      let d = d0;
      if (cols == SNR) {
        for (let p = 0; p < kc; p++) {
          v128.store(d, v128.load(src));
          v128.store(d, v128.load(src, 16), 16);
          src += ldb4;
          d += 32;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          for (let c = 0; c < SNR; c++) {
            store<f32>(d + (<usize>c << 2), c < cols ? load<f32>(src + (<usize>c << 2)) : <f32>0);
          }
          src += ldb4;
          d += 32;
        }
      }
    } else {
      // element (p, j) at b + (j*ldb + p)*4: transpose 4x4 blocks
      const c0 = b + <usize>(j0 + t) * ldb4 + (<usize>p0 << 2);
      if (cols == SNR) {
        const c1 = c0 + ldb4;
        const c2 = c1 + ldb4;
        const c3 = c2 + ldb4;
        const c4 = c3 + ldb4;
        const c5 = c4 + ldb4;
        const c6 = c5 + ldb4;
        const c7 = c6 + ldb4;
        let p = 0;
        let d = d0;
        for (; p + 4 <= kc; p += 4) {
          const o = <usize>p << 2;
          let x0 = v128.load(c0 + o);
          let x1 = v128.load(c1 + o);
          let x2 = v128.load(c2 + o);
          let x3 = v128.load(c3 + o);
          let t0 = f32x4.shuffle(x0, x1, 0, 4, 1, 5);
          let t1 = f32x4.shuffle(x0, x1, 2, 6, 3, 7);
          let t2 = f32x4.shuffle(x2, x3, 0, 4, 1, 5);
          let t3 = f32x4.shuffle(x2, x3, 2, 6, 3, 7);
          v128.store(d, f32x4.shuffle(t0, t2, 0, 1, 4, 5));
          v128.store(d, f32x4.shuffle(t0, t2, 2, 3, 6, 7), 32);
          v128.store(d, f32x4.shuffle(t1, t3, 0, 1, 4, 5), 64);
          v128.store(d, f32x4.shuffle(t1, t3, 2, 3, 6, 7), 96);
          x0 = v128.load(c4 + o);
          x1 = v128.load(c5 + o);
          x2 = v128.load(c6 + o);
          x3 = v128.load(c7 + o);
          t0 = f32x4.shuffle(x0, x1, 0, 4, 1, 5);
          t1 = f32x4.shuffle(x0, x1, 2, 6, 3, 7);
          t2 = f32x4.shuffle(x2, x3, 0, 4, 1, 5);
          t3 = f32x4.shuffle(x2, x3, 2, 6, 3, 7);
          v128.store(d, f32x4.shuffle(t0, t2, 0, 1, 4, 5), 16);
          v128.store(d, f32x4.shuffle(t0, t2, 2, 3, 6, 7), 48);
          v128.store(d, f32x4.shuffle(t1, t3, 0, 1, 4, 5), 80);
          v128.store(d, f32x4.shuffle(t1, t3, 2, 3, 6, 7), 112);
          d += 128;
        }
        for (; p < kc; p++) {
          const o = <usize>p << 2;
          store<f32>(d, load<f32>(c0 + o));
          store<f32>(d, load<f32>(c1 + o), 4);
          store<f32>(d, load<f32>(c2 + o), 8);
          store<f32>(d, load<f32>(c3 + o), 12);
          store<f32>(d, load<f32>(c4 + o), 16);
          store<f32>(d, load<f32>(c5 + o), 20);
          store<f32>(d, load<f32>(c6 + o), 24);
          store<f32>(d, load<f32>(c7 + o), 28);
          d += 32;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          const d = d0 + (<usize>(p * SNR) << 2);
          const src = c0 + (<usize>p << 2);
          for (let c = 0; c < SNR; c++) {
            store<f32>(d + (<usize>c << 2), c < cols ? load<f32>(src + <usize>c * ldb4) : <f32>0);
          }
        }
      }
    }
  }
}

// 5-row x 8-column micro-kernel: 10 f32x4 accumulators.
// pa: packed A sliver (per k: 5 pre-broadcast rows, 80 bytes), pb: packed B sliver
// (per k: 32 bytes). kc >= 1. Stores (accum == 0) or adds (accum != 0) the tile into
// c with a row stride of ldcBytes.
// 5 x 8 rather than 4 x 8: about 15-20% faster on x64 (Zen 3, V8 11), fewer loads per
// multiply-add. It needs 10 accumulators + 2 B + 1 A + 1 product = 14 of the 15
// allocatable xmm registers, which only works because of the block splits below.
function skernel(kc: i32, pa: usize, pb: usize, c: usize, ldcBytes: usize, accum: i32): void {
  let c00 = f32x4.splat(0);
  let c01 = f32x4.splat(0);
  let c10 = f32x4.splat(0);
  let c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0);
  let c21 = f32x4.splat(0);
  let c30 = f32x4.splat(0);
  let c31 = f32x4.splat(0);
  let c40 = f32x4.splat(0);
  let c41 = f32x4.splat(0);
  // Unrolled 4x with an exit test after every k step, and two never-taken tests inside
  // each step (`rem` is never negative). The branches matter: V8 (TurboFan) schedules
  // all loads of a basic block before its arithmetic, so every loaded value of a block
  // is live at once; one block per k step (7 loads + 10 accumulators) would spill.
  // Split after rows 1 and 3, a block holds at most 4 loads (B0, B1, A0, A1). The
  // distinct constants keep Binaryen from merging the tests.
  let rem = kc;
  let b0: v128, b1: v128, a: v128;
  while (true) {
    b0 = v128.load(pb, 0);
    b1 = v128.load(pb, 16);
    a = v128.load(pa, 0);
    c00 = madd(a, b0, c00);
    c01 = madd(a, b1, c01);
    a = v128.load(pa, 16);
    c10 = madd(a, b0, c10);
    c11 = madd(a, b1, c11);
    if (rem == -2) break;
    a = v128.load(pa, 32);
    c20 = madd(a, b0, c20);
    c21 = madd(a, b1, c21);
    a = v128.load(pa, 48);
    c30 = madd(a, b0, c30);
    c31 = madd(a, b1, c31);
    if (rem == -4) break;
    a = v128.load(pa, 64);
    c40 = madd(a, b0, c40);
    c41 = madd(a, b1, c41);
    if (rem == 1) break;
    b0 = v128.load(pb, 32);
    b1 = v128.load(pb, 48);
    a = v128.load(pa, 80);
    c00 = madd(a, b0, c00);
    c01 = madd(a, b1, c01);
    a = v128.load(pa, 96);
    c10 = madd(a, b0, c10);
    c11 = madd(a, b1, c11);
    if (rem == -7) break;
    a = v128.load(pa, 112);
    c20 = madd(a, b0, c20);
    c21 = madd(a, b1, c21);
    a = v128.load(pa, 128);
    c30 = madd(a, b0, c30);
    c31 = madd(a, b1, c31);
    if (rem == -9) break;
    a = v128.load(pa, 144);
    c40 = madd(a, b0, c40);
    c41 = madd(a, b1, c41);
    if (rem == 2) break;
    b0 = v128.load(pb, 64);
    b1 = v128.load(pb, 80);
    a = v128.load(pa, 160);
    c00 = madd(a, b0, c00);
    c01 = madd(a, b1, c01);
    a = v128.load(pa, 176);
    c10 = madd(a, b0, c10);
    c11 = madd(a, b1, c11);
    if (rem == -12) break;
    a = v128.load(pa, 192);
    c20 = madd(a, b0, c20);
    c21 = madd(a, b1, c21);
    a = v128.load(pa, 208);
    c30 = madd(a, b0, c30);
    c31 = madd(a, b1, c31);
    if (rem == -14) break;
    a = v128.load(pa, 224);
    c40 = madd(a, b0, c40);
    c41 = madd(a, b1, c41);
    if (rem == 3) break;
    b0 = v128.load(pb, 96);
    b1 = v128.load(pb, 112);
    a = v128.load(pa, 240);
    c00 = madd(a, b0, c00);
    c01 = madd(a, b1, c01);
    a = v128.load(pa, 256);
    c10 = madd(a, b0, c10);
    c11 = madd(a, b1, c11);
    if (rem == -17) break;
    a = v128.load(pa, 272);
    c20 = madd(a, b0, c20);
    c21 = madd(a, b1, c21);
    a = v128.load(pa, 288);
    c30 = madd(a, b0, c30);
    c31 = madd(a, b1, c31);
    if (rem == -19) break;
    a = v128.load(pa, 304);
    c40 = madd(a, b0, c40);
    c41 = madd(a, b1, c41);
    pa += 320;
    pb += 128;
    rem -= 4;
    if (rem == 0) break;
  }
  const r1 = c + ldcBytes;
  const r2 = r1 + ldcBytes;
  const r3 = r2 + ldcBytes;
  const r4 = r3 + ldcBytes;
  if (accum != 0) {
    c00 = f32x4.add(v128.load(c), c00);
    c01 = f32x4.add(v128.load(c, 16), c01);
    c10 = f32x4.add(v128.load(r1), c10);
    c11 = f32x4.add(v128.load(r1, 16), c11);
    c20 = f32x4.add(v128.load(r2), c20);
    c21 = f32x4.add(v128.load(r2, 16), c21);
    c30 = f32x4.add(v128.load(r3), c30);
    c31 = f32x4.add(v128.load(r3, 16), c31);
    c40 = f32x4.add(v128.load(r4), c40);
    c41 = f32x4.add(v128.load(r4, 16), c41);
  }
  v128.store(c, c00);
  v128.store(c, c01, 16);
  v128.store(r1, c10);
  v128.store(r1, c11, 16);
  v128.store(r2, c20);
  v128.store(r2, c21, 16);
  v128.store(r3, c30);
  v128.store(r3, c31, 16);
  v128.store(r4, c40);
  v128.store(r4, c41, 16);
}

export function sgemm(
  m: i32, n: i32, k: i32,
  a: usize, lda: i32, transA: i32,
  b: usize, ldb: i32, transB: i32,
  c: usize, ldc: i32,
  work: usize,
): void {
  if (m <= 0 || n <= 0) return;
  const ldc4 = <usize>ldc << 2;
  if (k <= 0) {
    for (let i = 0; i < m; i++) {
      const row = c + <usize>i * ldc4;
      let j = 0;
      for (; j + 4 <= n; j += 4) v128.store(row + (<usize>j << 2), f32x4.splat(0));
      for (; j < n; j++) store<f32>(row + (<usize>j << 2), 0);
    }
    return;
  }
  const kcMax = imin(k, SKC);
  const mcMax = roundUp(imin(m, SMC), SMR);
  const ncMax = roundUp(imin(n, SNC), SNR);
  const packA = work;
  const packB = packA + <usize>align64(mcMax * kcMax * 16);
  const tile = packB + <usize>align64(ncMax * kcMax * 4);

  for (let j0 = 0; j0 < n; j0 += SNC) {
    const nc = imin(SNC, n - j0);
    for (let p0 = 0; p0 < k; p0 += SKC) {
      const kc = imin(SKC, k - p0);
      const accum = p0 > 0 ? 1 : 0;
      spackB(b, ldb, transB, p0, kc, j0, nc, packB);
      for (let i0 = 0; i0 < m; i0 += SMC) {
        const mc = imin(SMC, m - i0);
        spackA(a, lda, transA, i0, mc, p0, kc, packA);
        const kcBytesA = <usize>(kc * 80);
        const kcBytesB = <usize>(kc * SNR) << 2;
        let pb = packB;
        for (let jr = 0; jr < nc; jr += SNR) {
          const nr = imin(SNR, nc - jr);
          let pa = packA;
          const cc = c + (<usize>(j0 + jr) << 2);
          for (let ir = 0; ir < mc; ir += SMR) {
            const mr = imin(SMR, mc - ir);
            const cij = cc + <usize>(i0 + ir) * ldc4;
            if ((mr == SMR) & (nr == SNR)) {
              skernel(kc, pa, pb, cij, ldc4, accum);
            } else {
              skernel(kc, pa, pb, tile, <usize>(SNR * 4), 0);
              for (let r = 0; r < mr; r++) {
                const crow = cij + <usize>r * ldc4;
                const trow = tile + (<usize>(r * SNR) << 2);
                if (accum != 0) {
                  for (let q = 0; q < nr; q++) {
                    const o = <usize>q << 2;
                    store<f32>(crow + o, load<f32>(crow + o) + load<f32>(trow + o));
                  }
                } else {
                  for (let q = 0; q < nr; q++) {
                    const o = <usize>q << 2;
                    store<f32>(crow + o, load<f32>(trow + o));
                  }
                }
              }
            }
            pa += kcBytesA;
          }
          pb += kcBytesB;
        }
      }
    }
  }
}

// ====================================================================== f64 ======

export function dgemmWorkspaceBytes(m: i32, n: i32, k: i32): i32 {
  if (m <= 0 || n <= 0) return 128;
  const kc = k < 1 ? 1 : imin(k, DKC);
  const mc = roundUp(imin(m, DMC), DMR);
  const nc = roundUp(imin(n, DNC), DNR);
  return align64(mc * kc * 16) + align64(nc * kc * 8) + 128;
}

// Pack A[i0 .. i0+mc, p0 .. p0+kc] (op applied) into 4-row slivers, each value
// pre-broadcast to a full v128: sliver s, step p, row r at dst + (s*kc + p)*64 + r*16.
// Rows past mc are zero.
function dpackA(
  a: usize, lda: i32, transA: i32, i0: i32, mc: i32, p0: i32, kc: i32, dst: usize,
): void {
  const ldaB = <usize>lda << 3;
  // address of element (i, p) = a + i*strideI + p*strideP
  const strideI: usize = transA == 0 ? ldaB : 8;
  const strideP: usize = transA == 0 ? 8 : ldaB;
  let d = dst;
  for (let s = 0; s < mc; s += 4) {
    const rows = imin(4, mc - s);
    let r0 = a + <usize>(i0 + s) * strideI + <usize>p0 * strideP;
    if (rows == 4) {
      let r1 = r0 + strideI;
      let r2 = r1 + strideI;
      let r3 = r2 + strideI;
      for (let p = 0; p < kc; p++) {
        v128.store(d, v128.load64_splat(r0));
        v128.store(d, v128.load64_splat(r1), 16);
        v128.store(d, v128.load64_splat(r2), 32);
        v128.store(d, v128.load64_splat(r3), 48);
        r0 += strideP;
        r1 += strideP;
        r2 += strideP;
        r3 += strideP;
        d += 64;
      }
    } else {
      for (let p = 0; p < kc; p++) {
        let src = r0;
        for (let r = 0; r < 4; r++) {
          v128.store(d, r < rows ? v128.load64_splat(src) : v128.splat<i32>(0));
          src += strideI;
          d += 16;
        }
        r0 += strideP;
      }
    }
  }
}

// Pack B block into DNR-column slivers of f64 (for each p: 4 consecutive columns).
function dpackB(
  b: usize, ldb: i32, transB: i32, p0: i32, kc: i32, j0: i32, nc: i32, dst: usize,
): void {
  const ldb8 = <usize>ldb << 3;
  for (let t = 0; t < nc; t += DNR) {
    const cols = imin(DNR, nc - t);
    const d0 = dst + (<usize>(t * kc) << 3);
    if (transB == 0) {
      let src = b + <usize>p0 * ldb8 + (<usize>(j0 + t) << 3);
      let d = d0;
      if (cols == DNR) {
        for (let p = 0; p < kc; p++) {
          v128.store(d, v128.load(src));
          v128.store(d, v128.load(src, 16), 16);
          src += ldb8;
          d += 32;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          for (let c = 0; c < DNR; c++) {
            store<f64>(d + (<usize>c << 3), c < cols ? load<f64>(src + (<usize>c << 3)) : <f64>0);
          }
          src += ldb8;
          d += 32;
        }
      }
    } else {
      const c0 = b + <usize>(j0 + t) * ldb8 + (<usize>p0 << 3);
      if (cols == DNR) {
        const c1 = c0 + ldb8;
        const c2 = c1 + ldb8;
        const c3 = c2 + ldb8;
        let p = 0;
        let d = d0;
        for (; p + 2 <= kc; p += 2) {
          const o = <usize>p << 3;
          const x0 = v128.load(c0 + o);
          const x1 = v128.load(c1 + o);
          const x2 = v128.load(c2 + o);
          const x3 = v128.load(c3 + o);
          v128.store(d, f64x2.shuffle(x0, x1, 0, 2));
          v128.store(d, f64x2.shuffle(x2, x3, 0, 2), 16);
          v128.store(d, f64x2.shuffle(x0, x1, 1, 3), 32);
          v128.store(d, f64x2.shuffle(x2, x3, 1, 3), 48);
          d += 64;
        }
        for (; p < kc; p++) {
          const o = <usize>p << 3;
          store<f64>(d, load<f64>(c0 + o));
          store<f64>(d, load<f64>(c1 + o), 8);
          store<f64>(d, load<f64>(c2 + o), 16);
          store<f64>(d, load<f64>(c3 + o), 24);
          d += 32;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          const d = d0 + (<usize>(p * DNR) << 3);
          const src = c0 + (<usize>p << 3);
          for (let c = 0; c < DNR; c++) {
            store<f64>(d + (<usize>c << 3), c < cols ? load<f64>(src + <usize>c * ldb8) : <f64>0);
          }
        }
      }
    }
  }
}

// 4-row x 4-column micro-kernel: 8 f64x2 accumulators.
// pa: packed A sliver (per k: 4 pre-broadcast rows, 64 bytes), pb: packed B sliver
// (per k: 32 bytes). kc >= 1. Stores (accum == 0) or adds (accum != 0) the tile into
// c with a row stride of ldcBytes.
function dkernel(kc: i32, pa: usize, pb: usize, c: usize, ldcBytes: usize, accum: i32): void {
  let c00 = f64x2.splat(0);
  let c01 = f64x2.splat(0);
  let c10 = f64x2.splat(0);
  let c11 = f64x2.splat(0);
  let c20 = f64x2.splat(0);
  let c21 = f64x2.splat(0);
  let c30 = f64x2.splat(0);
  let c31 = f64x2.splat(0);
  // Unrolled 4x with an exit test after every k step. The exits matter: V8 (TurboFan)
  // schedules all loads of a basic block before its arithmetic, so a plain unrolled
  // body keeps every loaded value live at once and spills (only 15 xmm registers are
  // allocatable); the branches split the body into one block per k step.
  let rem = kc;
  let b0: v128, b1: v128, a: v128;
  while (true) {
    b0 = v128.load(pb, 0);
    b1 = v128.load(pb, 16);
    a = v128.load(pa, 0);
    c00 = f64x2.add(c00, f64x2.mul(a, b0));
    c01 = f64x2.add(c01, f64x2.mul(a, b1));
    a = v128.load(pa, 16);
    c10 = f64x2.add(c10, f64x2.mul(a, b0));
    c11 = f64x2.add(c11, f64x2.mul(a, b1));
    a = v128.load(pa, 32);
    c20 = f64x2.add(c20, f64x2.mul(a, b0));
    c21 = f64x2.add(c21, f64x2.mul(a, b1));
    a = v128.load(pa, 48);
    c30 = f64x2.add(c30, f64x2.mul(a, b0));
    c31 = f64x2.add(c31, f64x2.mul(a, b1));
    if (rem == 1) break;
    b0 = v128.load(pb, 32);
    b1 = v128.load(pb, 48);
    a = v128.load(pa, 64);
    c00 = f64x2.add(c00, f64x2.mul(a, b0));
    c01 = f64x2.add(c01, f64x2.mul(a, b1));
    a = v128.load(pa, 80);
    c10 = f64x2.add(c10, f64x2.mul(a, b0));
    c11 = f64x2.add(c11, f64x2.mul(a, b1));
    a = v128.load(pa, 96);
    c20 = f64x2.add(c20, f64x2.mul(a, b0));
    c21 = f64x2.add(c21, f64x2.mul(a, b1));
    a = v128.load(pa, 112);
    c30 = f64x2.add(c30, f64x2.mul(a, b0));
    c31 = f64x2.add(c31, f64x2.mul(a, b1));
    if (rem == 2) break;
    b0 = v128.load(pb, 64);
    b1 = v128.load(pb, 80);
    a = v128.load(pa, 128);
    c00 = f64x2.add(c00, f64x2.mul(a, b0));
    c01 = f64x2.add(c01, f64x2.mul(a, b1));
    a = v128.load(pa, 144);
    c10 = f64x2.add(c10, f64x2.mul(a, b0));
    c11 = f64x2.add(c11, f64x2.mul(a, b1));
    a = v128.load(pa, 160);
    c20 = f64x2.add(c20, f64x2.mul(a, b0));
    c21 = f64x2.add(c21, f64x2.mul(a, b1));
    a = v128.load(pa, 176);
    c30 = f64x2.add(c30, f64x2.mul(a, b0));
    c31 = f64x2.add(c31, f64x2.mul(a, b1));
    if (rem == 3) break;
    b0 = v128.load(pb, 96);
    b1 = v128.load(pb, 112);
    a = v128.load(pa, 192);
    c00 = f64x2.add(c00, f64x2.mul(a, b0));
    c01 = f64x2.add(c01, f64x2.mul(a, b1));
    a = v128.load(pa, 208);
    c10 = f64x2.add(c10, f64x2.mul(a, b0));
    c11 = f64x2.add(c11, f64x2.mul(a, b1));
    a = v128.load(pa, 224);
    c20 = f64x2.add(c20, f64x2.mul(a, b0));
    c21 = f64x2.add(c21, f64x2.mul(a, b1));
    a = v128.load(pa, 240);
    c30 = f64x2.add(c30, f64x2.mul(a, b0));
    c31 = f64x2.add(c31, f64x2.mul(a, b1));
    pa += 256;
    pb += 128;
    rem -= 4;
    if (rem == 0) break;
  }
  const r1 = c + ldcBytes;
  const r2 = r1 + ldcBytes;
  const r3 = r2 + ldcBytes;
  if (accum != 0) {
    c00 = f64x2.add(v128.load(c), c00);
    c01 = f64x2.add(v128.load(c, 16), c01);
    c10 = f64x2.add(v128.load(r1), c10);
    c11 = f64x2.add(v128.load(r1, 16), c11);
    c20 = f64x2.add(v128.load(r2), c20);
    c21 = f64x2.add(v128.load(r2, 16), c21);
    c30 = f64x2.add(v128.load(r3), c30);
    c31 = f64x2.add(v128.load(r3, 16), c31);
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

export function dgemm(
  m: i32, n: i32, k: i32,
  a: usize, lda: i32, transA: i32,
  b: usize, ldb: i32, transB: i32,
  c: usize, ldc: i32,
  work: usize,
): void {
  if (m <= 0 || n <= 0) return;
  const ldc8 = <usize>ldc << 3;
  if (k <= 0) {
    for (let i = 0; i < m; i++) {
      const row = c + <usize>i * ldc8;
      let j = 0;
      for (; j + 2 <= n; j += 2) v128.store(row + (<usize>j << 3), f64x2.splat(0));
      for (; j < n; j++) store<f64>(row + (<usize>j << 3), 0);
    }
    return;
  }
  const kcMax = imin(k, DKC);
  const mcMax = roundUp(imin(m, DMC), DMR);
  const ncMax = roundUp(imin(n, DNC), DNR);
  const packA = work;
  const packB = packA + <usize>align64(mcMax * kcMax * 16);
  const tile = packB + <usize>align64(ncMax * kcMax * 8);

  for (let j0 = 0; j0 < n; j0 += DNC) {
    const nc = imin(DNC, n - j0);
    for (let p0 = 0; p0 < k; p0 += DKC) {
      const kc = imin(DKC, k - p0);
      const accum = p0 > 0 ? 1 : 0;
      dpackB(b, ldb, transB, p0, kc, j0, nc, packB);
      for (let i0 = 0; i0 < m; i0 += DMC) {
        const mc = imin(DMC, m - i0);
        dpackA(a, lda, transA, i0, mc, p0, kc, packA);
        const kcBytesA = <usize>kc << 6;
        const kcBytesB = <usize>(kc * DNR) << 3;
        let pb = packB;
        for (let jr = 0; jr < nc; jr += DNR) {
          const nr = imin(DNR, nc - jr);
          let pa = packA;
          const cc = c + (<usize>(j0 + jr) << 3);
          for (let ir = 0; ir < mc; ir += DMR) {
            const mr = imin(DMR, mc - ir);
            const cij = cc + <usize>(i0 + ir) * ldc8;
            if ((mr == DMR) & (nr == DNR)) {
              dkernel(kc, pa, pb, cij, ldc8, accum);
            } else {
              dkernel(kc, pa, pb, tile, <usize>(DNR * 8), 0);
              for (let r = 0; r < mr; r++) {
                const crow = cij + <usize>r * ldc8;
                const trow = tile + (<usize>(r * DNR) << 3);
                if (accum != 0) {
                  for (let q = 0; q < nr; q++) {
                    const o = <usize>q << 3;
                    store<f64>(crow + o, load<f64>(crow + o) + load<f64>(trow + o));
                  }
                } else {
                  for (let q = 0; q < nr; q++) {
                    const o = <usize>q << 3;
                    store<f64>(crow + o, load<f64>(trow + o));
                  }
                }
              }
            }
            pa += kcBytesA;
          }
          pb += kcBytesB;
        }
      }
    }
  }
}
