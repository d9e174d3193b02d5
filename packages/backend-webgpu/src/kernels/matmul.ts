/**
 * Batched matmul: 64x64 output tiles per workgroup of 16x16 invocations, each computing
 * a 4x4 register block (four vec4 accumulators); 16-deep slices of A and B staged in
 * workgroup memory as vec4s. Small products take a kernel without workgroup memory.
 * Operands are read through their strides (transposed views, broadcast batch dims and
 * 1-D promotion cost nothing); accumulation is f32, float16 in and out where shader-f16 is on.
 */
import type { KernelDefinition, MatmulParams } from "@backplane/core/backend";
import { launchGrid, Meta, pipelineFor } from "../exec.ts";
import { loopProblem } from "../loop-budget.ts";
import {
  baseChecks,
  binding,
  broadcastStrides,
  bytesOf,
  collapse,
  FLOAT_DTYPES,
  output,
  product,
  VERBOSE,
  wgslType,
} from "./common.ts";

const BM = 64;
const BN = 64;
const BK = 16;
const TX = 16;
const TY = 16;
const MAX_BATCH_RANK = 6;
/** Where the parameter block has the dispatch's first workgroup id (launchGrid()). */
const GRID_BASE = 10 + 3 * MAX_BATCH_RANK;
// The shader's index arithmetic assumes BM / 4 = BN / 4 = TX = TY and BK * BM / 4 = TX * TY.
/** Workgroup memory: a BK x BM slice of A and a BK x BN slice of B, as f32. */
export const MATMUL_WORKGROUP_BYTES = BK * (BM + BN) * 4;
export const MATMUL_INVOCATIONS = TX * TY;

// Long: a WGSL shader as a template string.
function code(dtype: string): string {
  const { T, enable } = wgslType(dtype);
  const B = MAX_BATCH_RANK;
  return `${enable}alias T = ${T};
@group(0) @binding(0) var<storage, read> A: array<T>;
@group(0) @binding(1) var<storage, read> Bm: array<T>;
@group(0) @binding(2) var<storage, read_write> C: array<T>;
// M, K, N, batchRank, aOffset, bOffset, aRowStride, aColStride, bRowStride, bColStride,
// batchShape[${B}], aBatchStrides[${B}], bBatchStrides[${B}], the dispatch's first workgroup id (x, y, z)
@group(0) @binding(3) var<storage, read> prm: array<u32>;

// A slice: As[kk * ${BM / 4} + r4] holds rows 4*r4..4*r4+3 of column kk; B slice:
// Bs[kk * ${BN / 4} + c4] holds columns 4*c4..4*c4+3 of row kk. Each invocation loads one
// vec4 of each (BK * BM / 4 = 256 = TX * TY) and owns rows 4*ty.. and columns 4*tx..
// of the tile, so the accumulators are four vec4s with static indices.
var<workgroup> As: array<vec4<f32>, ${(BK * BM) / 4}>;
var<workgroup> Bs: array<vec4<f32>, ${(BK * BN) / 4}>;

fn loadA(base: u32, i: u32, k: u32, M: u32, K: u32, rs: u32, cs: u32) -> f32 {
  if (i < M && k < K) { return f32(A[base + i * rs + k * cs]); }
  return 0.0;
}
fn loadB(base: u32, k: u32, j: u32, K: u32, N: u32, rs: u32, cs: u32) -> f32 {
  if (k < K && j < N) { return f32(Bm[base + k * rs + j * cs]); }
  return 0.0;
}

@compute @workgroup_size(${TX}, ${TY}, 1)
fn main(@builtin(workgroup_id) wg0: vec3u, @builtin(local_invocation_id) lid: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let wg = wg0 + vec3u(prm[${GRID_BASE}u], prm[${GRID_BASE + 1}u], prm[${GRID_BASE + 2}u]);
  let M = prm[0];
  let K = prm[1];
  let N = prm[2];
  var aBase = prm[4];
  var bBase = prm[5];
  var rem = wg.z;
  for (var d = i32(prm[3]) - 1; d >= 0; d--) {
    let size = prm[10u + u32(d)];
    let idx = rem % size;
    rem = rem / size;
    aBase += idx * prm[${10 + B}u + u32(d)];
    bBase += idx * prm[${10 + 2 * B}u + u32(d)];
  }
  let ars = prm[6];
  let acs = prm[7];
  let brs = prm[8];
  let bcs = prm[9];
  let row0 = wg.y * ${BM}u;
  let col0 = wg.x * ${BN}u;
  // what this invocation loads: a column kk of 4 rows of A, a row kk of 4 columns of B
  let lk = li / ${BM / 4}u;
  let l4 = li % ${BM / 4}u;
  var acc0 = vec4<f32>();
  var acc1 = vec4<f32>();
  var acc2 = vec4<f32>();
  var acc3 = vec4<f32>();
  for (var k0 = 0u; k0 < K; k0 += ${BK}u) {
    let k = k0 + lk;
    let i = row0 + 4u * l4;
    As[li] = vec4<f32>(
      loadA(aBase, i, k, M, K, ars, acs),
      loadA(aBase, i + 1u, k, M, K, ars, acs),
      loadA(aBase, i + 2u, k, M, K, ars, acs),
      loadA(aBase, i + 3u, k, M, K, ars, acs));
    let j = col0 + 4u * l4;
    Bs[li] = vec4<f32>(
      loadB(bBase, k, j, K, N, brs, bcs),
      loadB(bBase, k, j + 1u, K, N, brs, bcs),
      loadB(bBase, k, j + 2u, K, N, brs, bcs),
      loadB(bBase, k, j + 3u, K, N, brs, bcs));
    workgroupBarrier();
    // Written out (no loop over kk): llvmpipe stops an invocation's loops after 65,535
    // iterations in all (loop-budget.ts), which 17 per slice of 16 reached at K = 61,680.
${Array.from({ length: BK }, (_, kk) => innerStep(kk)).join("\n")}
    workgroupBarrier();
  }
  let cBase = wg.z * M * N;
  let i0 = row0 + 4u * lid.y;
  let j0 = col0 + 4u * lid.x;
  store(cBase, i0, j0, M, N, acc0);
  store(cBase, i0 + 1u, j0, M, N, acc1);
  store(cBase, i0 + 2u, j0, M, N, acc2);
  store(cBase, i0 + 3u, j0, M, N, acc3);
}

fn store(base: u32, i: u32, j: u32, M: u32, N: u32, v: vec4<f32>) {
  if (i >= M) { return; }
  let o = base + i * N + j;
  if (j < N) { C[o] = T(v.x); }
  if (j + 1u < N) { C[o + 1u] = T(v.y); }
  if (j + 2u < N) { C[o + 2u] = T(v.z); }
  if (j + 3u < N) { C[o + 3u] = T(v.w); }
}`;
}

