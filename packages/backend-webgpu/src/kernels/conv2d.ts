/**
 * conv2d as an implicit GEMM, one per group: C[oc, p] = sum_k W[oc, k] * X̂[k, p], with
 * k = (input channel, kernel row, kernel column) and p = (image, output row, output
 * column). Nothing is unfolded in memory: each 16-deep slice of the virtual im2col
 * matrix is gathered straight into workgroup memory (zero outside the padding), with the
 * same 64x64 tiling as matmul. Strided input, weight and bias views are read in place.
 */
import type { Conv2dParams, KernelDefinition } from "@backplane/core/backend";
import { launchGrid, Meta, pipelineFor } from "../exec.ts";
import { loopProblem } from "../loop-budget.ts";
import { baseChecks, binding, bytesOf, FLOAT_DTYPES, output, VERBOSE, wgslType } from "./common.ts";
import { MATMUL_INVOCATIONS, MATMUL_WORKGROUP_BYTES } from "./matmul.ts";

const BM = 64;
const BN = 64;
const BK = 16;

/**
 * Loop iterations one invocation may run (llvmpipe's budget: loop-budget.ts), counting the
 * loops of constant length too, in case a compiler keeps them: per slice of BK, the slice
 * loop, its two loads and its depth; the bias and output loops around them.
 */
const loopIterations = (K: number): number =>
  32 + Math.ceil(K / BK) * (1 + (2 * (BM * BK)) / (TX * TY) + BK);
const TX = 16;
const TY = 16;
/** Where the parameter block has the dispatch's first workgroup id (launchGrid()). */
const GRID_BASE = 30;

// Long: a WGSL shader as a template string.
function code(dtype: string): string {
  const { T, enable } = wgslType(dtype);
  return `${enable}alias T = ${T};
@group(0) @binding(0) var<storage, read> X: array<T>;
@group(0) @binding(1) var<storage, read> Wt: array<T>;
@group(0) @binding(2) var<storage, read> Bias: array<T>;
@group(0) @binding(3) var<storage, read_write> Y: array<T>;
// 0 OCg, 1 K, 2 P, 3 Cg, 4 KH, 5 KW, 6 OH, 7 OW, 8 H, 9 W, 10 sh, 11 sw, 12 pt, 13 pl,
// 14 dh, 15 dw, 16 OC, 17 hasBias, 18 xOff, 19 wOff, 20 bOff, 21 bStride, 22-25 xStrides, 26-29 wStrides,
// ${GRID_BASE}-${GRID_BASE + 2} the dispatch's first workgroup id (x, y, z)
@group(0) @binding(4) var<storage, read> prm: array<u32>;

var<workgroup> As: array<f32, ${BK * BM}>;
var<workgroup> Bs: array<f32, ${BK * BN}>;

@compute @workgroup_size(${TX}, ${TY}, 1)
fn main(@builtin(workgroup_id) wg0: vec3u, @builtin(local_invocation_id) lid: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let wg = wg0 + vec3u(prm[${GRID_BASE}u], prm[${GRID_BASE + 1}u], prm[${GRID_BASE + 2}u]);
  let OCg = prm[0];
  let K = prm[1];
  let P = prm[2];
  let KH = prm[4];
  let KW = prm[5];
  let OH = prm[6];
  let OW = prm[7];
  let H = i32(prm[8]);
  let Wd = i32(prm[9]);
  let g = wg.z;
  let ocBase = g * OCg;
  let icBase = g * prm[3];
  let row0 = wg.y * ${BM}u;
  let col0 = wg.x * ${BN}u;
  // The sums start from the bias, as torch's: a bias of -0 plus products of -0 stays -0.
  var acc: array<f32, 16>;
  for (var r = 0u; r < 4u; r++) {
    let oc = row0 + lid.y + r * ${TY}u;
    var bias = 0.0;
    if (prm[17] != 0u && oc < OCg) { bias = f32(Bias[prm[20] + (ocBase + oc) * prm[21]]); }
    for (var c = 0u; c < 4u; c++) { acc[r * 4u + c] = bias; }
  }
  for (var k0 = 0u; k0 < K; k0 += ${BK}u) {
    for (var t = 0u; t < ${(BM * BK) / (TX * TY)}u; t++) {
      let e = li + t * ${TX * TY}u;
      let kk = e % ${BK}u;
      let i = e / ${BK}u;
      let oc = row0 + i;
      let k = k0 + kk;
      var v = 0.0;
      if (oc < OCg && k < K) {
        let ic = k / (KH * KW);
        let ky = (k / KW) % KH;
        let kx = k % KW;
        v = f32(Wt[prm[19] + (ocBase + oc) * prm[26] + ic * prm[27] + ky * prm[28] + kx * prm[29]]);
      }
      As[kk * ${BM}u + i] = v;
    }
    for (var t = 0u; t < ${(BN * BK) / (TX * TY)}u; t++) {
      let e = li + t * ${TX * TY}u;
      let j = e % ${BN}u;
      let kk = e / ${BN}u;
      let p = col0 + j;
      let k = k0 + kk;
      var v = 0.0;
      if (p < P && k < K) {
        let ic = k / (KH * KW);
        let ky = (k / KW) % KH;
        let kx = k % KW;
        let n = p / (OH * OW);
        let oy = (p / OW) % OH;
        let ox = p % OW;
        let iy = i32(oy * prm[10] + ky * prm[14]) - i32(prm[12]);
        let ix = i32(ox * prm[11] + kx * prm[15]) - i32(prm[13]);
        if (iy >= 0 && iy < H && ix >= 0 && ix < Wd) {
          v = f32(X[prm[18] + n * prm[22] + (icBase + ic) * prm[23] + u32(iy) * prm[24] + u32(ix) * prm[25]]);
        }
      }
      Bs[kk * ${BN}u + j] = v;
    }
    workgroupBarrier();
    // (only the slice's real depth: a padding product of +0 would turn a sum of -0 into +0)
    let depth = min(${BK}u, K - k0);
    for (var kk = 0u; kk < depth; kk++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var r = 0u; r < 4u; r++) { a[r] = As[kk * ${BM}u + lid.y + r * ${TY}u]; }
      for (var c = 0u; c < 4u; c++) { b[c] = Bs[kk * ${BN}u + lid.x + c * ${TX}u]; }
      for (var r = 0u; r < 4u; r++) {
        for (var c = 0u; c < 4u; c++) { acc[r * 4u + c] = fma(a[r], b[c], acc[r * 4u + c]); }
      }
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < 4u; r++) {
    let oc = row0 + lid.y + r * ${TY}u;
    if (oc >= OCg) { continue; }
    let o = ocBase + oc;
    for (var c = 0u; c < 4u; c++) {
      let p = col0 + lid.x + c * ${TX}u;
      if (p < P) {
        let n = p / (OH * OW);
        let q = p % (OH * OW);
        Y[(n * prm[16] + o) * OH * OW + q] = T(acc[r * 4u + c]);
      }
    }
  }
}`;
}

