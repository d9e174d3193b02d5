/**
 * Where a cuDNN conv2d call's host time goes, on a real GPU: the whole call through dispatch,
 * the kernel's run() alone, and its parts (output allocation, plan lookup, execution, cuDNN's
 * execute on a kept variant pack). Each figure is µs per call over back-to-back calls closed
 * by one synchronize, for ResNet-50 layers whose device time is below the host's.
 *
 *   deno run -A --no-check --config deno.json scripts/gpu-check/conv-profile.ts [--out DIR]
 */
import process from "node:process";
import { CUDA_BACKEND } from "@backplane/backend-cuda";
import { CUDNN_BACKEND } from "@backplane/backend-cudnn";
import { backends, conv2d, type DType, empty, randn, ready, type Tensor } from "@backplane/core";
import { deviceContext, ops } from "@backplane/core/backend";
import { deviceFor } from "../../packages/backend-cudnn/src/kernels/common.ts";
import { convKernels, convPlan } from "../../packages/backend-cudnn/src/kernels/conv2d.ts";
import { args, writeJson } from "./io.ts";

const { out } = args();
await ready(CUDA_BACKEND, CUDNN_BACKEND);
if (!backends.cuda.status().available) {
  console.log(`conv-profile: no CUDA device (${backends.cuda.status().reason})`);
  process.exit(0);
}

const ctx = deviceContext("cuda")!;
function timeUs(f: () => void, calls = 3000): number {
  for (let i = 0; i < 300; i++) f();
  ctx.synchronize(0);
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) f();
  ctx.synchronize(0);
  return ((performance.now() - t0) * 1000) / calls;
}

const LAYERS = [
  { name: "1x1 1024>256 @14", c: 1024, k: 256, hw: 14, r: 1, pad: 0 },
  { name: "3x3 256>256 @14", c: 256, k: 256, hw: 14, r: 3, pad: 1 },
  { name: "1x1 64>64 @56", c: 64, k: 64, hw: 56, r: 1, pad: 0 },
];
const rows: Record<string, unknown>[] = [];
const kernel = convKernels()[0]!;
for (const dtype of ["float16", "bfloat16"] as DType[]) {
  for (const l of LAYERS) {
    const x = randn([32, l.hw, l.hw, l.c], { dtype }).to("cuda").permute([0, 3, 1, 2]);
    const w = randn([l.k, l.r, l.r, l.c], { dtype }).to("cuda").permute([0, 3, 1, 2]);
    const opts = { padding: l.pad };
    const p = ops.conv2d.prepare(x, w, opts);
    const d = deviceFor(x);
    if (typeof d === "string") throw new Error(d);
    const o = kernel.run(p) as Tensor;
    const { plan, ptrs } = convPlan(d, p, o);
    d.rt.execute(d.ctx, d.index, plan, ptrs);
    const handle = d.rt.handle(d.ctx, d.index);
    const lib = d.rt.lib;
    // cuDNN's execute alone, on the pack the plan keeps after one more run with `ptrs` (read
    // then: every run with other addresses replaces, and destroys, the kept pack).
    const rawExecute = () => {
      d.rt.execute(d.ctx, d.index, plan, ptrs);
      const pack = plan.lastPack!.descriptor.handle;
      return timeUs(() => lib.cudnnBackendExecute(handle, plan.descriptor.handle, pack));
    };
    const row = {
      layer: `${l.name} ${dtype}`,
      dispatch: timeUs(() => conv2d(x, w, opts).dispose()),
      run: timeUs(() => (kernel.run(p) as Tensor).dispose()),
      supports: timeUs(() => kernel.supports!(p), 20000),
      prepare: timeUs(() => ops.conv2d.prepare(x, w, opts), 20000),
      output: timeUs(() => {
        const t = empty([32, p.outH, p.outW, l.k], { dtype, device: "cuda" });
        const v = t.permute([0, 3, 1, 2]);
        t.dispose();
        v.dispose();
      }, 20000),
      plan: timeUs(() => convPlan(d, p, o), 20000),
      execute: timeUs(() => d.rt.execute(d.ctx, d.index, plan, ptrs)),
      cudnnExecute: rawExecute(),
      workspace: plan.workspaceBytes,
      engine: plan.engine,
    };
    rows.push(row);
    console.log(
      Object.entries(row)
        .map(
          ([k, v]) =>
            `${k}=${typeof v === "number" && k !== "workspace" && k !== "engine" ? v.toFixed(2) : v}`,
        )
        .join(" "),
    );
    writeJson(out, "conv-profile.json", { rows });
    for (const t of [x, w, o]) t.dispose();
  }
}
