/**
 * The real libcudnn.so.9, up to the GPU: for a table of convolutions and attentions (dtypes,
 * layouts, strides, groups, masks) the graphs this package builds are finalized by cuDNN
 * itself, the engines that take them are enumerated with their real numerical notes, the
 * flags screen those engines, and what cuDNN refuses comes back in cuDNN's own words.
 */
import { cudaStatus } from "@backplane/backend-cuda";
import { ones, randn, type Tensor } from "@backplane/core";
import { ops } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { CudnnError } from "../src/errors.ts";
import { GraphBuilder } from "../src/graph/builder.ts";
import { buildConvGraph } from "../src/graph/conv.ts";
import { buildSdpaGraph } from "../src/graph/sdpa.ts";
import { layoutOf } from "../src/graph/tensors.ts";
import { convSupport } from "../src/kernels/conv2d.ts";
import { NUMERICAL_NOTE } from "../src/native/api.ts";
import { destroyCandidate, enumeratedConfigs } from "../src/plan/engines.ts";
import { screen } from "../src/plan/select.ts";
import { maybeRuntime } from "../src/state.ts";
import { haveLibrary, skipLine } from "./helpers.ts";

const itReal = haveLibrary ? it : it.skip;
const itRealNoGpu = haveLibrary && !cudaStatus().available ? it : it.skip;
if (!haveLibrary) skipLine();
const lib = () => maybeRuntime()!.lib;

type Dt = "float32" | "float16" | "bfloat16";
const nhwc = (n: number, c: number, h: number, w: number, dtype: Dt) =>
  randn([n, h, w, c], { dtype }).permute([0, 3, 1, 2]);

interface ConvCase {
  name: string;
  x: (d: Dt) => Tensor;
  w: (d: Dt) => Tensor;
  opts?: Parameters<typeof ops.conv2d.prepare>[2];
  relu?: boolean;
}

const CONV: ConvCase[] = [
  {
    name: "3x3 pad 1",
    x: (d) => randn([2, 16, 14, 14], { dtype: d }),
    w: (d) => randn([32, 16, 3, 3], { dtype: d }),
    opts: { padding: 1 },
  },
  {
    name: "1x1",
    x: (d) => randn([1, 64, 7, 7], { dtype: d }),
    w: (d) => randn([16, 64, 1, 1], { dtype: d }),
  },
  {
    name: "7x7 stride 2 pad 3",
    x: (d) => randn([1, 3, 33, 31], { dtype: d }),
    w: (d) => randn([8, 3, 7, 7], { dtype: d }),
    opts: { stride: 2, padding: 3 },
  },
  {
    name: "dilation 2, padding > k/2",
    x: (d) => randn([1, 8, 13, 11], { dtype: d }),
    w: (d) => randn([8, 8, 3, 3], { dtype: d }),
    opts: { dilation: 2, padding: 4 },
  },
  {
    name: "groups 4",
    x: (d) => randn([2, 16, 9, 9], { dtype: d }),
    w: (d) => randn([8, 4, 3, 3], { dtype: d }),
    opts: { groups: 4, padding: 1 },
  },
  {
    name: "depthwise",
    x: (d) => randn([1, 32, 10, 10], { dtype: d }),
    w: (d) => randn([32, 1, 3, 3], { dtype: d }),
    opts: { groups: 32, padding: 1 },
  },
  {
    name: "same padding, even kernel",
    x: (d) => randn([1, 8, 9, 9], { dtype: d }),
    w: (d) => randn([8, 8, 4, 4], { dtype: d }),
    opts: { padding: "same" },
  },
  {
    name: "bias",
    x: (d) => randn([1, 8, 8, 8], { dtype: d }),
    w: (d) => randn([16, 8, 3, 3], { dtype: d }),
    opts: { padding: 1, bias: randn([16]) },
  },
  {
    name: "bias + relu",
    x: (d) => randn([1, 8, 8, 8], { dtype: d }),
    w: (d) => randn([16, 8, 3, 3], { dtype: d }),
    opts: { padding: 1, bias: randn([16]) },
    relu: true,
  },
  {
    name: "NHWC",
    x: (d) => nhwc(2, 16, 12, 12, d),
    w: (d) => nhwc(32, 16, 3, 3, d),
    opts: { padding: 1 },
  },
  {
    name: "NHWC depthwise stride 2",
    x: (d) => nhwc(1, 24, 15, 15, d),
    w: (d) => nhwc(24, 1, 3, 3, d),
    opts: { groups: 24, stride: 2, padding: 1 },
  },
];

