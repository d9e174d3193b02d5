/**
 * What the conformance suite does not show, checked on the real device: copies both ways,
 * the copy kernel on a transposed view, the caching allocator's reuse and release, cuFFT's
 * plan cache, cuDNN's benchmark / deterministic / allowTf32 flags on real engines, and
 * explain()'s refusals. Each check is a row: ok, and what was measured.
 */
import { cudaApi } from "@backplane/backend-cuda";
import { cudnnApi } from "@backplane/backend-cudnn";
import {
  conv2d,
  explain,
  getFlag,
  matmul,
  nn,
  randn,
  rfft,
  SDPBackend,
  scaledDotProductAttention,
  setFlag,
  Tensor,
} from "@backplane/core";

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

async function host(t: Tensor): Promise<Float64Array> {
  const h = await t.toAsync("cpu");
  const out = h.toFloat64();
  h.dispose();
  return out;
}

/** Worst |a - b| over max |b|. */
function relErr(a: Float64Array, b: Float64Array): number {
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    worst = Number.isNaN(d) ? Infinity : Math.max(worst, d);
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return worst / (scale || 1);
}

async function copies(): Promise<Check> {
  const parts: string[] = [];
  let ok = true;
  for (const [shape, dtype] of [
    [[0], "float32"],
    [[1], "float64"],
    [[3], "float16"],
    [[7, 13], "bfloat16"],
    [[1 << 24], "float32"],
  ] as const) {
    const a = randn([...shape], { seed: 7, dtype });
    const t0 = performance.now();
    const d = a.to("cuda");
    const back = await host(d);
    const ms = performance.now() - t0;
    const want = a.toFloat64();
    const same = back.every((x, i) => Object.is(x, want[i]));
    ok &&= same && back.length === a.numel;
    const mb = (a.numel * (dtype === "float64" ? 8 : dtype === "float32" ? 4 : 2)) / 1e6;
    parts.push(
      `${dtype}[${shape}] ${same ? "exact" : "DIFFERS"}${mb > 1 ? ` (${((2 * mb) / ms).toFixed(0)} MB/s both ways)` : ""}`,
    );
    d.dispose();
  }
  return { name: "host <-> device copies round-trip bit for bit", ok, detail: parts.join("; ") };
}

async function stridedViews(): Promise<Check> {
  // A transposed operand (read with CUBLAS_OP_T) and a column-gapped one (gathered by the copy kernel).
  const a = randn([53, 37], { seed: 3 });
  const b = randn([53, 2 * 41], { seed: 6 });
  const [ad, bd] = [a.to("cuda"), b.to("cuda")];
  const gapped = (t: typeof b) => new Tensor(t.storage, t.dtype, [53, 41], [82, 2], t.offset);
  const got = await host(matmul(ad.permute([1, 0]), gapped(bd)));
  const want = matmul(a.astype("float64").permute([1, 0]), gapped(b).astype("float64")).toFloat64();
  const err = relErr(got, want);
  ad.dispose();
  bd.dispose();
  return {
    name: "views on cuda: transposed and column-gapped operands of matmul",
    ok: err < 1e-5,
    detail: `max rel err ${err.toExponential(2)}`,
  };
}

async function contiguousViews(): Promise<Check> {
  // contiguous() of strided cuda views (the memory's gather: copy2d), every element size.
  const parts: string[] = [];
  let ok = true;
  for (const dtype of ["float64", "float32", "float16", "bool"] as const) {
    const cpu = randn([6, 7, 9], { seed: 11 }).astype(dtype);
    const gpu = cpu.to("cuda");
    for (const [what, make] of [
      ["transpose", (t: Tensor) => t.transpose(0, 2)],
      ["permute", (t: Tensor) => t.permute([1, 0, 2])],
    ] as const) {
      const c = make(gpu).contiguous();
      const same = JSON.stringify(await c.array()) === JSON.stringify(await make(cpu).array());
      c.dispose();
      ok &&= same;
      parts.push(`${dtype} ${what} ${same ? "exact" : "DIFFERS"}`);
    }
    gpu.dispose();
  }
  return { name: "contiguous() of strided cuda views (gather)", ok, detail: parts.join("; ") };
}

