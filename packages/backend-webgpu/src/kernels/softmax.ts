/**
 * softmax and logSoftmax along any dimension (the last is the usual one): one workgroup
 * per row, the max and the sum reduced in workgroup memory, f32 arithmetic for every dtype.
 * Inputs are read through their strides; the output is contiguous.
 */
import {
  type AnyKernelDefinition,
  contiguousStrides,
  type KernelDefinition,
  type SoftmaxParams,
} from "@backplane/core/backend";
import { grid, gridRefusal, groupLimit, launch, Meta, pipelineFor } from "../exec.ts";
import { loopProblem } from "../loop-budget.ts";
import {
  baseChecks,
  binding,
  bytesOf,
  collapse,
  FLOAT_DTYPES,
  MAX_RANK,
  output,
  VERBOSE,
  wgslType,
} from "./common.ts";

const WG = 64;

function code(dtype: string, log: boolean): string {
  const { T, enable } = wgslType(dtype);
  const R = MAX_RANK;
  return `${enable}alias T = ${T};
@group(0) @binding(0) var<storage, read> X: array<T>;
@group(0) @binding(1) var<storage, read_write> Y: array<T>;
// rows, D, outerRank, xOffset, xStrideD, yStrideD, shape[${R}], xStrides[${R}], yStrides[${R}],
// NaN bits (a NaN row's output)
@group(0) @binding(2) var<storage, read> prm: array<u32>;
var<workgroup> red: array<f32, ${WG}>;
var<workgroup> flags: array<u32, ${WG}>;

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let row = wg.x + wg.y * nw.x;
  if (row >= prm[0]) { return; }
  let D = prm[1];
  var xo = prm[3];
  var yo = 0u;
  var rem = row;
  for (var d = i32(prm[2]) - 1; d >= 0; d--) {
    let size = prm[6u + u32(d)];
    let idx = rem % size;
    rem = rem / size;
    xo += idx * prm[${6 + R}u + u32(d)];
    yo += idx * prm[${6 + 2 * R}u + u32(d)];
  }
  let sx = prm[4];
  let sy = prm[5];
  // Values are classified by their bits (a shader's max, exp and log promise nothing for
  // NaN and infinities: SwiftShader's max(2, NaN) is 2 and its exp(NaN) +inf). -inf adds
  // nothing; a NaN or +inf (bit 2), or no finite value at all (bit 1 never set: a row of
  // -inf), makes the row NaN, as the reference's x - max(x) does. The max starts at the
  // lowest float32 exactly (a shader constant cannot be -inf): a row of it finds its max.
  var mx = -3.4028234663852886e38;
  var fl = 0u;
  for (var j = li; j < D; j += ${WG}u) {
    let v = f32(X[xo + j * sx]);
    let bits = bitcast<u32>(v);
    if (bits == 0xff800000u) { continue; }
    if ((bits & 0x7fffffffu) >= 0x7f800000u) { fl |= 2u; } else { fl |= 1u; mx = max(mx, v); }
  }
  red[li] = mx;
  flags[li] = fl;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) {
      red[li] = max(red[li], red[li + s]);
      flags[li] = flags[li] | flags[li + s];
    }
    workgroupBarrier();
  }
  mx = red[0];
  let nan = flags[0] != 1u;
  workgroupBarrier();
  var sum = 0.0;
  for (var j = li; j < D; j += ${WG}u) { sum += exp(f32(X[xo + j * sx]) - mx); }
  red[li] = sum;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (li < s) { red[li] = red[li] + red[li + s]; }
    workgroupBarrier();
  }
  if (nan) {
    let q = T(bitcast<f32>(prm[${6 + 3 * R}]));
    for (var j = li; j < D; j += ${WG}u) { Y[yo + j * sy] = q; }
    return;
  }
  // A finite max makes the sum at least 1: log(sum) is finite.
  sum = red[0];
  ${log ? "let ls = log(sum);" : "let inv = 1.0 / sum;"}
  for (var j = li; j < D; j += ${WG}u) {
    let v = f32(X[xo + j * sx]) - mx;
    Y[yo + j * sy] = T(${log ? "v - ls" : "exp(v) * inv"});
  }
}`;
}

/**
 * The dims other than `dim`, merged where input and output both walk them contiguously:
 * each row's start. Only this merged rank must fit MAX_RANK (a rank-10 tensor of mostly
 * size-1 dims was refused by its nominal rank).
 */
function rowWalk(p: SoftmaxParams): { shape: number[]; strides: number[][] } {
  const { x, dim } = p;
  const yStrides = contiguousStrides(x.shape);
  return collapse(
    x.shape.filter((_, i) => i !== dim),
    [x.strides.filter((_, i) => i !== dim), yStrides.filter((_, i) => i !== dim)],
  );
}

function kernel(op: "softmax" | "logSoftmax"): KernelDefinition<SoftmaxParams> {
  const log = op === "logSoftmax";
  const name = log ? "wgsl-log-softmax" : "wgsl-softmax";
  return {
    op,
    name,
    device: "webgpu",
    dtypes: FLOAT_DTYPES,
    deterministic: true,
    verboseFlags: VERBOSE,
    priority: 100,
    supports(p) {
      const s = baseChecks(p.dtype, [p.x], bytesOf(p.dtype, p.x.numel));
      if (typeof s === "string") return s;
      const rank = rowWalk(p).shape.length;
      if (rank > MAX_RANK)
        return `${rank} dims besides dim (after merging) are more than ${MAX_RANK}`;
      const D = p.x.rank === 0 ? 1 : p.x.shape[p.dim];
      const rows = D === 0 ? 0 : p.x.numel / D;
      // Loops an invocation runs (llvmpipe's budget: loop-budget.ts): the row walk, three
      // strided passes over the row and two tree reductions.
      const loops = MAX_RANK + 3 * Math.ceil(D / WG) + 2 * Math.log2(WG);
      return (
        gridRefusal(rows, s.limits.maxComputeWorkgroupsPerDimension) ??
        loopProblem(s, loops, `a ${op} over ${D} elements`) ??
        true
      );
    },
    run(p) {
      const { x } = p;
      const out = output(x.shape, p.dtype);
      if (out.numel === 0) return out;
      const yStrides = contiguousStrides(x.shape);
      const D = x.rank === 0 ? 1 : x.shape[p.dim];
      const sx = x.rank === 0 ? 0 : x.strides[p.dim];
      const sy = x.rank === 0 ? 0 : yStrides[p.dim];
      const c = rowWalk(p);
      const rows = out.numel / D;
      const meta = new Meta()
        .u32(rows, D, c.shape.length, x.offset, sx, sy)
        .list(c.shape, MAX_RANK, 1)
        .list(c.strides[0], MAX_RANK)
        .list(c.strides[1], MAX_RANK)
        .u32(0x7fc00000)
        .build();
      launch({
        kernel: name,
        op,
        params: p,
        pipeline: pipelineFor(`${name}:${p.dtype}`, 1, 1, () => code(p.dtype, log)),
        reads: [binding(x)],
        writes: [binding(out)],
        meta,
        groups: grid(rows, groupLimit()),
      });
      return out;
    },
  };
}

export const softmaxKernels: AnyKernelDefinition[] = [kernel("softmax"), kernel("logSoftmax")];