function convGraph(c: ConvCase, dtype: Dt) {
  const x = c.x(dtype);
  const w = c.w(dtype);
  const bias = c.opts?.bias ? c.opts.bias.astype(dtype) : undefined;
  const p = ops.conv2d.prepare(x, w, { ...c.opts, bias });
  const b = new GraphBuilder(lib());
  const graph = buildConvGraph(b, p, layoutOf(x)!, { x: 16, w: 16, bias: 16 }, { relu: c.relu });
  return { b, graph };
}

describe("conv2d graphs on the real cuDNN", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    itReal(`${dtype}: every case finalizes and has engines that take it`, () => {
      const counts: Record<string, number> = {};
      for (const c of CONV) {
        const { b, graph } = convGraph(c, dtype);
        expect(graph.handle).not.toBe(0n);
        // cuDNN 9.24 crashes the process finalizing an engine of a depthwise graph when no
        // device exists, so those graphs are finalized here but their engines not listed.
        if (!/depthwise/.test(c.name)) {
          const engines = enumeratedConfigs(lib(), graph);
          counts[c.name] = engines.length;
          for (const e of engines) destroyCandidate(e);
        }
        b.dispose();
      }
      for (const c of CONV.filter((c) => !/depthwise/.test(c.name)))
        expect(counts[c.name], c.name).toBeGreaterThan(0);
    });
  }

  itReal("allowTf32 and deterministic screen the real engines by their notes (float32)", () => {
    const { b, graph } = convGraph(CONV[0]!, "float32");
    const engines = enumeratedConfigs(lib(), graph);
    const tensorCore = engines.filter((e) =>
      e.numericalNotes.includes(NUMERICAL_NOTE.CUDNN_NUMERICAL_NOTE_TENSOR_CORE),
    );
    expect(tensorCore.length).toBeGreaterThan(0);
    const flags = { deterministic: false, allowTf32: true, benchmark: false, benchmarkLimit: 10 };
    const on = screen(engines, "float32", flags);
    const off = screen(engines, "float32", { ...flags, allowTf32: false });
    expect(on.allowed.length - off.allowed.length).toBe(tensorCore.length);
    expect(off.excluded.map((e) => e.index).sort()).toEqual(tensorCore.map((e) => e.index).sort());
    const det = screen(engines, "float32", { ...flags, deterministic: true });
    const nondet = engines.filter((e) =>
      e.numericalNotes.includes(NUMERICAL_NOTE.CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC),
    );
    expect(det.allowed.length).toBe(engines.length - nondet.length);
    for (const e of engines) destroyCandidate(e);
    b.dispose();
  });

  itReal(
    "zero input channels: cuDNN refuses the graph, and convSupport screens them out first",
    () => {
      const x = randn([1, 0, 5, 5]);
      const p = ops.conv2d.prepare(x, randn([2, 0, 3, 3]), {});
      const b = new GraphBuilder(lib());
      try {
        expect(() => buildConvGraph(b, p, layoutOf(x)!, { x: 16, w: 16 })).toThrow(
          /CUDNN_STATUS_BAD_PARAM/,
        );
      } finally {
        b.dispose();
      }
      expect(convSupport(p)).toMatch(/no empty input-channel dimension/);
    },
  );

  itReal("a graph cuDNN refuses comes back with cuDNN's own reason", () => {
    const b = new GraphBuilder(lib());
    const x = b.tensor({
      uid: 1,
      dtype: "CUDNN_DATA_HALF",
      dims: [1, 8, 16, 16],
      strides: [2048, 256, 16, 1],
    });
    const w = b.tensor({
      uid: 2,
      dtype: "CUDNN_DATA_HALF",
      dims: [4, 8, 3, 3],
      strides: [72, 9, 3, 1],
    });
    // The output is one row short of what a 3x3 convolution with padding 1 gives.
    const y = b.tensor({
      uid: 3,
      dtype: "CUDNN_DATA_HALF",
      dims: [1, 4, 15, 16],
      strides: [960, 240, 16, 1],
    });
    const conv = {
      prePadding: [1, 1],
      postPadding: [1, 1],
      stride: [1, 1],
      dilation: [1, 1],
      compute: "CUDNN_DATA_FLOAT" as const,
    };
    let err: unknown;
    try {
      b.convolution(x, w, y, conv);
    } catch (e) {
      err = e;
    }
    b.dispose();
    expect(err).toBeInstanceOf(CudnnError);
    expect((err as CudnnError).message).toMatch(
      /OPERATION_CONVOLUTION_FORWARD.*CUDNN_STATUS_BAD_PARAM: .*spatial/,
    );
  });

  itRealNoGpu(
    "without a GPU, choosing a plan is refused with cuDNN's reason for each engine",
    () => {
      const rt = maybeRuntime()!;
      const p = ops.conv2d.prepare(
        randn([1, 8, 8, 8], { dtype: "float16" }),
        randn([8, 8, 3, 3], { dtype: "float16" }),
        { padding: 1 },
      );
      const flags = { deterministic: false, allowTf32: true, benchmark: false, benchmarkLimit: 10 };
      expect(() =>
        rt.plan(
          "no-gpu",
          (b) => buildConvGraph(b, p, "NCHW", { x: 16, w: 16 }),
          "float16",
          flags,
          0n,
        ),
      ).toThrow(
        /none of the \d+ engines cuDNN proposed can run: engine \d+: cudnnBackendFinalize\(ENGINECFG\) failed: CUDNN_STATUS_NOT_SUPPORTED/,
      );
    },
  );
});