async function ordering(): Promise<Check> {
  // No explicit synchronize: upload, GEMM and download must be ordered on the device's stream.
  const a = randn([257, 129], { seed: 4 });
  const b = randn([129, 65], { seed: 5 });
  const got = await host(matmul(a.to("cuda"), b.to("cuda")));
  const want = matmul(a.astype("float64"), b.astype("float64")).toFloat64();
  const err = relErr(got, want);
  return {
    name: "stream order: upload, matmul, download with no synchronize",
    ok: err < 1e-5,
    detail: `max rel err ${err.toExponential(2)}`,
  };
}

async function allocator(): Promise<Check> {
  await cudaApi.synchronize();
  cudaApi.emptyCache();
  const s0 = cudaApi.memoryStats();
  const make = () => Array.from({ length: 32 }, () => randn([1 << 18], { seed: 1 }).to("cuda"));
  for (const t of make()) t.dispose();
  const s1 = cudaApi.memoryStats();
  for (const t of make()) t.dispose();
  const s2 = cudaApi.memoryStats();
  const free0 = cudaApi.memGetInfo().free;
  cudaApi.emptyCache();
  const s3 = cudaApi.memoryStats();
  const free1 = cudaApi.memGetInfo().free;
  const reused =
    s2.cacheHits - s1.cacheHits >= 32 && s2.reservedBytes.current === s1.reservedBytes.current;
  const released = s3.reservedBytes.current < s2.reservedBytes.current && free1 > free0;
  return {
    name: "caching allocator: reuse after dispose, emptyCache gives memory back",
    ok: reused && released && s2.allocatedBytes.current === s0.allocatedBytes.current,
    detail: `cache hits +${s2.cacheHits - s1.cacheHits} on the second round, reserved ${s1.reservedBytes.current} -> ${s2.reservedBytes.current} -> ${s3.reservedBytes.current} after emptyCache; driver free +${Number(free1) - Number(free0)} B`,
  };
}

async function fftPlans(): Promise<Check> {
  const cache = cudaApi.cufftPlanCache;
  cache.clear();
  const x = randn([4, 1000], { seed: 2 }).to("cuda");
  rfft(x).dispose();
  const one = cache.size;
  rfft(x).dispose();
  const again = cache.size;
  cache.maxSize = 0;
  rfft(x).dispose();
  const off = cache.size;
  cache.maxSize = 4096;
  const want = rfft(x.to("cpu").astype("float64"));
  const err = relErr(await host(rfft(x)), want.toFloat64());
  x.dispose();
  return {
    name: "cuFFT plan cache: one plan per problem, maxSize 0 disables it; rfft matches",
    ok: one === 1 && again === 1 && off === 0 && err < 1e-5,
    detail: `size ${one}, ${again} after a second call, ${off} with maxSize 0; rfft max rel err ${err.toExponential(2)}`,
  };
}

