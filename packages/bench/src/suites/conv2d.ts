/**
 * conv2d: float32 forward convolution on ResNet-50 and MobileNet-v2 layer shapes, batch 1,
 * ONE thread in every implementation (--threads=2: Backplane, with backend-openmp's pool
 * for its WASM kernels, and torch on two; the WASM peers left out), random inputs (uniform in [-1, 1)), no bias:
 * - backplane-dispatch: conv2d() on whatever the dispatcher picks (oneDNN where libdnnl is
 *   installed, else nnpack), with the calibration's ranking;
 * - backplane-auto: conv2d() on backend-nnpack's "auto" kernel (NNPACK's rules), after
 *   backends.openmp.setNumThreads(1) and await backends.ready(); the GEMM stages run on
 *   the fastest matmul the dispatcher has (backend-cpu-mkl's native BLAS here);
 * - backplane-<algorithm>: the same, forced to wt8x8, wt6x6, ft8x8, ft16x16, direct or
 *   implicit-gemm where the algorithm applies (Winograd and FFT on dense 3x3 layers);
 * - backplane-<...>[wasm-gemm]: the same with backends.cpu.preferredBlasLibrary = "wasm",
 *   so every GEMM runs on backend-cpu-mkl's WASM SIMD kernel (a pure-WASM Backplane, and
 *   the fair Winograd-vs-implicit-GEMM comparison, since native BLAS would otherwise serve
 *   implicit GEMM's one large GEMM better than Winograd's many small ones);
 * - backplane-auto[uncached]: auto with the weight-transform cache off (Winograd layers);
 * - tfjs-wasm: tf.conv2d / tf.depthwiseConv2d on @tensorflow/tfjs-backend-wasm (XNNPACK,
 *   SIMD, one thread), NHWC: inputs and filters are transposed before timing;
 * - ort-web: onnxruntime-web's wasm EP, numThreads 1, a one-node Conv model built in code
 *   (bench/peers/onnx-model.ts); run() copies X and W into the wasm heap and Y out;
 * - torch: torch.nn.functional.conv2d of the newest torch found (PyTorch 2.13 from
 *   `npm run bench:torch`, else Debian's python3-torch 1.13; torch.set_num_threads(1)),
 *   on the same inputs in a python3 server timed in the same rounds as the rest
 *   (peers/torch-server.ts).
 * A peer that cannot be loaded is a note, never a crash. Every output is checked before
 * timing: against float64 sums at 256 sampled outputs, and in full against another impl
 * (max |y - y_ref| / max |y_ref| < 1e-3); a wrong impl posts no number. Ratios are speed
 * ratios other_ms / ours_ms (> 1: Backplane faster); _geomean over the layers.
 *
 *   npm run bench -- conv2d [--quick] [--only=<text>] [--threads=2] [--impls=a,b]
 * (--quick: 5 samples per impl instead of 11; --only: the layers whose name contains text;
 * --impls: only these Backplane impls and peers, torch always)
 */
import {
  backends,
  type Conv2dOptions,
  conv2d,
  explain,
  kernelPriority,
  seededRandom,
  type Tensor,
  tensor,
} from "@backplane/core";
import { readEnv } from "@backplane/core/cpu";
import type { Harness, Impl } from "../harness.ts";
import { convModel } from "../peers/onnx-model.ts";
import { startTorchServer, type TorchServer, withTorchServer } from "../peers/torch-server.ts";
import { reason } from "../peers/types.ts";

/** The members backend-nnpack adds to backends.nnpack that this suite uses. */
interface NnpackMembers {
  setTransformCacheEnabled(on: boolean): boolean;
  clearTransformCache(): void;
}
const nnpackMembers = () => backends.namespace("nnpack") as unknown as NnpackMembers;

/** Threads of every impl (--threads=N; the WASM peers run only at 1). */
let THREADS = 1;
const TOLERANCE = 1e-3;

interface Layer {
  name: string;
  /** [N, C, H, W] */
  x: [number, number, number, number];
  /** [O, C / groups, kh, kw] */
  w: [number, number, number, number];
  stride: number;
  pad: number;
  groups: number;
}

