/**
 * quantized: int8 linear layers (uint8 activations, int8 weights, requantized to uint8),
 * one thread, on fully connected shapes of ResNet-50, MobileNet-v2 and a transformer:
 * - qnnpack: quantizedLinear on backend-nnpack's WASM engine (quantized.engine "qnnpack");
 * - onednn: quantizedLinear on backend-cpu-mkl's oneDNN engine, where libdnnl loads;
 * - fp32-wasm: the same product in float32 on backend-cpu-mkl's WASM GEMM (matmul of x
 *   and Wᵀ), the speed an int8 engine has to beat in a browser;
 * - ort-int8: onnxruntime-node's MatMulInteger (uint8 x int8 -> int32; no requantization,
 *   which ours includes), the weights an initializer (packed once), CPU EP, one thread;
 * - torch-<engine>: PyTorch 2.13's torch.ops.quantized.linear with the same integers, per
 *   engine (x86, onednn, qnnpack), one thread, timed in a python3 subprocess.
 * Every Backplane output is checked against the reference kernel (bit for bit) first.
 * Ratios: other_ms / ours_ms (> 1: ours faster).
 *
 *   npm run bench -- quantized
 */
import {
  backends,
  kernelPriority,
  linearPrepack,
  matmul,
  type QTensor,
  quantizedLinear,
  quantizePerTensor,
  randn,
  type Tensor,
} from "@backplane/core";
import { type Harness, type Impl, listArg } from "../harness.ts";
import { loadOrtNode, ortNodeSessionOptions } from "../peers/ort-node.ts";
import { startTorchServer, type TorchServer, withTorchServer } from "../peers/torch-server.ts";
import { reason } from "../peers/types.ts";
import { agreeing, quantizedConvLayers, torchImpls, torchRatios } from "./quantized-conv.ts";

const SHAPES: { name: string; m: number; k: number; n: number }[] = [
  { name: "resnet50 fc 1x2048>1000", m: 1, k: 2048, n: 1000 },
  { name: "mobilenetv2 fc 1x1280>1000", m: 1, k: 1280, n: 1000 },
  { name: "bert ffn 64x768>3072", m: 64, k: 768, n: 3072 },
  { name: "linear 128x1024>1024", m: 128, k: 1024, n: 1024 },
];
const X_SCALE = 2 / 255;
const X_ZP = 128;

interface Layer {
  x: QTensor;
  packed: ReturnType<typeof linearPrepack>;
  outScale: number;
  xf: Tensor;
  wt: Tensor;
  xInts: Uint8Array;
  wInts: Int8Array;
  wScale: number;
}

function makeLayer(m: number, k: number, n: number, seed: number): Layer {
  const xf = randn([m, k], { seed });
  const wf = randn([n, k], { seed: seed + 1 });
  const w = quantizePerTensor(wf, 3 / 127, 0, "qint8"); // +-3 sigma
  const x = quantizePerTensor(xf, X_SCALE, X_ZP, "quint8");
  const packed = linearPrepack(w);
  const wt = wf.transpose(0, 1).contiguous();
  const copyOf = <T extends Uint8Array | Int8Array>(
    q: QTensor,
    C: { from(a: ArrayLike<number>): T },
  ) => {
    const t = q.intRepr();
    const a = C.from(t.hostData() as ArrayLike<number>);
    t.dispose();
    return a;
  };
  const layer: Layer = {
    x,
    packed,
    // Outputs of a few standard deviations map onto the uint8 range.
    outScale: (0.05 * Math.sqrt(k)) / 8,
    xf,
    wt,
    xInts: copyOf(x, Uint8Array),
    wInts: copyOf(w, Int8Array),
    wScale: w.qScale(),
  };
  w.dispose();
  wf.dispose();
  return layer;
}

function run(kernel: string, l: Layer): () => void {
  return () => {
    using _ = kernelPriority("quantizedLinear", [kernel]);
    quantizedLinear(l.x, l.packed, l.outScale, 128).dispose();
  };
}

function ints(kernel: string, l: Layer): string {
  using _ = kernelPriority("quantizedLinear", [kernel]);
  const y = quantizedLinear(l.x, l.packed, l.outScale, 128);
  const s = Array.from(y.intRepr().toFloat64()).join(",");
  y.dispose();
  return s;
}

async function ortInt8(): Promise<
  ((l: Layer, m: number, k: number, n: number) => Promise<() => Promise<void>>) | string
> {
  try {
    const ort = await loadOrtNode();
    const { buildModel } = await import("../peers/onnx-model.ts");
    return async (l, m, k, n) => {
      const bT = new Int8Array(k * n);
      for (let i = 0; i < n; i++) for (let j = 0; j < k; j++) bT[j * n + i] = l.wInts[i * k + j];
      // The weights and zero points are initializers, as in a quantized model: ORT packs
      // them once when the session is made.
      const model = buildModel({
        name: "mmi",
        nodes: [{ opType: "MatMulInteger", inputs: ["A", "B", "az", "bz"], outputs: ["Y"] }],
        inputs: [{ name: "A", dims: [m, k], elemType: 2 }],
        outputs: [{ name: "Y", dims: [m, n], elemType: 6 }],
        initializers: [
          { name: "B", dims: [k, n], data: bT },
          { name: "az", dims: [], data: Uint8Array.of(X_ZP) },
          { name: "bz", dims: [], data: Int8Array.of(0) },
        ],
      });
      const s = await ort.InferenceSession.create(model, ortNodeSessionOptions(1));
      const feeds = { A: new ort.Tensor("uint8", l.xInts, [m, k]) };
      return async () => {
        const r = await s.run(feeds);
        r.Y.dispose?.();
      };
    };
  } catch (err) {
    return reason(err);
  }
}