async function cudnnFlags(): Promise<Check[]> {
  const x = randn([4, 64, 28, 28], { seed: 1 });
  const w = randn([64, 64, 3, 3], { seed: 2 });
  const want = conv2d(x.astype("float64"), w.astype("float64"), { padding: 1 }).toFloat64();
  const [xd, wd] = [x.to("cuda"), w.to("cuda")];
  const saved = ["benchmark", "deterministic", "allowTf32"].map(
    (k) => [k, getFlag(`cudnn.${k}`)] as const,
  );
  const runWith = async (flags: Record<string, boolean>) => {
    for (const [k, v] of Object.entries(flags)) setFlag(`cudnn.${k}`, v);
    cudnnApi.clearPlanCache();
    const err = relErr(await host(conv2d(xd, wd, { padding: 1 })), want);
    const plan = cudnnApi.plans().at(-1);
    for (const [k, v] of saved) setFlag(`cudnn.${k}`, v);
    return { err, plan };
  };
  try {
    const heur = await runWith({ benchmark: false, allowTf32: false });
    const bench = await runWith({ benchmark: true, allowTf32: false });
    const det = await runWith({ deterministic: true, allowTf32: false });
    const tf32 = await runWith({ allowTf32: true });
    const describe = (r: typeof heur) =>
      `engine ${r.plan?.engine} by ${r.plan?.chosenBy}, ${r.plan?.excluded.length} excluded, ${r.plan?.timings.length} timed, rel err ${r.err.toExponential(2)}`;
    return [
      {
        name: "cudnn.benchmark: off takes the heuristics' engine, on times candidates",
        ok:
          heur.plan?.chosenBy === "heuristics" &&
          bench.plan?.chosenBy === "benchmark" &&
          (bench.plan?.timings.length ?? 0) > 0,
        detail: `off: ${describe(heur)}; on: ${describe(bench)} (${bench.plan?.timings.map((t) => `${t.engine}:${t.ms.toFixed(3)}ms`).join(" ")})`,
      },
      {
        name: "cudnn.deterministic screens engines; allowTf32=false keeps float32 accuracy",
        ok: heur.err < 1e-5 && det.err < 1e-5 && det.plan !== undefined,
        detail: `deterministic: ${describe(det)}; excluded: ${det.plan?.excluded.map((e) => `${e.index} (${e.reason})`).join(", ") || "none"}`,
      },
      {
        name: "cudnn.allowTf32=true: float32 conv may run on TF32 (error at TF32's level, not worse)",
        ok: tf32.err < 5e-3,
        detail: `allowTf32 on: ${describe(tf32)}; off: rel err ${heur.err.toExponential(2)}`,
      },
    ];
  } finally {
    for (const [k, v] of saved) setFlag(`cudnn.${k}`, v);
    for (const t of [xd, wd]) t.dispose();
  }
}

function refusals(): Check {
  const q32 = randn([1, 2, 64, 64], { seed: 1 }).to("cuda");
  const q16 = randn([1, 2, 64, 512], { seed: 1, dtype: "float16" }).to("cuda");
  const a = explain("scaledDotProductAttention", q32, q32, q32);
  const b = explain("scaledDotProductAttention", q16, q16, q16);
  const reasons = (e: typeof a) =>
    e.candidates.filter((c) => !c.accepted).map((c) => `${c.kernel}: ${c.reason}`);
  const ra = reasons(a);
  const rb = reasons(b);
  const flashRefused =
    ra.some((r) => r.startsWith("cuda-flash")) && rb.some((r) => r.startsWith("cuda-flash"));
  q32.dispose();
  q16.dispose();
  return {
    name: "explain(): real refusals (flash on float32, head dim 512)",
    ok: flashRefused && a.selected !== undefined,
    detail: `float32 -> ${a.selected} [${ra.join(" | ")}]; d=512 float16 -> ${b.selected} [${rb.join(" | ")}]`,
  };
}

async function sdpaOnce(): Promise<Check> {
  // Causal attention with a sequence that is no multiple of any tile, against float64.
  const [q, k, v] = [1, 2, 3].map((s) => randn([2, 3, 77, 64], { seed: s }));
  const want = scaledDotProductAttention(
    q!.astype("float64"),
    k!.astype("float64"),
    v!.astype("float64"),
    { isCausal: true },
  ).toFloat64();
  const qd = [q, k, v].map((t) => t!.astype("float16").to("cuda"));
  const e = explain("scaledDotProductAttention", qd[0], qd[1], qd[2], { isCausal: true });
  const err = relErr(
    await host(scaledDotProductAttention(qd[0]!, qd[1]!, qd[2]!, { isCausal: true })),
    want,
  );
  for (const t of qd) t.dispose();
  return {
    name: "sdpa float16 causal [2,3,77,64] through dispatch",
    ok: err < 4e-3,
    detail: `${e.selected}: rel err ${err.toExponential(2)}`,
  };
}