describe("attention graphs on the real cuDNN", () => {
  const cases = [
    { name: "plain", opts: {} },
    { name: "causal", opts: { isCausal: true } },
    { name: "additive mask", opts: { attnMask: randn([64, 96]) } },
    { name: "bool mask", opts: { attnMask: ones([1, 1, 64, 96], { dtype: "bool" }) } },
    { name: "scale", opts: { scale: 0.3 } },
  ];
  for (const dtype of ["float16", "bfloat16"] as const) {
    for (const E of [64, 128]) {
      itReal(
        `${dtype}, head dim ${E}: plain, causal, additive and bool masks, scale, GQA finalize`,
        () => {
          for (const c of cases) {
            for (const headsKV of [4, 2]) {
              const q = randn([2, 4, 64, E], { dtype });
              const k = randn([2, headsKV, 96, E], { dtype });
              const v = randn([2, headsKV, 96, E], { dtype });
              const opts = { ...c.opts, enableGqa: headsKV !== 4 } as Record<string, unknown>;
              if (opts.attnMask)
                opts.attnMask =
                  (opts.attnMask as Tensor).dtype === "bool"
                    ? opts.attnMask
                    : (opts.attnMask as Tensor).astype(dtype);
              const p = ops.scaledDotProductAttention.prepare(q, k, v, opts);
              const b = new GraphBuilder(lib());
              const graph = buildSdpaGraph(b, p);
              const engines = enumeratedConfigs(lib(), graph);
              expect(engines.length, `${c.name}, ${headsKV} kv heads`).toBeGreaterThan(0);
              for (const e of engines) destroyCandidate(e);
              b.dispose();
            }
          }
        },
      );
    }
  }
});