/** Every layer's int8 operands per PyTorch engine: CASES "<layer>|<engine>". */
const TORCH_SETUP = `
import json, os
import numpy as np
import torch
spec = json.load(open(os.path.join(FILES, "spec.json")))
torch.set_num_threads(1)
INFO = {"version": torch.__version__}
CASES = {}
def case(xq, packed, scale):
    return lambda: torch.ops.quantized.linear(xq, packed, scale, 128)
for L in spec["layers"]:
    x = torch.from_numpy(np.fromfile(os.path.join(FILES, L["x"]), dtype=np.uint8).reshape(L["m"], L["k"]))
    w = torch.from_numpy(np.fromfile(os.path.join(FILES, L["w"]), dtype=np.int8).reshape(L["n"], L["k"]))
    xq = torch._make_per_tensor_quantized_tensor(x, L["xScale"], L["xZp"])
    wq = torch._make_per_tensor_quantized_tensor(w, L["wScale"], 0)
    for e in ["x86", "onednn", "qnnpack"]:
        if e not in torch.backends.quantized.supported_engines:
            continue
        torch.backends.quantized.engine = e
        CASES[L["name"] + "|" + e] = case(xq, torch.ops.quantized.linear_prepack(wq, None), L["outScale"])
INFO["cases"] = list(CASES)
`;

/** PyTorch's server with every layer's cases, or why there is none. */
async function startTorch(
  layers: { name: string; l: Layer; m: number; k: number; n: number }[],
): Promise<TorchServer | string> {
  const files: Record<string, Uint8Array | Int8Array> = {};
  const spec = {
    layers: layers.map(({ name, l, m, k, n }, i) => {
      files[`x${i}`] = l.xInts;
      files[`w${i}`] = l.wInts;
      const scales = { xScale: X_SCALE, xZp: X_ZP, wScale: l.wScale, outScale: l.outScale };
      return { name, m, k, n, x: `x${i}`, w: `w${i}`, ...scales };
    }),
  };
  files["spec.json"] = new TextEncoder().encode(JSON.stringify(spec));
  return startTorchServer(TORCH_SETUP, { files, env: { OMP_NUM_THREADS: "1" } });
}

export default {
  description:
    "int8 linear and conv2d layers, one thread: the qnnpack (WASM) and onednn engines against float32 WASM, onnxruntime-node and PyTorch (--only=linear or --only=conv2d for one half)",
  // Long: the suite's script: load the engines, check each output, time, add PyTorch.
  async run(h: Harness, args: string[] = []) {
    try {
      await import("@backplane/backend-nnpack");
      await import("@backplane/backend-cpu-mkl").catch(() => undefined);
      backends.openmp.setNumThreads(1);
      await backends.ready();
    } catch (err) {
      h.note(`backend-nnpack did not load: ${reason(err)}`);
      return;
    }
    const engines = backends.quantized.supportedEngines;
    h.note(`quantized.supportedEngines: ${engines.join(", ")}`);
    const only = listArg(args, "--only");
    if (!only || only.includes("conv2d")) await quantizedConvLayers(h);
    if (only && !only.includes("linear")) return;
    const ort = await ortInt8();
    if (typeof ort === "string") h.note(`ort-int8: unavailable: ${ort}`);
    const layers = SHAPES.map((s, i) => ({ ...s, l: makeLayer(s.m, s.k, s.n, 10 + i) }));
    await withTorchServer(
      h,
      () => startTorch(layers),
      (t) =>
        `torch ${t.info.version} (${t.python}), one thread, torch.ops.quantized.linear per engine; a python3 server timed in the same rounds as the others`,
      (torch) => timeLinear(h, layers, ort, torch),
    );
    h.note(
      "outputs of qnnpack and onednn equal the reference kernel's bit for bit before timing; ort-int8 stops at the int32 sums (no requantization), ours include it",
    );
    for (const { l } of layers) {
      l.x.dispose();
      l.packed.dispose();
      l.xf.dispose();
      l.wt.dispose();
    }
  },
};

/** Each layer: our engines checked bit for bit, then every impl and PyTorch's engines timed. */
async function timeLinear(
  h: Harness,
  layers: { name: string; l: Layer; m: number; k: number; n: number }[],
  ort: Awaited<ReturnType<typeof ortInt8>>,
  torch: TorchServer | undefined,
): Promise<void> {
  for (const { name, l, m, k, n } of layers) {
    const want = ints("reference", l);
    const impls: Record<string, Impl> = {};
    const ours = { qnnpack: "qnnpack-linear", onednn: "onednn-qlinear" };
    for (const [impl, kernel] of agreeing(h, name, ours, (k) => ints(k, l) === want))
      impls[impl] = run(kernel, l);
    impls["fp32-wasm"] = () => {
      using _ = kernelPriority("matmul", ["wasm-gemm"]);
      matmul(l.xf, l.wt).dispose();
    };
    if (typeof ort !== "string") impls["ort-int8"] = await ort(l, m, k, n);
    Object.assign(impls, torchImpls(torch, name));
    const ms = await h.compare(name, impls, { flops: 2 * m * k * n, samples: 11 });
    torchRatios(h, name, ms);
    if (ms.qnnpack) {
      h.ratio(`fp32_wasm_over_qnnpack ${name}`, ms["fp32-wasm"] / ms.qnnpack);
      if (ms["ort-int8"]) h.ratio(`ort_int8_over_qnnpack ${name}`, ms["ort-int8"] / ms.qnnpack);
    }
  }
}