const LAYERS: Layer[] = [
  {
    name: "resnet50 conv1 7x7/2 3>64 @224",
    x: [1, 3, 224, 224],
    w: [64, 3, 7, 7],
    stride: 2,
    pad: 3,
    groups: 1,
  },
  {
    name: "resnet50 3x3 64>64 @56",
    x: [1, 64, 56, 56],
    w: [64, 64, 3, 3],
    stride: 1,
    pad: 1,
    groups: 1,
  },
  {
    name: "resnet50 1x1 64>256 @56",
    x: [1, 64, 56, 56],
    w: [256, 64, 1, 1],
    stride: 1,
    pad: 0,
    groups: 1,
  },
  {
    name: "resnet50 3x3 128>128 @28",
    x: [1, 128, 28, 28],
    w: [128, 128, 3, 3],
    stride: 1,
    pad: 1,
    groups: 1,
  },
  {
    name: "resnet50 3x3 256>256 @14",
    x: [1, 256, 14, 14],
    w: [256, 256, 3, 3],
    stride: 1,
    pad: 1,
    groups: 1,
  },
  {
    name: "alexnet conv2 5x5 64>192 @27",
    x: [1, 64, 27, 27],
    w: [192, 64, 5, 5],
    stride: 1,
    pad: 2,
    groups: 1,
  },
  {
    name: "resnet50 1x1 1024>256 @14",
    x: [1, 1024, 14, 14],
    w: [256, 1024, 1, 1],
    stride: 1,
    pad: 0,
    groups: 1,
  },
  {
    name: "mobilenetv2 dw3x3 32 @112",
    x: [1, 32, 112, 112],
    w: [32, 1, 3, 3],
    stride: 1,
    pad: 1,
    groups: 32,
  },
  {
    name: "mobilenetv2 1x1 96>24 @56",
    x: [1, 96, 56, 56],
    w: [24, 96, 1, 1],
    stride: 1,
    pad: 0,
    groups: 1,
  },
  {
    name: "mobilenetv2 dw3x3/2 144 @56",
    x: [1, 144, 56, 56],
    w: [144, 1, 3, 3],
    stride: 2,
    pad: 1,
    groups: 144,
  },
  {
    name: "mobilenetv2 dw3x3 576 @14",
    x: [1, 576, 14, 14],
    w: [576, 1, 3, 3],
    stride: 1,
    pad: 1,
    groups: 576,
  },
];

/** The impl whose output the others are compared with first, in this order of preference. */
const REFERENCE_ORDER = [
  "backplane-implicit-gemm",
  "torch",
  "ort-web",
  "tfjs-wasm",
  "backplane-direct",
];

const outSize = (l: Layer, d: 2 | 3) => Math.floor((l.x[d] + 2 * l.pad - l.w[d]) / l.stride) + 1;
const outShape = (l: Layer) => [l.x[0], l.w[0], outSize(l, 2), outSize(l, 3)];
const flopsOf = (l: Layer) => {
  const [n, o, oh, ow] = outShape(l);
  return 2 * n * o * oh * ow * l.w[1] * l.w[2] * l.w[3];
};
const isDepthwise = (l: Layer) => l.groups === l.x[1] && l.groups > 1;
const isDense3x3s1 = (l: Layer) => l.w[2] === 3 && l.w[3] === 3 && l.stride === 1 && l.groups === 1;
const convOptions = (l: Layer): Conv2dOptions => ({
  stride: l.stride,
  padding: l.pad,
  groups: l.groups,
});

function randomArray(n: number, seed: number): Float32Array {
  const r = seededRandom(seed);
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = r() * 2 - 1;
  return a;
}

/** y at sampled positions, in float64 straight from the definition. */
function spotError(y: Float32Array, l: Layer, x: Float32Array, w: Float32Array): number {
  const [, C, H, W] = l.x;
  const [O, Cg, kh, kw] = l.w;
  const [, , oh, ow] = outShape(l);
  const og = O / l.groups;
  const r = seededRandom(7919);
  let maxDiff = 0;
  let maxRef = 0;
  for (let s = 0; s < 256; s++) {
    const o = Math.floor(r() * O);
    const oy = s === 0 ? 0 : Math.floor(r() * oh);
    const ox = s === 0 ? 0 : Math.floor(r() * ow);
    const g = Math.floor(o / og);
    let acc = 0;
    for (let c = 0; c < Cg; c++)
      for (let i = 0; i < kh; i++) {
        const iy = oy * l.stride - l.pad + i;
        if (iy < 0 || iy >= H) continue;
        for (let j = 0; j < kw; j++) {
          const ix = ox * l.stride - l.pad + j;
          if (ix < 0 || ix >= W) continue;
          acc += x[((g * Cg + c) * H + iy) * W + ix] * w[((o * Cg + c) * kh + i) * kw + j];
        }
      }
    const got = y[(o * oh + oy) * ow + ox];
    if (Number.isNaN(got)) return Number.POSITIVE_INFINITY;
    maxDiff = Math.max(maxDiff, Math.abs(got - acc));
    maxRef = Math.max(maxRef, Math.abs(acc));
  }
  void C;
  return maxDiff / maxRef;
}