/**
 * FLASH_ATTENTION's tensor-core kernel on what conformance does not build: long sequences,
 * torch's [B, L, H, D] layout seen through a transpose, bfloat16 at d=128, and dropout (the
 * same hash as the MATH kernel, so both drop the same probabilities).
 */
async function flashTensorCores(): Promise<Check[]> {
  const out: Check[] = [];
  const forced = <R>(fam: SDPBackend, f: () => R) => nn.attention.withSdpaKernel([fam], f);
  const cases = [
    { shape: [1, 1000, 4, 128], dtype: "float16", causal: false },
    { shape: [2, 333, 3, 64], dtype: "bfloat16", causal: true },
    { shape: [1, 257, 2, 96], dtype: "float16", causal: true },
    { shape: [3, 65, 2, 32], dtype: "bfloat16", causal: false },
  ] as const;
  for (const c of cases) {
    // torch's [B, L, H, D] in memory, seen as [B, H, L, D] through a transpose.
    const blhd = [4, 5, 6].map((s) => randn([...c.shape], { seed: s }));
    const [q, k, v] = blhd.map((t) => t.transpose(1, 2));
    const want = scaledDotProductAttention(
      q!.astype("float64"),
      k!.astype("float64"),
      v!.astype("float64"),
      { isCausal: c.causal },
    ).toFloat64();
    const dev = blhd.map((t) => t.astype(c.dtype).to("cuda"));
    const view = dev.map((t) => t.transpose(1, 2)) as [Tensor, Tensor, Tensor];
    const err = relErr(
      await host(
        forced(SDPBackend.FLASH_ATTENTION, () =>
          scaledDotProductAttention(view[0], view[1], view[2], { isCausal: c.causal }),
        ),
      ),
      want,
    );
    for (const t of dev) t.dispose();
    const tol = c.dtype === "bfloat16" ? 2e-2 : 4e-3;
    out.push({
      name: `flash ${c.dtype} ${c.causal ? "causal " : ""}[B,L,H,D]=[${c.shape}] (transposed view)`,
      ok: err < tol,
      detail: `rel err ${err.toExponential(2)} (tolerance ${tol})`,
    });
  }
  const [q, k, v] = [7, 8, 9].map((s) =>
    randn([2, 3, 150, 64], { seed: s, dtype: "float16" }).to("cuda"),
  );
  const opts = { dropoutP: 0.2, seed: 31 };
  const flash = await host(
    forced(SDPBackend.FLASH_ATTENTION, () => scaledDotProductAttention(q!, k!, v!, opts)),
  );
  const math = await host(
    forced(SDPBackend.MATH, () => scaledDotProductAttention(q!, k!, v!, opts)),
  );
  for (const t of [q, k, v]) t!.dispose();
  const err = relErr(flash, math);
  out.push({
    name: "flash dropout 0.2 = math dropout 0.2 (same seed), float16 [2,3,150,64]",
    ok: err < 4e-3,
    detail: `rel diff ${err.toExponential(2)}`,
  });
  return out;
}

export async function deviceChecks(): Promise<Check[]> {
  const out: Check[] = [];
  for (const [name, c] of [
    ["copies", copies],
    ["strided views", stridedViews],
    ["contiguous views", contiguousViews],
    ["ordering", ordering],
    ["allocator", allocator],
    ["cufft plans", fftPlans],
    ["cudnn flags", cudnnFlags],
    ["refusals", refusals],
    ["sdpa", sdpaOnce],
    ["flash tensor cores", flashTensorCores],
  ] as const) {
    try {
      const r = await c();
      out.push(...(Array.isArray(r) ? r : [r]));
    } catch (e) {
      out.push({
        name,
        ok: false,
        detail: `threw ${(e as Error).stack?.split("\n").slice(0, 4).join(" | ")}`,
      });
    }
  }
  return out;
}
