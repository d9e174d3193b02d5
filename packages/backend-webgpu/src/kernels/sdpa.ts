/**
 * scaledDotProductAttention, memory-efficient: the L x S score matrix never exists.
 * A workgroup takes 32 query rows of one (batch, head); tiles of keys and values are
 * staged in workgroup memory and each invocation folds them into its row with an
 * online softmax (running max, running sum, rescaled accumulator). Boolean and additive
 * masks (broadcast), causal, custom scale and GQA are handled; dropout is refused.
 * Registered in the EFFICIENT_ATTENTION family, so backends.cuda.memEfficientSdp and
 * nn.attention.sdpaKernel() govern it as they do torch's.
 */
import type { KernelDefinition, SdpaParams } from "@backplane/core/backend";
import { launchGrid, Meta, pipelineFor } from "../exec.ts";
import type { GpuState } from "../gpu.ts";
import { loopProblem } from "../loop-budget.ts";
import {
  baseChecks,
  binding,
  broadcastStrides,
  bytesOf,
  FLOAT_DTYPES,
  output,
  product,
  VERBOSE,
  wgslType,
} from "./common.ts";

const BR = 32;
const MAX_HEAD_DIM = 256;
const MAX_BATCH_RANK = 8;
/** Where the parameter block has the dispatch's first workgroup id (launchGrid()). */
const GRID_BASE = 21 + 5 * MAX_BATCH_RANK;

/** Head dims are padded to one of these in the shader's arrays. */
const padDim = (d: number) => [16, 32, 64, 128, 256].find((x) => x >= d) ?? d;

/** Keys per tile: the most (up to 32) whose K and V rows fit in workgroup memory. */
function tileKeys(s: GpuState, de: number, dv: number): number {
  for (const bc of [32, 16, 8, 4]) {
    if (bc * (de + dv) * 4 <= s.limits.maxComputeWorkgroupStorageSize) return bc;
  }
  return 0;
}

/**
 * The per-key loops of the shader: over the head dims and the tile loads. Where the driver
 * has a loop budget (llvmpipe stops an invocation's loops after 65,535 iterations in all:
 * loop-budget.ts; 600 keys of 64 dims passed it) they are written out, statement by
 * statement, so the only loops per key are the tile's. Elsewhere they stay loops: written
 * out, SwiftShader's compiler took 24 GB and was killed on a 64-dim shader.
 */
interface InnerLoops {
  loadK: string;
  loadV: string;
  dot: string;
  acc: string;
}

const unrolled = (n: number, line: (i: number) => string): string =>
  Array.from({ length: n }, (_, i) => line(i)).join("\n");

function innerLoops(DE: number, DV: number, BC: number, unroll: boolean): InnerLoops {
  if (!unroll)
    return {
      loadK: `    for (var t = li; t < ${BC * DE}u; t += ${BR}u) { loadK(t, s0, S, E, ko); }`,
      loadV: `    for (var t = li; t < ${BC * DV}u; t += ${BR}u) { loadV(t, s0, S, Ev, vo); }`,
      dot: `        for (var e = 0u; e < E; e++) { dot = fma(q[e], Ks[c * ${DE}u + e], dot); }`,
      acc: `        for (var e = 0u; e < Ev; e++) { acc[e] = fma(p, Vs[c * ${DV}u + e], acc[e] * corr); }`,
    };
  // Past E and Ev, q, Ks and Vs hold zeros: the written-out sums need no bounds.
  return {
    loadK: unrolled((BC * DE) / BR, (r) => `    loadK(li + ${r * BR}u, s0, S, E, ko);`),
    loadV: unrolled((BC * DV) / BR, (r) => `    loadV(li + ${r * BR}u, s0, S, Ev, vo);`),
    dot: unrolled(DE, (e) => `        dot = fma(q[${e}], Ks[c * ${DE}u + ${e}u], dot);`),
    acc: unrolled(
      DV,
      (e) => `        acc[${e}] = fma(p, Vs[c * ${DV}u + ${e}u], acc[${e}] * corr);`,
    ),
  };
}