export const conv2dKernel: KernelDefinition<Conv2dParams> = {
  op: "conv2d",
  name: "wgsl-conv2d-igemm",
  device: "webgpu",
  dtypes: FLOAT_DTYPES,
  deterministic: true,
  verboseFlags: VERBOSE,
  priority: 100,
  supports(p) {
    const outN = p.n * p.outChannels * p.outH * p.outW;
    const s = baseChecks(p.dtype, [p.input, p.weight, p.bias], bytesOf(p.dtype, outN));
    if (typeof s === "string") return s;
    const L = s.limits;
    if (L.maxComputeInvocationsPerWorkgroup < MATMUL_INVOCATIONS || L.maxComputeWorkgroupSizeX < TX)
      return `needs ${MATMUL_INVOCATIONS} invocations per workgroup, maxComputeInvocationsPerWorkgroup is ${L.maxComputeInvocationsPerWorkgroup}`;
    if (L.maxComputeWorkgroupStorageSize < MATMUL_WORKGROUP_BYTES)
      return `needs ${MATMUL_WORKGROUP_BYTES} bytes of workgroup memory, maxComputeWorkgroupStorageSize is ${L.maxComputeWorkgroupStorageSize}`;
    // (grids past maxComputeWorkgroupsPerDimension go in several dispatches: launchGrid())
    const K = (p.c / p.groups) * p.kh * p.kw;
    return loopProblem(s, loopIterations(K), `a convolution over ${K} inputs per output`) ?? true;
  },
  run(p) {
    const out = output([p.n, p.outChannels, p.outH, p.outW], p.dtype);
    if (out.numel === 0) return out;
    const { input: x, weight: w, bias } = p;
    const OCg = p.outChannels / p.groups;
    const Cg = p.c / p.groups;
    const K = Cg * p.kh * p.kw;
    const P = p.n * p.outH * p.outW;
    const meta = new Meta()
      .u32(OCg, K, P, Cg, p.kh, p.kw, p.outH, p.outW, p.h, p.w)
      .u32(p.strideH, p.strideW, p.padTop, p.padLeft, p.dilationH, p.dilationW)
      .u32(
        p.outChannels,
        bias ? 1 : 0,
        x.offset,
        w.offset,
        bias?.offset ?? 0,
        bias?.strides[0] ?? 0,
      )
      .list(x.strides, 4)
      .list(w.strides, 4)
      .build();
    launchGrid(
      {
        kernel: "wgsl-conv2d-igemm",
        op: "conv2d",
        params: p,
        pipeline: pipelineFor(`wgsl-conv2d-igemm:${p.dtype}`, 3, 1, () => code(p.dtype)),
        reads: [binding(x), binding(w), binding(bias ?? w)],
        writes: [binding(out)],
        meta,
      },
      [Math.ceil(P / BN), Math.ceil(OCg / BM), p.groups],
    );
    return out;
  },
};
