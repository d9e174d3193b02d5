/**
 * The conv2d half of the quantized suite: int8 convolutions of ResNet-50 and MobileNet-v2
 * (batch 1, uint8 activations, int8 weights per tensor, requantized to uint8), one thread:
 * - qnnpack: quantizedConv2d on backend-nnpack's WASM engine;
 * - onednn: quantizedConv2d on backend-cpu-mkl's oneDNN engine, where libdnnl loads;
 * - fp32-wasm: the float32 convolution on Backplane's WASM kernels (the dispatcher's pick
 *   with cpu.preferredBlasLibrary = "wasm" and mkldnn.enabled = false), named in a note;
 * - ort-int8: onnxruntime-node's QLinearConv (requantized to uint8, as ours), the weights
 *   an initializer, CPU EP, one thread;
 * - torch-<engine>: PyTorch 2.13's torch.ops.quantized.conv2d per engine, one thread.
 * Each engine's output equals the reference kernel's bit for bit before it is timed.
 */
import {
  backends,
  conv2d,
  conv2dPrepack,
  kernelPriority,
  type PackedConv2d,
  type QTensor,
  quantizedConv2d,
  quantizePerTensor,
  randn,
  type Tensor,
} from "@backplane/core";
import type { Harness, Impl } from "../harness.ts";
import { loadOrtNode, ortNodeSessionOptions } from "../peers/ort-node.ts";
import { startTorchServer, type TorchServer, withTorchServer } from "../peers/torch-server.ts";
import { reason } from "../peers/types.ts";

interface ConvShape {
  name: string;
  c: number;
  hw: number;
  oc: number;
  k: number;
  stride: number;
  pad: number;
  groups: number;
}

const SHAPES: ConvShape[] = [
  {
    name: "resnet50 conv1 7x7/2 3>64 @224",
    c: 3,
    hw: 224,
    oc: 64,
    k: 7,
    stride: 2,
    pad: 3,
    groups: 1,
  },
  { name: "resnet50 3x3 64>64 @56", c: 64, hw: 56, oc: 64, k: 3, stride: 1, pad: 1, groups: 1 },
  { name: "resnet50 1x1 256>64 @56", c: 256, hw: 56, oc: 64, k: 1, stride: 1, pad: 0, groups: 1 },
  { name: "resnet50 3x3 256>256 @14", c: 256, hw: 14, oc: 256, k: 3, stride: 1, pad: 1, groups: 1 },
  {
    name: "mobilenetv2 1x1 24>144 @56",
    c: 24,
    hw: 56,
    oc: 144,
    k: 1,
    stride: 1,
    pad: 0,
    groups: 1,
  },
  {
    name: "mobilenetv2 dw 3x3 144 @56",
    c: 144,
    hw: 56,
    oc: 144,
    k: 3,
    stride: 1,
    pad: 1,
    groups: 144,
  },
];
const X_SCALE = 2 / 255;
const X_ZP = 128;
const OUT_ZP = 128;

interface ConvLayer {
  s: ConvShape;
  x: QTensor;
  packed: PackedConv2d;
  outScale: number;
  xf: Tensor;
  wf: Tensor;
  xInts: Uint8Array;
  wInts: Int8Array;
  wScale: number;
  out: number;
}

function makeLayer(s: ConvShape, seed: number): ConvLayer {
  const xf = randn([1, s.c, s.hw, s.hw], { seed });
  const wf = randn([s.oc, s.c / s.groups, s.k, s.k], { seed: seed + 1 });
  const w = quantizePerTensor(wf, 3 / 127, 0, "qint8");
  const x = quantizePerTensor(xf, X_SCALE, X_ZP, "quint8");
  const packed = conv2dPrepack(w, undefined, {
    stride: s.stride,
    padding: s.pad,
    groups: s.groups,
  });
  const xi = x.intRepr();
  const wi = w.intRepr();
  const layer: ConvLayer = {
    s,
    x,
    packed,
    outScale: (0.05 * Math.sqrt((s.c / s.groups) * s.k * s.k)) / 8,
    xf,
    wf,
    xInts: Uint8Array.from(xi.hostData() as Uint8Array),
    wInts: Int8Array.from(wi.hostData() as Int8Array),
    wScale: w.qScale(),
    out: Math.floor((s.hw + 2 * s.pad - s.k) / s.stride) + 1,
  };
  xi.dispose();
  wi.dispose();
  w.dispose();
  return layer;
}

const flops = (l: ConvLayer) => 2 * l.s.oc * l.out * l.out * (l.s.c / l.s.groups) * l.s.k * l.s.k;

function ints(kernel: string, l: ConvLayer): string {
  using _ = kernelPriority("quantizedConv2d", [kernel]);
  const y = quantizedConv2d(l.x, l.packed, l.outScale, OUT_ZP);
  const s = Array.from(y.intRepr().toFloat64()).join(",");
  y.dispose();
  return s;
}

