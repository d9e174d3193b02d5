import { backends, explain, matmul, randn, type Tensor, withKernelPriority } from "@backplane/core";
import { getOp } from "@backplane/core/backend";
import { guarded, h, s, select, table } from "../dom.ts";
import { softwareAdapter } from "./backends.ts";

export interface BenchKernel {
  kernel: string;
  device: string;
  /** Largest size it is timed at (the reference is slow). */
  maxSize: number;
}

export interface BenchPoint {
  kernel: string;
  n: number;
  gflops?: number;
  ms?: number;
  reason?: string;
}

export const SIZES = [64, 128, 192, 256, 384, 512];

export function benchKernels(): BenchKernel[] {
  const ks = getOp("matmul")?.kernels ?? [];
  const out: BenchKernel[] = [];
  const has = (name: string) => ks.find((k) => k.name === name);
  if (has("wasm-gemm")) out.push({ kernel: "wasm-gemm", device: "cpu", maxSize: 512 });
  const gpu = ks.find((k) => k.device === "webgpu");
  if (gpu) out.push({ kernel: gpu.name, device: "webgpu", maxSize: 512 });
  out.push({ kernel: "reference", device: "cpu", maxSize: 128 });
  return out;
}

async function timeOne(k: BenchKernel, n: number, budgetMs: number): Promise<BenchPoint> {
  const a0 = randn([n, n]);
  const b0 = randn([n, n]);
  const owned: Tensor[] = [a0, b0];
  try {
    const a = k.device === "cpu" ? a0 : a0.to(k.device);
    const b = k.device === "cpu" ? b0 : b0.to(k.device);
    owned.push(a, b);
    const why = withKernelPriority("matmul", [k.kernel], () => explain("matmul", a, b));
    if (why.selected !== k.kernel) {
      const c = why.candidates.find((x) => x.kernel === k.kernel);
      return { kernel: k.kernel, n, reason: c?.reason ?? "not a candidate" };
    }
    const once = async () => {
      const c = withKernelPriority("matmul", [k.kernel], () => matmul(a, b));
      if (k.device !== "cpu") await c.data(); // the GPU is asynchronous: wait for the result
      c.dispose();
    };
    await once(); // warm-up (pipelines, pages)
    let reps = 0;
    const t0 = performance.now();
    let t = t0;
    while (reps < 1 || t - t0 < budgetMs) {
      await once();
      reps++;
      t = performance.now();
      if (reps >= 200) break;
    }
    const ms = (t - t0) / reps;
    return { kernel: k.kernel, n, ms, gflops: (2 * n ** 3) / (ms * 1e6) };
  } finally {
    for (const t of owned) if (!t.disposed) t.dispose();
  }
}

export async function runBench(
  kernels: BenchKernel[],
  sizes: number[],
  onProgress: (done: number, total: number, p?: BenchPoint) => void,
  budgetMs = 100,
  signal?: AbortSignal,
): Promise<BenchPoint[]> {
  const jobs = kernels.flatMap((k) =>
    sizes.filter((n) => n <= k.maxSize).map((n) => [k, n] as const),
  );
  const out: BenchPoint[] = [];
  onProgress(0, jobs.length);
  for (const [k, n] of jobs) {
    if (signal?.aborted) break; // Stop: keep what was timed so far
    let p: BenchPoint;
    try {
      p = await timeOne(k, n, budgetMs);
    } catch (e) {
      p = { kernel: k.kernel, n, reason: (e as Error).message };
    }
    out.push(p);
    onProgress(out.length, jobs.length, p);
    await new Promise((r) => setTimeout(r, 0)); // let the progress bar paint
  }
  return out;
}

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c"];