function fullError(y: Float32Array, ref: Float32Array): number {
  if (y.length !== ref.length) return Number.POSITIVE_INFINITY;
  let maxDiff = 0;
  let maxRef = 0;
  for (let i = 0; i < y.length; i++) {
    const d = Math.abs(y[i] - ref[i]);
    if (!(d <= maxDiff)) {
      if (Number.isNaN(d)) return Number.POSITIVE_INFINITY;
      maxDiff = d;
    }
    maxRef = Math.max(maxRef, Math.abs(ref[i]));
  }
  return maxDiff / maxRef;
}

/** NCHW <-> NHWC and OIHW -> HWIO (or HW C M for depthwise) for tfjs. */
function toNHWC(a: Float32Array, [n, c, h, w]: readonly number[]): Float32Array {
  const out = new Float32Array(a.length);
  for (let b = 0; b < n; b++)
    for (let ch = 0; ch < c; ch++)
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++)
          out[((b * h + y) * w + x) * c + ch] = a[((b * c + ch) * h + y) * w + x];
  return out;
}
function fromNHWC(a: Float32Array, [n, c, h, w]: readonly number[]): Float32Array {
  const out = new Float32Array(a.length);
  for (let b = 0; b < n; b++)
    for (let ch = 0; ch < c; ch++)
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++)
          out[((b * c + ch) * h + y) * w + x] = a[((b * h + y) * w + x) * c + ch];
  return out;
}
function toHWIO(a: Float32Array, [o, i, kh, kw]: readonly number[]): Float32Array {
  const out = new Float32Array(a.length);
  for (let f = 0; f < o; f++)
    for (let c = 0; c < i; c++)
      for (let y = 0; y < kh; y++)
        for (let x = 0; x < kw; x++)
          out[((y * kw + x) * i + c) * o + f] = a[((f * i + c) * kh + y) * kw + x];
  return out;
}

interface Case {
  run: () => unknown;
  result: () => Promise<Float32Array>;
  dispose: () => void | Promise<void>;
}
type Peer = (l: Layer, x: Float32Array, w: Float32Array) => Promise<Case>;

// ---- Backplane ----

/** Why the dispatcher would not run `kernel` for this conv under kernelPriority([kernel]). */
function refusal(
  kernel: string,
  x: Tensor,
  w: Tensor,
  opts: Conv2dOptions,
  wasmGemm: boolean,
): string | undefined {
  using _b = backends.cpu.flags({ preferredBlasLibrary: wasmGemm ? "wasm" : "auto" });
  using _ = kernelPriority("conv2d", [kernel]);
  const e = explain("conv2d", x, w, opts);
  if (e.selected === kernel) return undefined;
  const c = e.candidates.find((k) => k.kernel === kernel);
  return c ? `${c.kernel} (${c.backend}): ${c.reason}` : `no ${kernel} among conv2d's candidates`;
}

