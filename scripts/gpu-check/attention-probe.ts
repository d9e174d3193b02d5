/**
 * Which attention graphs cuDNN makes a plan for, on a real GPU: the graph backend-cudnn builds
 * and variants of it (each one difference from cudnn-frontend's SDPA graph), over a few
 * problems. For each: the plan's engine or cuDNN's refusal, and where a plan is made, the
 * largest error against a float32 CPU reference. Run with CUDNN_LOGLEVEL_DBG=2 and
 * CUDNN_LOGDEST_DBG=<file> to have cuDNN say why each engine refuses.
 *
 *   deno run -A --no-check --config deno.json scripts/gpu-check/attention-probe.ts [--out DIR] [--base]
 * --base: only the package's own graph on the first problem (for an API-level trace).
 */
import process from "node:process";
import { CUDA_BACKEND } from "@backplane/backend-cuda";
import { CUDNN_BACKEND } from "@backplane/backend-cudnn";
import {
  backends,
  type DType,
  empty,
  explain,
  nn,
  randn,
  ready,
  SDPBackend,
  scaledDotProductAttention,
  type Tensor,
} from "@backplane/core";
import { deviceContext, type SdpaParams } from "@backplane/core/backend";
import type { DataType, GraphBuilder } from "../../packages/backend-cudnn/src/graph/builder.ts";
import type { Descriptor } from "../../packages/backend-cudnn/src/graph/descriptor.ts";
import { buildSdpaGraph } from "../../packages/backend-cudnn/src/graph/sdpa.ts";
import { UID } from "../../packages/backend-cudnn/src/graph/tensors.ts";
import { maybeRuntime } from "../../packages/backend-cudnn/src/state.ts";
import { args, writeJson } from "./io.ts";

const { out } = args();
const base = process.argv.includes("--base");
await ready(CUDA_BACKEND, CUDNN_BACKEND);
if (!backends.cuda.status().available) {
  console.log(`attention-probe: no CUDA device (${backends.cuda.status().reason})`);
  process.exit(0);
}
const rt = maybeRuntime()!;
const ctx = deviceContext("cuda")!;
const handle = rt.handle(ctx, 0);

interface Variant {
  name: string;
  /** Without the softmax statistics output (the graph before it was added). */
  noStats?: boolean;
  /** The probabilities' dtype before the second matmul. */
  probs?: "io" | "float";
  /** compute type of the causal CMP_GE. */
  cmp?: DataType;
  /** compute type of GEN_INDEX. */
  genIndex?: DataType;
  /** -inf or float's lowest for masked scores. */
  lowest?: boolean;
}

const VARIANTS: Variant[] = base
  ? [{ name: "package graph" }]
  : [
      { name: "package graph" },
      { name: "no stats", noStats: true },
      { name: "probs float", probs: "float" },
      {
        name: "frontend causal (cmp BOOLEAN, genIndex FLOAT)",
        cmp: "CUDNN_DATA_BOOLEAN",
        genIndex: "CUDNN_DATA_FLOAT",
      },
      { name: "lowest", lowest: true },
    ];

interface Problem {
  name: string;
  dtype: DType;
  B: number;
  H: number;
  L: number;
  S: number;
  E: number;
  causal?: boolean;
  mask?: "bool" | "additive";
}
const ALL_PROBLEMS: Problem[] = [
  { name: "fp16 1x2x128x128 d64", dtype: "float16", B: 1, H: 2, L: 128, S: 128, E: 64 },
  { name: "fp16 causal", dtype: "float16", B: 1, H: 2, L: 128, S: 128, E: 64, causal: true },
  { name: "bf16 2x4x256x256 d128", dtype: "bfloat16", B: 2, H: 4, L: 256, S: 256, E: 128 },
  { name: "fp16 odd 1x3x100x77 d64", dtype: "float16", B: 1, H: 3, L: 100, S: 77, E: 64 },
  {
    name: "fp16 additive mask",
    dtype: "float16",
    B: 1,
    H: 2,
    L: 64,
    S: 96,
    E: 64,
    mask: "additive",
  },
  { name: "fp16 4x16x1024 d64", dtype: "float16", B: 4, H: 16, L: 1024, S: 1024, E: 64 },
];
const PROBLEMS = ALL_PROBLEMS.slice(0, base ? 1 : undefined);

const _f32 = "CUDNN_DATA_FLOAT" as const;

// The package's graph with one difference at a time.
function variantGraph(b: GraphBuilder, p: SdpaParams, v: Variant): Descriptor {
  return buildSdpaGraph(b, p, {
    statistics: !v.noStats,
    probabilities: v.probs === "float" ? "CUDNN_DATA_FLOAT" : undefined,
    indexCompute: v.genIndex,
    compareCompute: v.cmp,
  });
}

function params(pr: Problem, q: Tensor, k: Tensor, v: Tensor, mask?: Tensor): SdpaParams {
  return {
    query: q,
    key: k,
    value: v,
    attnMask: mask,
    maskKind: pr.mask ?? "none",
    isCausal: pr.causal ?? false,
    scale: 1 / Math.sqrt(pr.E),
    dropoutP: 0,
    dtype: pr.dtype,
    batchShape: [pr.B, pr.H],
    L: pr.L,
    S: pr.S,
    E: pr.E,
    Ev: pr.E,
  } as unknown as SdpaParams;
}