// Long: one SVG plot: axes, series, legend.
export function plot(points: BenchPoint[], sizes: number[]): SVGElement {
  const W = 640;
  const H = 320;
  const m = { l: 56, r: 150, t: 16, b: 40 };
  const ok = points.filter((p) => p.gflops !== undefined);
  // Log scale: the kernels differ by orders of magnitude (reference vs SIMD vs GPU).
  const gs = ok.map((p) => p.gflops!).filter((g) => g > 0);
  const lo = Math.floor(Math.log10(Math.min(1, ...gs)));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(1e-3, ...gs))));
  const x = (n: number) =>
    m.l +
    ((Math.log2(n) - Math.log2(sizes[0])) / (Math.log2(sizes.at(-1)!) - Math.log2(sizes[0]) || 1)) *
      (W - m.l - m.r);
  const y = (g: number) =>
    H - m.b - ((Math.log10(Math.max(g, 10 ** lo)) - lo) / (hi - lo)) * (H - m.t - m.b);
  const kernels = [...new Set(points.map((p) => p.kernel))];
  const svg = s("svg", {
    viewBox: `0 0 ${W} ${H}`,
    width: W,
    height: H,
    id: "bench-plot",
    class: "plot",
  });
  svg.append(
    s("line", { x1: m.l, y1: H - m.b, x2: W - m.r, y2: H - m.b, stroke: "#888" }),
    s("line", { x1: m.l, y1: m.t, x2: m.l, y2: H - m.b, stroke: "#888" }),
    s(
      "text",
      { x: (m.l + W - m.r) / 2, y: H - 6, "text-anchor": "middle", class: "axis" },
      "n (n×n @ n×n, float32)",
    ),
    s(
      "text",
      {
        x: 14,
        y: H / 2,
        transform: `rotate(-90 14 ${H / 2})`,
        "text-anchor": "middle",
        class: "axis",
      },
      "GFLOP/s (log)",
    ),
  );
  for (const n of sizes)
    svg.append(s("text", { x: x(n), y: H - m.b + 16, "text-anchor": "middle", class: "tick" }, n));
  for (let e = lo; e <= hi; e++) {
    const g = 10 ** e;
    svg.append(
      s("line", { x1: m.l, x2: W - m.r, y1: y(g), y2: y(g), stroke: "#eee" }),
      s("text", { x: m.l - 6, y: y(g) + 4, "text-anchor": "end", class: "tick" }, String(g)),
    );
  }
  kernels.forEach((k, i) => {
    const c = COLORS[i % COLORS.length];
    const pts = ok.filter((p) => p.kernel === k);
    if (pts.length)
      svg.append(
        s("polyline", {
          points: pts.map((p) => `${x(p.n)},${y(p.gflops!)}`).join(" "),
          fill: "none",
          stroke: c,
          "stroke-width": 2,
        }),
        ...pts.map((p) =>
          s(
            "circle",
            { cx: x(p.n), cy: y(p.gflops!), r: 3.5, fill: c },
            s("title", {}, `${k} n=${p.n}: ${p.gflops!.toFixed(2)} GFLOP/s`),
          ),
        ),
      );
    svg.append(
      s("rect", { x: W - m.r + 12, y: m.t + i * 20, width: 12, height: 12, fill: c }),
      s(
        "text",
        { x: W - m.r + 30, y: m.t + i * 20 + 11, class: "legend" },
        pts.length ? k : `${k} (refused)`,
      ),
    );
  });
  return svg;
}

/** The plot and table of a run's points (a note where WebGPU is a software adapter). */
function resultView(
  points: Awaited<ReturnType<typeof runBench>>,
  sizes: number[],
  kernels: ReturnType<typeof benchKernels>,
): (HTMLElement | SVGElement | string)[] {
  const gpuKernels = new Set(kernels.filter((k) => k.device === "webgpu").map((k) => k.kernel));
  let soft: string | undefined;
  try {
    soft = softwareAdapter(backends.webgpu.capability());
  } catch {
    soft = undefined;
  }
  return [
    plot(points, sizes),
    soft && points.some((p) => gpuKernels.has(p.kernel) && p.gflops !== undefined)
      ? h("p", { class: "warn", id: "bench-software-adapter" }, soft)
      : "",
    table(
      ["kernel", "n", "ms / call", "GFLOP/s", "note"],
      points.map((p) => [
        h("code", {}, p.kernel),
        String(p.n),
        p.ms?.toFixed(3) ?? "-",
        p.gflops?.toFixed(2) ?? "-",
        p.reason
          ? h("span", { class: "no" }, p.reason)
          : soft && gpuKernels.has(p.kernel)
            ? h("span", { class: "warn" }, "software adapter")
            : "",
      ]),
      { id: "bench-table" },
    ),
  ];
}

export function benchPanel(): HTMLElement {
  const progress = h("progress", { id: "bench-progress", max: 1, value: 0 });
  const label = h("span", { id: "bench-label", class: "muted" });
  const out = h("div", { id: "bench-out" });
  const kernels = benchKernels();
  // The sizes to time (up to this n), and a Stop button: a full run takes a while.
  const upTo = select(
    SIZES.map((n) => [String(n), `n ≤ ${n}`]),
    { id: "bench-max" },
  );
  upTo.value = String(SIZES.at(-1));
  const stop = h("button", { id: "bench-stop", disabled: true }, "Stop");
  let controller: AbortController | undefined;
  stop.addEventListener("click", () => controller?.abort());
  const run = (e: Event) =>
    guarded(out, async () => {
      const btn = e.target as HTMLButtonElement;
      btn.disabled = true;
      stop.disabled = false;
      controller = new AbortController();
      const { signal } = controller;
      delete out.dataset.done;
      const sizes = SIZES.filter((n) => n <= Number(upTo.value));
      try {
        const points = await runBench(
          kernels,
          sizes,
          (done, total, p) => {
            progress.max = total;
            progress.value = done;
            label.textContent = `${done}/${total}${p ? ` — ${p.kernel} n=${p.n}: ${p.gflops !== undefined ? `${p.gflops.toFixed(2)} GFLOP/s` : `refused: ${p.reason}`}` : ""}`;
          },
          100,
          signal,
        );
        if (signal.aborted) label.textContent = `stopped after ${points.length} run(s)`;
        out.replaceChildren(...resultView(points, sizes, kernels));
        out.dataset.done = "1";
      } finally {
        btn.disabled = false;
        stop.disabled = true;
      }
    });
  return h(
    "section",
    {},
    h(
      "p",
      {},
      "matmul kernels timed at each size (forced with kernelPriority): ",
      kernels
        .map((k) => `${k.kernel} (${k.device}${k.maxSize < 512 ? `, n ≤ ${k.maxSize}` : ""})`)
        .join(", "),
      ". WebGPU times include reading the result back.",
    ),
    h(
      "div",
      { class: "controls" },
      h("label", {}, "sizes ", upTo),
      h("button", { id: "bench-run", onclick: run }, "Run benchmark"),
      stop,
      progress,
      label,
    ),
    out,
  );
}