/** A Backplane impl: `kernel` forced, or "" for whatever the dispatcher picks. */
function backplane(kernel: string, opts: { wasmGemm?: boolean; uncached?: boolean } = {}): Peer {
  return async (l, xa, wa) => {
    const x = tensor(xa, { shape: l.x });
    const w = tensor(wa, { shape: l.w });
    const o = convOptions(l);
    if (!kernel) {
      // The first call of a shape ranks the backends on it (per-shape measurement): the
      // kernel that runs is the conv2d of a recorded call after it (the calls inside it,
      // such as a GEMM stage's matmul, are recorded too).
      conv2d(x, w, o).dispose();
      const calls = backends.record(() => conv2d(x, w, o).dispose()).calls;
      const picked = calls.find((c) => c.op === "conv2d")?.kernel;
      return {
        picked,
        run: () => conv2d(x, w, o).dispose(),
        result: async () => {
          const y = conv2d(x, w, o);
          const out = Float32Array.from(y.dataSync() as Float32Array);
          y.dispose();
          return out;
        },
        dispose: () => {
          x.dispose();
          w.dispose();
        },
      };
    }
    const why = refusal(kernel, x, w, o, opts.wasmGemm === true);
    if (why) {
      x.dispose();
      w.dispose();
      throw new Error(why);
    }
    const nnpack = nnpackMembers();
    const call = () => {
      using _b = backends.cpu.flags({ preferredBlasLibrary: opts.wasmGemm ? "wasm" : "auto" });
      using _ = kernelPriority("conv2d", [kernel]);
      if (!opts.uncached) return conv2d(x, w, o);
      const prev = nnpack.setTransformCacheEnabled(false);
      try {
        return conv2d(x, w, o);
      } finally {
        nnpack.setTransformCacheEnabled(prev);
      }
    };
    return {
      run: () => call().dispose(),
      result: async () => {
        const y = call();
        const out = Float32Array.from(y.dataSync() as Float32Array);
        y.dispose();
        return out;
      },
      dispose: () => {
        x.dispose();
        w.dispose();
      },
    };
  };
}

// ---- tfjs-wasm ----

async function openTfjs(): Promise<Peer | string> {
  const { openTfjsWasm } = await import("../peers/tfjs-wasm.ts");
  const opened = await openTfjsWasm(THREADS); // loads the SIMD binary, one thread, backend "wasm"
  if (typeof opened === "string") return opened;
  const tf = await import("@tensorflow/tfjs-core");
  return async (l, xa, wa) => {
    const [n, c, h, wd] = l.x;
    const [o, , kh, kw] = l.w;
    const x = tf.tensor4d(toNHWC(xa, l.x), [n, h, wd, c]);
    const pad: [[number, number], [number, number], [number, number], [number, number]] = [
      [0, 0],
      [l.pad, l.pad],
      [l.pad, l.pad],
      [0, 0],
    ];
    let f: import("@tensorflow/tfjs-core").Tensor4D;
    let op: () => import("@tensorflow/tfjs-core").Tensor4D;
    if (isDepthwise(l)) {
      // [kh, kw, C, multiplier]
      f = tf.tensor4d(toHWIO(wa, [o, 1, kh, kw]), [kh, kw, c, o / c]);
      op = () => tf.depthwiseConv2d(x, f, l.stride, pad, "NHWC");
    } else {
      f = tf.tensor4d(toHWIO(wa, l.w), [kh, kw, c, o]);
      op = () => tf.conv2d(x, f, l.stride, pad, "NHWC");
    }
    return {
      run: () => op().dispose(),
      result: async () => {
        const y = op();
        const out = fromNHWC(y.dataSync() as Float32Array, outShape(l));
        y.dispose();
        return out;
      },
      dispose: () => {
        x.dispose();
        f.dispose();
      },
    };
  };
}

// ---- ort-web ----

async function openOrt(): Promise<Peer | string> {
  const { openOrtWeb } = await import("../peers/ort-web.ts");
  const opened = await openOrtWeb(THREADS); // sets ort.env.wasm: numThreads 1, SIMD, no proxy
  if (typeof opened === "string") return opened;
  const ort = await import("onnxruntime-web");
  return async (l, xa, wa) => {
    const model = convModel({
      x: l.x,
      w: l.w,
      strides: [l.stride, l.stride],
      pads: [l.pad, l.pad, l.pad, l.pad],
      group: l.groups,
    });
    const session = await ort.InferenceSession.create(model, {
      executionProviders: ["wasm"],
      graphOptimizationLevel: "all",
    });
    const feeds = { X: new ort.Tensor("float32", xa, l.x), W: new ort.Tensor("float32", wa, l.w) };
    return {
      run: async () => (await session.run(feeds)).Y.dispose(),
      result: async () => {
        const r = await session.run(feeds);
        const out = Float32Array.from(r.Y.data as Float32Array);
        r.Y.dispose();
        return out;
      },
      dispose: () => session.release(),
    };
  };
}

// ---- torch (a python3 server, timed in the rounds: peers/torch-server.ts) ----

