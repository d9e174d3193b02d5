/**
 * The GPU smoke run: where a CUDA device and cuDNN exist, every cudnn kernel against the CPU's
 * float64-accumulating result (outputs NaN-poisoned by the testkit's allocation hook), and a
 * table of conv2d and SDPA timings against backend-cuda's kernels. Where they do not, it
 * prints the reason and exits 0. `npm run smoke -w @backplane/backend-cudnn`.
 */
import "@backplane/backend-cuda";
import "../src/index.ts";
import {
  backends,
  conv2d,
  explain,
  randn,
  ready,
  scaledDotProductAttention,
  type Tensor,
} from "@backplane/core";
import { deviceContext, setAllocationHook } from "@backplane/core/backend";

const st = backends.cudnn.status();
if (!st.available) {
  console.log(`cudnn smoke: not run: ${st.reason}`);
  process.exit(0);
}
await ready("cuda");
// The device through core's contract, as the package's kernels reach it.
const ctx = deviceContext("cuda")!;
// Every new storage starts as NaN bytes, so an element a kernel forgets to write shows.
setAllocationHook((s) => s.memory.upload(s.handle, 0, new Uint8Array(s.byteLength).fill(0xff)));

async function maxError(got: Tensor, want: Tensor): Promise<number> {
  const [g, w] = [
    await got.to("cpu").astype("float64").data(),
    await want.astype("float64").data(),
  ];
  let worst = 0;
  for (let i = 0; i < w.length; i++)
    worst = Math.max(
      worst,
      Math.abs(Number(g[i]) - Number(w[i])) || (Number.isNaN(Number(g[i])) ? Infinity : 0),
    );
  return worst;
}

async function time(fn: () => Tensor): Promise<number> {
  fn();
  ctx.synchronize(0);
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) fn();
  ctx.synchronize(0);
  return (performance.now() - t0) / 10;
}

const rows: string[][] = [];
for (const dtype of ["float32", "float16", "bfloat16"] as const) {
  const x = randn([8, 64, 56, 56]);
  const w = randn([64, 64, 3, 3]);
  const want = conv2d(x, w, { padding: 1 });
  const [xd, wd] = [x.astype(dtype).to("cuda"), w.astype(dtype).to("cuda")];
  const kernel = explain("conv2d", xd, wd, { padding: 1 }).selected;
  const err = await maxError(conv2d(xd, wd, { padding: 1 }), want);
  rows.push([
    "conv2d 8x64x56x56 3x3",
    dtype,
    String(kernel),
    err.toExponential(2),
    (await time(() => conv2d(xd, wd, { padding: 1 }))).toFixed(3),
  ]);
}
for (const dtype of ["float16", "bfloat16"] as const) {
  const q = randn([4, 8, 1024, 64]);
  const want = scaledDotProductAttention(q, q, q, { isCausal: true });
  const qd = q.astype(dtype).to("cuda");
  for (const family of ["CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"] as const) {
    using _ = backends.nn.attention.sdpaKernel([family]);
    const err = await maxError(scaledDotProductAttention(qd, qd, qd, { isCausal: true }), want);
    rows.push([
      "sdpa 4x8x1024x64 causal",
      dtype,
      family,
      err.toExponential(2),
      (await time(() => scaledDotProductAttention(qd, qd, qd, { isCausal: true }))).toFixed(3),
    ]);
  }
}
console.log(`cuDNN ${backends.cudnn.versionString()} on ${ctx.properties(0).name}`);
console.log(["op", "dtype", "kernel", "max |err|", "ms"].join(" | "));
for (const r of rows) console.log(r.join(" | "));