/**
 * Loop iterations one invocation runs where the per-key loops are written out (a driver
 * with a loop budget): the batch index walk, q's load, each tile and each key of it, and
 * the output row.
 */
function loopIterations(p: SdpaParams, BC: number): number {
  return MAX_BATCH_RANK + p.E + Math.ceil(p.S / BC) * (BC + 1) + p.Ev;
}

// Long: a WGSL shader as a template string.
function code(
  dtype: string,
  maskKind: SdpaParams["maskKind"],
  DE: number,
  DV: number,
  BC: number,
  unroll: boolean,
): string {
  const { T, enable } = wgslType(dtype);
  const R = MAX_BATCH_RANK;
  const inner = innerLoops(DE, DV, BC, unroll);
  const maskDecl =
    maskKind === "bool"
      ? "array<u32>" // bytes, four to a word
      : "array<T>";
  const maskRead =
    maskKind === "bool"
      ? `let mp = mo + i * prm[19] + j * prm[20];
          if (((Mk[mp >> 2u] >> ((mp & 3u) * 8u)) & 0xffu) == 0u) { continue; }`
      : maskKind === "additive"
        ? "sc += f32(Mk[mo + i * prm[19] + j * prm[20]]);"
        : "";
  return `${enable}alias T = ${T};
@group(0) @binding(0) var<storage, read> Q: array<T>;
@group(0) @binding(1) var<storage, read> Kt: array<T>;
@group(0) @binding(2) var<storage, read> V: array<T>;
@group(0) @binding(3) var<storage, read> Mk: ${maskDecl};
@group(0) @binding(4) var<storage, read_write> O: array<T>;
// 0 L, 1 S, 2 E, 3 Ev, 4 batchRank, 5 NaN bits (a poisoned row's output), 6 causal, 7 scale (f32 bits), 8 gqaGroup,
// 9 qOff, 10 kOff, 11 vOff, 12 mOff, 13 qs0, 14 qs1, 15 ks0, 16 ks1, 17 vs0, 18 vs1, 19 ms0, 20 ms1,
// 21 batchShape[${R}], 29 qBatch[${R}], 37 kBatch[${R}], 45 vBatch[${R}], 53 mBatch[${R}],
// ${GRID_BASE} the dispatch's first workgroup id (x, y, z)
@group(0) @binding(5) var<storage, read> prm: array<u32>;

var<workgroup> Ks: array<f32, ${BC * DE}>;
var<workgroup> Vs: array<f32, ${BC * DV}>;

// A key's and a value's element t of the tile from key s0 on (0 past S or the head dim).
fn loadK(t: u32, s0: u32, S: u32, E: u32, ko: u32) {
  let c = t / ${DE}u;
  let e = t % ${DE}u;
  var v = 0.0;
  if (s0 + c < S && e < E) { v = f32(Kt[ko + (s0 + c) * prm[15] + e * prm[16]]); }
  Ks[t] = v;
}

fn loadV(t: u32, s0: u32, S: u32, Ev: u32, vo: u32) {
  let c = t / ${DV}u;
  let e = t % ${DV}u;
  var v = 0.0;
  if (s0 + c < S && e < Ev) { v = f32(V[vo + (s0 + c) * prm[17] + e * prm[18]]); }
  Vs[t] = v;
}

@compute @workgroup_size(${BR})
fn main(@builtin(workgroup_id) wg0: vec3u, @builtin(local_invocation_index) li: u32) {
  let wg = wg0 + vec3u(prm[${GRID_BASE}u], prm[${GRID_BASE + 1}u], prm[${GRID_BASE + 2}u]);
  let L = prm[0];
  let S = prm[1];
  let E = prm[2];
  let Ev = prm[3];
  let rank = prm[4];
  let causal = prm[6] != 0u;
  let scale = bitcast<f32>(prm[7]);
  let group = prm[8];
  let b = wg.y;
  var qo = prm[9];
  var ko = prm[10];
  var vo = prm[11];
  var mo = prm[12];
  var rem = b;
  for (var d = i32(rank) - 1; d >= 0; d--) {
    let ud = u32(d);
    let size = prm[21u + ud];
    let idx = rem % size;
    rem = rem / size;
    var kvIdx = idx;
    if (ud == rank - 1u && group > 1u) { kvIdx = idx / group; }
    qo += idx * prm[29u + ud];
    ko += kvIdx * prm[37u + ud];
    vo += kvIdx * prm[45u + ud];
    mo += idx * prm[53u + ud];
  }
  let i = wg.x * ${BR}u + li;
  let valid = i < L;
  var q: array<f32, ${DE}>;
  var acc: array<f32, ${DV}>;
  if (valid) {
    for (var e = 0u; e < E; e++) { q[e] = f32(Q[qo + i * prm[13] + e * prm[14]]); }
  }
  // m is the running max of the scores seen (none yet: l == 0). Scores are classified by
  // their bits, which no floating-point shortcut of a shader compiler can fold away: -inf
  // (masked) is skipped, NaN or +inf makes the row NaN (exp(inf - inf), as the reference),
  // and every finite score counts, down to the lowest float.
  var m = 0.0;
  var l = 0.0;
  var seen = false;
  var poisoned = false;
  for (var s0 = 0u; s0 < S; s0 += ${BC}u) {
${inner.loadK}
${inner.loadV}
    workgroupBarrier();
    if (valid) {
      let count = min(${BC}u, S - s0);
      for (var c = 0u; c < count; c++) {
        let j = s0 + c;
        if (causal && j > i) { break; }
        var dot = 0.0;
${inner.dot}
        // An empty dot product (E = 0) is 0 whatever the scale (1 / sqrt(0) = inf), as in
        // torch, which scales q and k: the row averages v rather than turning NaN.
        var sc = 0.0;
        if (E > 0u) { sc = dot * scale; }
        ${maskRead}
        let bits = bitcast<u32>(sc);
        if (bits == 0xff800000u) { continue; }
        if ((bits & 0x7fffffffu) >= 0x7f800000u) { poisoned = true; continue; }
        if (!seen) { m = sc; seen = true; }
        let mn = max(m, sc);
        let corr = exp(m - mn);
        let p = exp(sc - mn);
        l = l * corr + p;
${inner.acc}
        m = mn;
      }
    }
    workgroupBarrier();
  }
  if (valid) {
    let base = (b * L + i) * Ev;
    if (poisoned) {
      for (var e = 0u; e < Ev; e++) { O[base + e] = T(bitcast<f32>(prm[5])); }
    } else if (l > 0.0) {
      let inv = 1.0 / l;
      for (var e = 0u; e < Ev; e++) { O[base + e] = T(acc[e] * inv); }
    } else {
      // Every key masked: 0, as PyTorch 2.13 gives on every backend (not 0 / 0).
      for (var e = 0u; e < Ev; e++) { O[base + e] = T(0.0); }
    }
  }
}`;
}