/** Loads every layer, writes its output (the correctness check reads it), defines CASES. */
const TORCH_SETUP = `
import json, os
import numpy as np
import torch
import torch.nn.functional as F
spec = json.load(open(os.path.join(FILES, "spec.json")))
torch.set_num_threads(spec["threads"])
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass
try:
    import torch.backends.nnpack
    nnpack = torch.backends.nnpack.is_available()
except Exception:
    nnpack = None
INFO = {"version": torch.__version__, "mkldnn": torch.backends.mkldnn.is_available(),
        "nnpack": nnpack, "threads": torch.get_num_threads()}
CASES = {}
def call(L):
    x = torch.from_numpy(np.fromfile(os.path.join(FILES, L["x"]), dtype=np.float32).reshape(L["xShape"]))
    w = torch.from_numpy(np.fromfile(os.path.join(FILES, L["w"]), dtype=np.float32).reshape(L["wShape"]))
    return lambda: F.conv2d(x, w, None, L["stride"], L["pad"], 1, L["groups"])
with torch.no_grad():
    for L in spec["layers"]:
        f = call(L)
        f().numpy().tofile(os.path.join(FILES, L["y"]))
        CASES[L["name"]] = f
`;

/** PyTorch's server and the output it computed for each layer (read from its directory). */
interface Torch {
  server: TorchServer;
  outputs: Map<string, Float32Array>;
}

type LayerData = { l: Layer; x: Float32Array; w: Float32Array }[];

/** PyTorch's server with every layer set up (each output written as y<i>), or why not. */
function startTorch(layers: LayerData, threads: number): Promise<TorchServer | string> {
  const files: Record<string, Uint8Array> = {};
  const spec = {
    threads,
    layers: layers.map(({ l, x, w }, i) => {
      files[`x${i}`] = new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
      files[`w${i}`] = new Uint8Array(w.buffer, w.byteOffset, w.byteLength);
      return {
        name: l.name,
        x: `x${i}`,
        w: `w${i}`,
        y: `y${i}`,
        xShape: l.x,
        wShape: l.w,
        stride: l.stride,
        pad: l.pad,
        groups: l.groups,
      };
    }),
  };
  files["spec.json"] = new TextEncoder().encode(JSON.stringify(spec));
  return startTorchServer(TORCH_SETUP, {
    files,
    env: { OMP_NUM_THREADS: String(threads), MKL_NUM_THREADS: String(threads) },
  });
}

/** The outputs startTorch's server wrote, by layer name. */
async function torchOutputs(server: TorchServer, layers: LayerData): Promise<Torch> {
  const { readFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  const outputs = new Map<string, Float32Array>();
  for (const [i, { l }] of layers.entries()) {
    const b = readFileSync(join(server.dir, `y${i}`));
    outputs.set(
      l.name,
      new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)),
    );
  }
  return { server, outputs };
}

// ---- the suite ----

const geomean = (xs: number[]) => Math.exp(xs.reduce((a, b) => a + Math.log(b), 0) / xs.length);

/** Imports backend-openmp's worker pool: what the WASM kernels run on, or why one thread. */
async function openPool(): Promise<string> {
  try {
    await import("@backplane/backend-openmp");
    await backends.ready();
  } catch (err) {
    return `one thread, @backplane/backend-openmp did not load: ${reason(err)}`;
  }
  return backends.openmp.isEnabled()
    ? "the backend-openmp pool"
    : `one thread (${backends.openmp.status().reason})`;
}

/** The impls that apply to a layer: name -> peer. */
function implsFor(l: Layer, peers: Map<string, Peer>): Map<string, Peer> {
  const out = new Map<string, Peer>();
  const bp = (name: string, kernel: string, opts?: Parameters<typeof backplane>[1]) =>
    out.set(name, backplane(kernel, opts));
  bp("backplane-dispatch", "");
  bp("backplane-auto", "auto");
  bp("backplane-auto[wasm-gemm]", "auto", { wasmGemm: true });
  if (isDense3x3s1(l)) {
    bp("backplane-auto[uncached]", "auto", { uncached: true });
    for (const k of ["wt8x8", "wt6x6"]) bp(`backplane-${k}`, k);
  }
  // FFT where NNPACK would use it (kernels 4 to 16), and on the large 3x3 layer for contrast
  const k = Math.max(l.w[2], l.w[3]);
  if (l.stride === 1 && l.groups === 1 && ((k > 3 && k <= 16) || (k === 3 && l.x[2] >= 56))) {
    if (k > 3) bp("backplane-auto[uncached]", "auto", { uncached: true });
    for (const a of ["ft8x8", "ft16x16"]) bp(`backplane-${a}`, a);
  }
  if ((l.w[2] === 1 && l.w[3] === 1 && l.stride === 1 && l.pad === 0) || isDepthwise(l))
    bp("backplane-direct", "direct");
  bp("backplane-implicit-gemm", "implicit-gemm");
  if (isDense3x3s1(l) && l.x[1] >= 64) {
    bp("backplane-wt8x8[wasm-gemm]", "wt8x8", { wasmGemm: true });
    bp("backplane-wt6x6[wasm-gemm]", "wt6x6", { wasmGemm: true });
    bp("backplane-implicit-gemm[wasm-gemm]", "implicit-gemm", { wasmGemm: true });
  }
  for (const [k, p] of peers) out.set(k, p);
  return out;
}