/** The float32 convolution on the WASM kernels, and the kernel the dispatcher picked. */
function fp32Wasm(l: ConvLayer): { run: () => void; kernel: string } {
  const opts = { stride: l.s.stride, padding: l.s.pad, groups: l.s.groups };
  const run = () => {
    using _b = backends.cpu.flags({ preferredBlasLibrary: "wasm" });
    using _d = backends.mkldnn.flags({ enabled: false });
    conv2d(l.xf, l.wf, opts).dispose();
  };
  const rec = backends.record(run);
  return { run, kernel: rec.calls.find((c) => c.op === "conv2d")?.kernel ?? "?" };
}

type OrtConv = (l: ConvLayer) => Promise<() => Promise<void>>;

async function ortQLinearConv(): Promise<OrtConv | string> {
  try {
    const ort = await loadOrtNode();
    const { buildModel } = await import("../peers/onnx-model.ts");
    return async (l) => {
      const { s } = l;
      const xDims = [1, s.c, s.hw, s.hw];
      const model = buildModel({
        name: "qlinearconv",
        nodes: [
          {
            opType: "QLinearConv",
            inputs: ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
            outputs: ["y"],
            attributes: {
              kernel_shape: [s.k, s.k],
              strides: [s.stride, s.stride],
              pads: [s.pad, s.pad, s.pad, s.pad],
              group: s.groups,
            },
          },
        ],
        inputs: [{ name: "x", dims: xDims, elemType: 2 }],
        outputs: [{ name: "y", dims: [1, s.oc, l.out, l.out], elemType: 2 }],
        initializers: [
          { name: "xs", dims: [], data: Float32Array.of(X_SCALE) },
          { name: "xz", dims: [], data: Uint8Array.of(X_ZP) },
          { name: "w", dims: [s.oc, s.c / s.groups, s.k, s.k], data: l.wInts },
          { name: "ws", dims: [], data: Float32Array.of(l.wScale) },
          { name: "wz", dims: [], data: Int8Array.of(0) },
          { name: "ys", dims: [], data: Float32Array.of(l.outScale) },
          { name: "yz", dims: [], data: Uint8Array.of(OUT_ZP) },
        ],
      });
      const session = await ort.InferenceSession.create(model, ortNodeSessionOptions(1));
      const feeds = { x: new ort.Tensor("uint8", l.xInts, xDims) };
      return async () => {
        const r = await session.run(feeds);
        r.y.dispose?.();
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
def case(xq, packed, L):
    return lambda: torch.ops.quantized.conv2d(xq, packed, L["outScale"], L["outZp"])
for L in spec["layers"]:
    x = torch.from_numpy(np.fromfile(os.path.join(FILES, L["x"]), dtype=np.uint8).reshape(L["xShape"]))
    w = torch.from_numpy(np.fromfile(os.path.join(FILES, L["w"]), dtype=np.int8).reshape(L["wShape"]))
    xq = torch._make_per_tensor_quantized_tensor(x, L["xScale"], L["xZp"])
    wq = torch._make_per_tensor_quantized_tensor(w, L["wScale"], 0)
    for e in ["x86", "onednn", "qnnpack"]:
        if e not in torch.backends.quantized.supported_engines:
            continue
        torch.backends.quantized.engine = e
        s, p, g = L["stride"], L["pad"], L["groups"]
        packed = torch.ops.quantized.conv2d_prepack(wq, None, [s, s], [p, p], [1, 1], g)
        CASES[L["name"] + "|" + e] = case(xq, packed, L)
INFO["cases"] = list(CASES)
`;

/** PyTorch's server with every layer's cases, or why there is none. */
async function startTorch(layers: ConvLayer[]): Promise<TorchServer | string> {
  const files: Record<string, Uint8Array | Int8Array> = {};
  const spec = {
    layers: layers.map((l, i) => {
      files[`x${i}`] = l.xInts;
      files[`w${i}`] = l.wInts;
      const { s } = l;
      return {
        name: s.name,
        x: `x${i}`,
        w: `w${i}`,
        xShape: [1, s.c, s.hw, s.hw],
        wShape: [s.oc, s.c / s.groups, s.k, s.k],
        stride: s.stride,
        pad: s.pad,
        groups: s.groups,
        xScale: X_SCALE,
        xZp: X_ZP,
        wScale: l.wScale,
        outScale: l.outScale,
        outZp: OUT_ZP,
      };
    }),
  };
  files["spec.json"] = new TextEncoder().encode(JSON.stringify(spec));
  return startTorchServer(TORCH_SETUP, { files, env: { OMP_NUM_THREADS: "1" } });
}

/**
 * Our engines (of `kernels`: engine -> kernel) that the process supports and whose kernel
 * agrees with the reference (`agrees`); each one that does not is noted and left out.
 */
export function agreeing(
  h: Harness,
  name: string,
  kernels: Record<string, string>,
  agrees: (kernel: string) => boolean,
): [string, string][] {
  const engines = backends.quantized.supportedEngines as readonly string[];
  return Object.entries(kernels).filter(([impl, kernel]) => {
    if (!engines.includes(impl)) return false;
    if (agrees(kernel)) return true;
    h.note(`${name}: ${impl} differs from the reference; not timed`);
    return false;
  });
}

/** PyTorch's impls of a case: "torch-<engine>" for each engine its server set up. */
export function torchImpls(torch: TorchServer | undefined, name: string): Record<string, Impl> {
  const out: Record<string, Impl> = {};
  for (const e of TORCH_ENGINES)
    if (torch && (torch.info.cases as string[]).includes(`${name}|${e}`))
      out[`torch-${e}`] = torch.impl(`${name}|${e}`);
  return out;
}

/** The engines PyTorch runs, in the order the ratios name them. */
const TORCH_ENGINES = ["x86", "onednn", "qnnpack"] as const;

/** PyTorch's ratios against ours for one layer (its engines over onednn and qnnpack). */
export function torchRatios(h: Harness, name: string, ms: Record<string, number>): void {
  const ratio = (label: string, torch: string, ours: string) => {
    if (ms[torch] !== undefined && ms[ours] !== undefined)
      h.ratio(`${label} ${name}`, ms[torch] / ms[ours]);
  };
  ratio("torch_onednn_over_onednn", "torch-onednn", "onednn");
  ratio("torch_x86_over_onednn", "torch-x86", "onednn");
  ratio("torch_qnnpack_over_qnnpack", "torch-qnnpack", "qnnpack");
}

/** Times the int8 convolutions (the suite has loaded the engines, one thread). */
export async function quantizedConvLayers(h: Harness): Promise<void> {
  const engines = backends.quantized.supportedEngines;
  if (!engines.includes("qnnpack") && !engines.includes("onednn")) {
    h.note("conv2d: neither the qnnpack nor the onednn engine is available; not timed");
    return;
  }
  const ort = await ortQLinearConv();
  if (typeof ort === "string") h.note(`ort-int8 (QLinearConv): unavailable: ${ort}`);
  const layers = SHAPES.map((s, i) => makeLayer(s, 40 + i));
  await withTorchServer(
    h,
    () => startTorch(layers),
    (t) =>
      `torch ${t.info.version} (${t.python}), one thread, torch.ops.quantized.conv2d per engine; a python3 server timed in the same rounds as the others`,
    (torch) => timeConvLayers(h, layers, ort, torch),
  );
  for (const l of layers) {
    l.x.dispose();
    l.packed.dispose();
    l.xf.dispose();
    l.wf.dispose();
  }
}

/** Each layer: our engines checked bit for bit, then every impl and PyTorch's engines timed. */
async function timeConvLayers(
  h: Harness,
  layers: ConvLayer[],
  ort: Awaited<ReturnType<typeof ortQLinearConv>>,
  torch: TorchServer | undefined,
): Promise<void> {
  const fp32Kernels: string[] = [];
  for (const l of layers) {
    const want = ints("reference", l);
    const impls: Record<string, Impl> = {};
    const ours = { qnnpack: "qnnpack-conv2d", onednn: "onednn-qconv2d" };
    for (const [impl, kernel] of agreeing(h, l.s.name, ours, (k) => ints(k, l) === want)) {
      impls[impl] = () => {
        using _ = kernelPriority("quantizedConv2d", [kernel]);
        quantizedConv2d(l.x, l.packed, l.outScale, OUT_ZP).dispose();
      };
    }
    const fp32 = fp32Wasm(l);
    fp32Kernels.push(`${l.s.name}: ${fp32.kernel}`);
    impls["fp32-wasm"] = fp32.run;
    if (typeof ort !== "string") impls["ort-int8"] = await ort(l);
    Object.assign(impls, torchImpls(torch, l.s.name));
    const ms = await h.compare(l.s.name, impls, { flops: flops(l), samples: 11 });
    torchRatios(h, l.s.name, ms);
    if (ms.qnnpack) {
      h.ratio(`fp32_wasm_over_qnnpack ${l.s.name}`, ms["fp32-wasm"] / ms.qnnpack);
      if (ms["ort-int8"]) h.ratio(`ort_int8_over_qnnpack ${l.s.name}`, ms["ort-int8"] / ms.qnnpack);
    }
  }
  h.note(`fp32-wasm ran: ${fp32Kernels.join("; ")}`);
}
