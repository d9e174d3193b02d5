/**
 * The Mac smoke run: on a Mac where MPS is available, every mps kernel through the
 * testkit's conformance suite (float64 reference, NaN-poisoned outputs), then a table of
 * timings on mps against the CPU backends (cpu-mkl, nnpack, openmp) and, where `python3 -c "import torch"` works
 * with MPS, PyTorch's own MPS ops on the same shapes. Elsewhere it prints the reason and
 * exits 0. `npm run smoke -w @backplane/backend-mps` (set BACKPLANE_MPS_HELPER to try the
 * CPU stand-in, which makes the table meaningless but checks the script).
 */
import "../src/index.ts";
// The CPU backends the table compares with (dev dependencies: no backend imports another).
import "@backplane/backend-cpu-mkl";
import "@backplane/backend-nnpack";
import "@backplane/backend-openmp";
import { spawnSync } from "node:child_process";
import {
  backends,
  conv2d,
  matmul,
  randn,
  ready,
  scaledDotProductAttention,
  softmax,
  type Tensor,
} from "@backplane/core";
import { runConformance } from "@backplane/testkit";
import { MPS_BACKEND, mpsApi, mpsKernels } from "../src/index.ts";

const st = backends.mps.status();
if (!st.available) {
  console.log(`mps smoke: not run: ${st.reason}`);
  process.exit(0);
}
await ready();
const info = mpsApi.diagnostics();
console.log(
  `mps smoke on ${info.device?.name} (${info.implementation}), macOS ${info.macos ?? "-"}`,
);

// Metal accumulates in float (float16 in places): looser than the stand-in's tolerances.
const report = await runConformance(MPS_BACKEND, {
  kernels: mpsKernels.map((k) => k.name),
  tolerances: { float32: 1e-4, float16: 1e-2, bfloat16: 5e-2 },
});
console.log(String(report));

interface Case {
  name: string;
  make: () => Tensor[];
  run: (t: Tensor[]) => Tensor;
  torch: string;
}
const CASES: Case[] = [
  {
    name: "matmul 1024x1024",
    make: () => [randn([1024, 1024]), randn([1024, 1024])],
    run: ([a, b]) => matmul(a!, b!),
    torch: "a=torch.randn(1024,1024,device=d); b=torch.randn(1024,1024,device=d); f=lambda: a@b",
  },
  {
    name: "conv2d 8x64x56x56 3x3",
    make: () => [randn([8, 64, 56, 56]), randn([64, 64, 3, 3])],
    run: ([x, w]) => conv2d(x!, w!, { padding: 1 }),
    torch:
      "x=torch.randn(8,64,56,56,device=d); w=torch.randn(64,64,3,3,device=d); f=lambda: torch.nn.functional.conv2d(x,w,padding=1)",
  },
  {
    name: "softmax 4096x1024",
    make: () => [randn([4096, 1024])],
    run: ([x]) => softmax(x!, -1),
    torch: "x=torch.randn(4096,1024,device=d); f=lambda: torch.softmax(x,-1)",
  },
  {
    name: "sdpa 4x8x1024x64 causal",
    make: () => [randn([4, 8, 1024, 64])],
    run: ([q]) => scaledDotProductAttention(q!, q!, q!, { isCausal: true }),
    torch:
      "q=torch.randn(4,8,1024,64,device=d); f=lambda: torch.nn.functional.scaled_dot_product_attention(q,q,q,is_causal=True)",
  },
];

function time(fn: () => Tensor, sync: () => void): number {
  fn().dispose();
  sync();
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) fn().dispose();
  sync();
  return (performance.now() - t0) / 10;
}

function torchMs(code: string): number | string {
  const script = `import time, torch
if not torch.backends.mps.is_available(): print("none"); raise SystemExit
d="mps"; ${code}
f(); torch.mps.synchronize(); t=time.perf_counter()
for _ in range(10): f()
torch.mps.synchronize(); print((time.perf_counter()-t)/10*1000)`;
  const r = spawnSync("python3", ["-c", script], { encoding: "utf8" });
  const out = r.stdout?.trim();
  return r.status === 0 && out && out !== "none" ? Number(out) : "no torch with MPS";
}

const rows = [["case", "mps ms", "cpu ms", "cpu/mps", "torch mps ms"]];
for (const c of CASES) {
  const host = c.make();
  const dev = host.map((t) => t.to("mps"));
  const mps = time(
    () => c.run(dev),
    () => void mpsApi.synchronize(),
  );
  const cpu = time(
    () => c.run(host),
    () => {},
  );
  const torch = torchMs(c.torch);
  rows.push([
    c.name,
    mps.toFixed(3),
    cpu.toFixed(3),
    (cpu / mps).toFixed(2),
    typeof torch === "number" ? torch.toFixed(3) : torch,
  ]);
}
for (const r of rows) console.log(r.map((x) => x.padEnd(24)).join(""));
process.exit(report.failed.length ? 1 : 0);