/** Every layer: each impl's output checked, then all of them (PyTorch too) timed in rounds. */
// Long: per layer, the outputs against float64 and each other, the timing, the ratios.
async function timeLayers(
  h: Harness,
  data: LayerData,
  o: { peers: Map<string, Peer>; torch?: Torch; implsWanted?: string[]; samples: number },
): Promise<void> {
  const { peers, torch, implsWanted, samples } = o;

  const ratios = new Map<string, number[]>();
  const ratio = (name: string, layer: string, value: number | undefined) => {
    if (value === undefined || !Number.isFinite(value)) return;
    h.ratio(`${name} ${layer}`, value);
    ratios.set(name, [...(ratios.get(name) ?? []), value]);
  };

  for (const { l, x, w } of data) {
    const cases = new Map<string, Case>();
    const outputs = new Map<string, Float32Array>();
    try {
      for (const [impl, peer] of implsFor(l, peers)) {
        if (implsWanted && !implsWanted.includes(impl)) continue;
        try {
          const c = await peer(l, x, w);
          if (impl === "backplane-dispatch")
            h.note(`${l.name}: the dispatcher runs ${(c as { picked?: string }).picked}`);
          cases.set(impl, c);
          outputs.set(impl, await c.result());
        } catch (err) {
          h.note(`${impl}: ${l.name}: not run: ${reason(err)}`);
        }
      }
      const torchOut = torch?.outputs.get(l.name);
      if (torchOut) outputs.set("torch", torchOut);
      const spot = new Map<string, number>();
      for (const [impl, y] of outputs) spot.set(impl, spotError(y, l, x, w));
      const trusted = [...outputs.keys()]
        .filter((impl) => spot.get(impl)! < TOLERANCE)
        .sort((a, b) => {
          const ia = REFERENCE_ORDER.indexOf(a);
          const ib = REFERENCE_ORDER.indexOf(b);
          return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
        });
      const impls: Record<string, Impl> = {};
      for (const [impl, y] of outputs) {
        const other = trusted.find((t) => t !== impl);
        const full = other ? fullError(y, outputs.get(other)!) : undefined;
        const s = spot.get(impl)!;
        if (s >= TOLERANCE || (full !== undefined && full >= TOLERANCE)) {
          h.note(
            `${impl}: WRONG on ${l.name}, not timed: max rel error ${s.toExponential(2)} against float64 at sampled outputs${other ? `, ${full!.toExponential(2)} against ${other}` : ""}`,
          );
          continue;
        }
        if (impl === "torch") {
          if (torch) impls.torch = torch.server.impl(l.name);
        } else impls[impl] = cases.get(impl)!.run;
      }
      outputs.clear();
      let ms: Record<string, number>;
      try {
        ms = await h.compare(l.name, impls, { flops: flopsOf(l), samples, sampleMs: 20 });
      } catch (err) {
        h.note(`${l.name}: measurement failed: ${reason(err)}`);
        continue;
      }
      const r = (a: string, b: string) =>
        ms[a] !== undefined && ms[b] !== undefined ? ms[b] / ms[a] : undefined;
      ratio("auto_over_tfjs_wasm", l.name, r("backplane-auto", "tfjs-wasm"));
      ratio("auto_over_ort_web", l.name, r("backplane-auto", "ort-web"));
      ratio("auto_over_torch", l.name, r("backplane-auto", "torch"));
      ratio("dispatch_over_torch", l.name, r("backplane-dispatch", "torch"));
      ratio("auto_wasm_gemm_over_tfjs_wasm", l.name, r("backplane-auto[wasm-gemm]", "tfjs-wasm"));
      if (isDense3x3s1(l) && l.x[1] >= 64) {
        ratio(
          "wt8x8_over_implicit_gemm[wasm-gemm]",
          l.name,
          r("backplane-wt8x8[wasm-gemm]", "backplane-implicit-gemm[wasm-gemm]"),
        );
        ratio(
          "wt6x6_over_implicit_gemm[wasm-gemm]",
          l.name,
          r("backplane-wt6x6[wasm-gemm]", "backplane-implicit-gemm[wasm-gemm]"),
        );
        ratio(
          "wt8x8_over_implicit_gemm[native]",
          l.name,
          r("backplane-wt8x8", "backplane-implicit-gemm"),
        );
        ratio(
          "wt6x6_over_implicit_gemm[native]",
          l.name,
          r("backplane-wt6x6", "backplane-implicit-gemm"),
        );
      }
    } finally {
      for (const c of cases.values()) await c.dispose();
      nnpackMembers().clearTransformCache();
    }
  }
  for (const [name, xs] of ratios)
    if (xs.length > 1) h.ratio(`${name}_geomean (${xs.length} layers)`, geomean(xs));
  h.note(
    `correctness: each output vs float64 at 256 sampled outputs and in full vs another impl, max |y - y_ref| / max |y_ref| < ${TOLERANCE}; ratios are other_ms / ours_ms (> 1: Backplane faster)`,
  );
}