export const sdpaKernel: KernelDefinition<SdpaParams> = {
  op: "scaledDotProductAttention",
  name: "wgsl-sdpa-tiled",
  family: "EFFICIENT_ATTENTION",
  flags: ["cuda.memEfficientSdp"],
  device: "webgpu",
  dtypes: FLOAT_DTYPES,
  deterministic: true,
  verboseFlags: VERBOSE,
  priority: 100,
  supports(p) {
    const outN = product(p.batchShape) * p.L * p.Ev;
    const s = baseChecks(p.dtype, [p.query, p.key, p.value, p.attnMask], bytesOf(p.dtype, outN));
    if (typeof s === "string") return s;
    if (p.dropoutP > 0)
      return `dropoutP = ${p.dropoutP}: dropout is not implemented on webgpu (use dropoutP 0, or the math kernel on cpu)`;
    if (p.E > MAX_HEAD_DIM || p.Ev > MAX_HEAD_DIM)
      return `head dims ${p.E}/${p.Ev}: at most ${MAX_HEAD_DIM}`;
    if (p.batchShape.length > MAX_BATCH_RANK)
      return `${p.batchShape.length} batch dims: at most ${MAX_BATCH_RANK}`;
    const L = s.limits;
    if (L.maxStorageBuffersPerShaderStage < 6)
      return `needs 6 storage buffers per shader stage, maxStorageBuffersPerShaderStage is ${L.maxStorageBuffersPerShaderStage}`;
    if (L.maxComputeInvocationsPerWorkgroup < BR)
      return `needs ${BR} invocations per workgroup, maxComputeInvocationsPerWorkgroup is ${L.maxComputeInvocationsPerWorkgroup}`;
    const de = padDim(p.E);
    const dv = padDim(p.Ev);
    const bc = tileKeys(s, de, dv);
    if (bc === 0)
      return `a tile of 4 keys (${4 * (de + dv) * 4} bytes) does not fit maxComputeWorkgroupStorageSize (${L.maxComputeWorkgroupStorageSize})`;
    const loops = loopProblem(s, loopIterations(p, bc), `attention over ${p.S} keys`);
    if (loops) return loops;
    // (grids past maxComputeWorkgroupsPerDimension go in several dispatches: launchGrid())
    return true;
  },
  run(p) {
    const out = output([...p.batchShape, p.L, p.Ev], p.dtype);
    if (out.numel === 0) return out;
    const { query: q, key: k, value: v, attnMask: mask } = p;
    const s = baseChecks(p.dtype, [], 0) as GpuState;
    const DE = padDim(p.E);
    const DV = padDim(p.Ev);
    const BC = tileKeys(s, DE, DV);
    const batch = p.batchShape;
    const lead = (t: { shape: readonly number[]; strides: readonly number[] }) =>
      broadcastStrides(t.shape.slice(0, -2), t.strides.slice(0, -2), batch);
    const group = p.enableGqa && p.headsQ !== p.headsKV ? p.headsQ / p.headsKV : 1;
    let ms = [0, 0];
    let mB: number[] = [];
    if (mask) {
      const st = broadcastStrides(mask.shape, mask.strides, [...batch, p.L, p.S]);
      ms = st.slice(-2);
      mB = st.slice(0, -2);
    }
    const meta = new Meta()
      .u32(p.L, p.S, p.E, p.Ev, batch.length, 0x7fc00000, p.isCausal ? 1 : 0)
      .f32(p.scale)
      .u32(group, q.offset, k.offset, v.offset, mask?.offset ?? 0)
      .u32(
        q.strides[q.rank - 2],
        q.strides[q.rank - 1],
        k.strides[k.rank - 2],
        k.strides[k.rank - 1],
      )
      .u32(v.strides[v.rank - 2], v.strides[v.rank - 1], ms[0], ms[1])
      .list(batch, MAX_BATCH_RANK, 1)
      .list(lead(q), MAX_BATCH_RANK)
      .list(lead(k), MAX_BATCH_RANK)
      .list(lead(v), MAX_BATCH_RANK)
      .list(mB, MAX_BATCH_RANK)
      .build();
    const unroll = Number.isFinite(s.loopBudget);
    const key = `wgsl-sdpa-tiled:${p.dtype}:${p.maskKind}:${DE}:${DV}:${BC}:${unroll}`;
    launchGrid(
      {
        kernel: "wgsl-sdpa-tiled",
        op: "scaledDotProductAttention",
        params: p,
        pipeline: pipelineFor(key, 4, 1, () => code(p.dtype, p.maskKind, DE, DV, BC, unroll)),
        reads: [binding(q), binding(k), binding(v), binding(mask ?? q)],
        writes: [binding(out)],
        meta,
      },
      [Math.ceil(p.L / BR), product(batch), 1],
    );
    return out;
  },
};