const results: Record<string, unknown>[] = [];
let seed = 1;
for (const pr of PROBLEMS) {
  const shapeQ = [pr.B, pr.H, pr.L, pr.E];
  const shapeK = [pr.B, pr.H, pr.S, pr.E];
  const hq = randn(shapeQ, { seed: seed++, dtype: pr.dtype });
  const hk = randn(shapeK, { seed: seed++, dtype: pr.dtype });
  const hv = randn(shapeK, { seed: seed++, dtype: pr.dtype });
  let hm: Tensor | undefined;
  if (pr.mask === "additive")
    hm = randn([pr.B, pr.H, pr.L, pr.S], { seed: seed++, dtype: pr.dtype });
  if (pr.mask === "bool") {
    const r = randn([pr.B, pr.H, pr.L, pr.S], { seed: seed++, dtype: "float32" });
    const m = empty(r.shape, { dtype: "bool" });
    const src = r.hostData() as Float32Array;
    const dst = m.hostData() as Uint8Array;
    for (let i = 0; i < src.length; i++) dst[i] = i % pr.S === 0 || src[i]! > -0.5 ? 1 : 0;
    hm = m;
  }
  // float32 CPU reference of the same (rounded) inputs.
  const ref = scaledDotProductAttention(
    hq.astype("float32"),
    hk.astype("float32"),
    hv.astype("float32"),
    {
      isCausal: pr.causal ?? false,
      attnMask: hm ? (pr.mask === "bool" ? hm : hm.astype("float32")) : undefined,
    },
  );
  const refData = ref.hostData() as Float32Array;
  const [q, k, v] = [hq, hk, hv].map((t) => t.to("cuda")) as [Tensor, Tensor, Tensor];
  const mask = hm?.to("cuda");
  const p = params(pr, q, k, v, mask);
  for (const variant of VARIANTS) {
    const row: Record<string, unknown> = { problem: pr.name, variant: variant.name };
    const key = `probe|${pr.name}|${variant.name}`;
    const t0 = performance.now();
    try {
      const plan = rt.plan(
        key,
        (b) => variantGraph(b, p, variant),
        pr.dtype,
        { deterministic: false, allowTf32: true, benchmark: false, benchmarkLimit: 0 },
        handle,
      );
      row.engine = plan.engine;
      row.workspace = plan.workspaceBytes;
      row.planMs = performance.now() - t0;
      const o = empty([pr.B, pr.H, pr.L, pr.E], { dtype: pr.dtype, device: "cuda" });
      const stats = variant.noStats
        ? undefined
        : empty([pr.B, pr.H, pr.L, 1], { dtype: "float32", device: "cuda" });
      const scalars = Float32Array.of(
        p.scale,
        variant.lowest ? -3.4028234663852886e38 : Number.NEGATIVE_INFINITY,
      );
      const ptrs = new Map<number, bigint>([
        [UID.Q, ctx.address(q)],
        [UID.K, ctx.address(k)],
        [UID.V, ctx.address(v)],
        [UID.O, ctx.address(o)],
      ]);
      if (mask) ptrs.set(UID.MASK, ctx.address(mask));
      if (stats) ptrs.set(UID.STATS, ctx.address(stats));
      ptrs.set(UID.SCALE, rt.layer.addressOf(scalars.subarray(0, 1)));
      if (pr.mask === "bool" || pr.causal)
        ptrs.set(UID.NEG_INF, rt.layer.addressOf(scalars.subarray(1, 2)));
      rt.execute(ctx, 0, plan, ptrs);
      ctx.synchronize(0);
      const got = o.to("cpu").astype("float32").hostData() as Float32Array;
      let err = 0;
      let scaleRef = 0;
      for (let i = 0; i < got.length; i++) {
        err = Math.max(err, Math.abs(got[i]! - refData[i]!));
        scaleRef = Math.max(scaleRef, Math.abs(refData[i]!));
      }
      row.maxAbsErr = err;
      row.maxRef = scaleRef;
      // Time it: 20 runs.
      ctx.synchronize(0);
      const t1 = performance.now();
      for (let i = 0; i < 20; i++) rt.execute(ctx, 0, plan, ptrs);
      ctx.synchronize(0);
      row.msPerCall = (performance.now() - t1) / 20;
      o.dispose();
      stats?.dispose();
      console.log(
        `${pr.name} | ${variant.name}: engine ${plan.engine}, err ${err.toExponential(2)} (max ${scaleRef.toFixed(2)}), ${(row.msPerCall as number).toFixed(3)} ms`,
      );
    } catch (e) {
      row.error = (e as Error).message;
      console.log(`${pr.name} | ${variant.name}: REFUSED ${(e as Error).message.slice(0, 600)}`);
    }
    results.push(row);
    writeJson(out, base ? "attention-probe-base.json" : "attention-probe.json", { results });
  }
  // The package's kernel through dispatch, as a user calls it.
  try {
    const opts = { isCausal: pr.causal ?? false, attnMask: mask };
    const ex = nn.attention.withSdpaKernel([SDPBackend.CUDNN_ATTENTION], () =>
      explain("scaledDotProductAttention", q, k, v, opts),
    );
    console.log(`${pr.name} | dispatch: ${JSON.stringify(ex).slice(0, 600)}`);
  } catch (e) {
    console.log(`${pr.name} | dispatch cudnn-attention: ${(e as Error).message.slice(0, 300)}`);
  }
}