export default {
  description:
    "float32 conv2d on ResNet-50 / MobileNet-v2 layers, batch 1, one thread: backend-nnpack's algorithms against tfjs-wasm, onnxruntime-web and PyTorch",
  // Long: the suite's script: open every peer, time every layer, print the ratios.
  async run(h: Harness, args: string[] = []) {
    const quick = args.includes("--quick");
    THREADS = Number(args.find((a) => a.startsWith("--threads="))?.slice("--threads=".length) ?? 1);
    const implsWanted = args
      .find((a) => a.startsWith("--impls="))
      ?.slice("--impls=".length)
      .split(",");
    const only = args.find((a) => a.startsWith("--only="))?.slice("--only=".length);
    const samples = quick ? 5 : 11;
    for (const v of ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]) {
      const value = readEnv(v);
      if (value !== undefined)
        h.note(`${v}=${value} is set: native GEMM numbers are not representative; run without it`);
    }
    backends.openmp.setNumThreads(THREADS);
    try {
      await import("@backplane/backend-cpu-mkl");
      await import("@backplane/backend-nnpack");
      await backends.ready();
    } catch (err) {
      h.note(`backend-nnpack or backend-cpu-mkl did not load: ${reason(err)}`);
      return;
    }
    // The worker pool, so that the WASM kernels (nnpack's) run on THREADS threads as the
    // native libraries do; without it they run on one.
    const pool = THREADS > 1 ? await openPool() : "one thread";
    const native = backends.mkl.capability?.() as Record<string, unknown> | undefined;
    h.note(
      `backplane: openmp.numThreads ${backends.openmp.getNumThreads()} (WASM kernels: ${pool}); native GEMM: ${native ? `${native.library} ${native.version} (${native.path})` : "none loaded"}; weight transforms cached (NNPACK's precompute strategy; [uncached] turns it off)`,
    );

    const peers = new Map<string, Peer>();
    for (const [impl, open] of (THREADS === 1
      ? [
          ["tfjs-wasm", openTfjs],
          ["ort-web", openOrt],
        ]
      : []) as [string, () => Promise<Peer | string>][]) {
      try {
        const p = await open();
        if (typeof p === "string") h.note(`${impl}: unavailable: ${p}`);
        else peers.set(impl, p);
      } catch (err) {
        h.note(`${impl}: unavailable: ${reason(err)}`);
      }
    }

    const data = LAYERS.filter((l) => !only || l.name.includes(only)).map((l, i) => ({
      l,
      x: randomArray(
        l.x.reduce((a, b) => a * b),
        2 * i + 1,
      ),
      w: randomArray(
        l.w.reduce((a, b) => a * b),
        2 * i + 2,
      ),
    }));
    await withTorchServer(
      h,
      () => startTorch(data, THREADS),
      (t) =>
        `torch: torch ${t.info.version} (${t.python}), set_num_threads(${t.info.threads}), mkldnn ${t.info.mkldnn}, nnpack ${t.info.nnpack}; a python3 server timed in the same rounds as the others`,
      async (server) => {
        const torch = server && (await torchOutputs(server, data));
        await timeLayers(h, data, { peers, torch, implsWanted, samples });
      },
    );
  },
};