/**
 * Small products (at most SMALL output elements per matrix): one invocation per output
 * element, no workgroup memory or barriers. Tiling only pays when tiles fill up, and
 * barriers are what software rasterisers (SwiftShader) pay most for.
 */
const SMALL = 1024;
/** The most K a small product loops over; longer ones tile (K / 16 iterations). */
const SMALL_MAX_K = 4096;

/** One k of a tile slice: the four rows of A times the row of B, into the four sums. */
const innerStep = (kk: number): string => `    {
      let a = As[${kk * (BM / 4)}u + lid.y];
      let b = Bs[${kk * (BN / 4)}u + lid.x];
      acc0 = fma(vec4<f32>(a.x), b, acc0);
      acc1 = fma(vec4<f32>(a.y), b, acc1);
      acc2 = fma(vec4<f32>(a.z), b, acc2);
      acc3 = fma(vec4<f32>(a.w), b, acc3);
    }`;

/** Whether a product runs the small shader (few outputs, a short K). */
const isSmall = (p: MatmulParams): boolean => p.m * p.n <= SMALL && p.k <= SMALL_MAX_K;

/** Loop iterations one invocation runs: the batch index walk and K's (per slice of BK when tiled). */
const loopIterations = (p: MatmulParams): number =>
  MAX_BATCH_RANK + (isSmall(p) ? p.k : Math.ceil(p.k / BK));

function smallCode(dtype: string): string {
  const { T, enable } = wgslType(dtype);
  const B = MAX_BATCH_RANK;
  return `${enable}alias T = ${T};
@group(0) @binding(0) var<storage, read> A: array<T>;
@group(0) @binding(1) var<storage, read> Bm: array<T>;
@group(0) @binding(2) var<storage, read_write> C: array<T>;
@group(0) @binding(3) var<storage, read> prm: array<u32>;

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wg0: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  // (the first workgroup id of this dispatch: launchGrid())
  let wg = wg0 + vec3u(prm[${GRID_BASE}u], prm[${GRID_BASE + 1}u], prm[${GRID_BASE + 2}u]);
  let M = prm[0];
  let K = prm[1];
  let N = prm[2];
  let i = wg.y * 8u + lid.y;
  let j = wg.x * 8u + lid.x;
  if (i >= M || j >= N) { return; }
  var aBase = prm[4];
  var bBase = prm[5];
  var rem = wg.z;
  for (var d = i32(prm[3]) - 1; d >= 0; d--) {
    let size = prm[10u + u32(d)];
    let idx = rem % size;
    rem = rem / size;
    aBase += idx * prm[${10 + B}u + u32(d)];
    bBase += idx * prm[${10 + 2 * B}u + u32(d)];
  }
  var pa = aBase + i * prm[6];
  var pb = bBase + j * prm[9];
  var acc = 0.0;
  for (var k = 0u; k < K; k++) {
    acc = fma(f32(A[pa]), f32(Bm[pb]), acc);
    pa += prm[7];
    pb += prm[8];
  }
  C[(wg.z * M + i) * N + j] = T(acc);
}`;
}

export const matmulKernel: KernelDefinition<MatmulParams> = {
  op: "matmul",
  name: "wgsl-matmul-tiled",
  device: "webgpu",
  dtypes: FLOAT_DTYPES,
  deterministic: true,
  verboseFlags: VERBOSE,
  priority: 100,
  supports(p) {
    const s = baseChecks(p.dtype, [p.a, p.b], bytesOf(p.dtype, product(p.outShape)));
    if (typeof s === "string") return s;
    const L = s.limits;
    if (L.maxComputeInvocationsPerWorkgroup < MATMUL_INVOCATIONS || L.maxComputeWorkgroupSizeX < TX)
      return `needs ${MATMUL_INVOCATIONS} invocations per workgroup, maxComputeInvocationsPerWorkgroup is ${L.maxComputeInvocationsPerWorkgroup}`;
    if (L.maxComputeWorkgroupStorageSize < MATMUL_WORKGROUP_BYTES)
      return `needs ${MATMUL_WORKGROUP_BYTES} bytes of workgroup memory, maxComputeWorkgroupStorageSize is ${L.maxComputeWorkgroupStorageSize}`;
    // (grids past maxComputeWorkgroupsPerDimension go in several dispatches: launchGrid())
    const rank = collapsedBatch(p).shape.length;
    if (rank > MAX_BATCH_RANK)
      return `${rank} batch dimensions that do not merge; at most ${MAX_BATCH_RANK}`;
    return loopProblem(s, loopIterations(p), `a product over K = ${p.k}`) ?? true;
  },
  run(p) {
    const out = output(p.outShape, p.dtype);
    if (out.numel === 0) return out;
    const c = collapsedBatch(p);
    const r = p.aShape.length;
    const q = p.bShape.length;
    const meta = new Meta()
      .u32(p.m, p.k, p.n, c.shape.length, p.a.offset, p.b.offset)
      .u32(p.aStrides[r - 2], p.aStrides[r - 1], p.bStrides[q - 2], p.bStrides[q - 1])
      .list(c.shape, MAX_BATCH_RANK, 1)
      .list(c.strides[0], MAX_BATCH_RANK)
      .list(c.strides[1], MAX_BATCH_RANK)
      .build();
    const batch = Math.max(1, product(p.batchShape));
    const small = isSmall(p);
    launchGrid(
      {
        kernel: "wgsl-matmul-tiled",
        op: "matmul",
        params: p,
        pipeline: small
          ? pipelineFor(`wgsl-matmul-small:${p.dtype}`, 2, 1, () => smallCode(p.dtype))
          : pipelineFor(`wgsl-matmul-tiled:${p.dtype}`, 2, 1, () => code(p.dtype)),
        reads: [binding(p.a), binding(p.b)],
        writes: [binding(out)],
        meta,
      },
      small
        ? [Math.ceil(p.n / 8), Math.ceil(p.m / 8), batch]
        : [Math.ceil(p.n / BN), Math.ceil(p.m / BM), batch],
    );
    return out;
  },
};

function collapsedBatch(p: MatmulParams): { shape: number[]; strides: number[][] } {
  const batch = p.batchShape;
  return collapse(batch, [
    broadcastStrides(p.aShape.slice(0, -2), p.aStrides.slice(0, -2), batch),
    broadcastStrides(p.bShape.slice(0, -2), p.bStrides.slice(0, -2), batch),
  ]);
}
