/**
 * Attention kernel selection: each kernel's supports() reasons (pure, over device facts),
 * canUseFlashAttention and friends reading them through the dispatcher, and the launches
 * each family makes (RecordingLayer: arguments checked, nothing computed).
 */
import {
  backends,
  canUseEfficientAttention,
  canUseFlashAttention,
  explain,
  isFlashAttentionAvailable,
  nn,
  randn,
  SDPAParams,
  SDPBackend,
  scaledDotProductAttention,
  sdpaRefusals,
  tensor,
} from "@backplane/core";
import { ops } from "@backplane/core/backend";
import { describe, expect, it } from "vitest";
import { efficientSupport, flashSupport, launchArg, mathSupport } from "../src/internals.ts";
import { attentionOffsets } from "../src/kernels/attention/kernels.ts";
import { captureWarnings, SM75, SM80, withRecording } from "./helpers.ts";

type Dt = "float32" | "float16" | "bfloat16" | "float64";
const qkv = (shape: number[], dtype: Dt, ev = shape[shape.length - 1]!) => {
  const kv = [...shape];
  const v = [...shape.slice(0, -1), ev];
  return [
    randn(shape, { seed: 1, dtype }),
    randn(kv, { seed: 2, dtype }),
    randn(v, { seed: 3, dtype }),
  ];
};
const params = (shape: number[], dtype: Dt, opts: Record<string, unknown> = {}, ev?: number) => {
  const [q, k, v] = qkv(shape, dtype, ev);
  return ops.scaledDotProductAttention.prepare(q!, k!, v!, opts);
};

describe("supports() reasons (pure)", () => {
  it("FLASH_ATTENTION: fp16/bf16, sm80+, no mask, head dim % 8 and <= 256, Ev == E", () => {
    expect(flashSupport(params([2, 4, 16, 64], "float16"), SM80)).toBe(true);
    expect(flashSupport(params([2, 4, 16, 64], "bfloat16"), SM80)).toBe(true);
    expect(flashSupport(params([2, 4, 16, 64], "float16"), SM75)).toBe(
      "flash attention needs compute capability 8.0+ (sm80); Fake T4 is 7.5",
    );
    expect(flashSupport(params([2, 4, 16, 64], "float32"), SM80)).toBe(
      "flash attention needs float16 or bfloat16 inputs, got float32",
    );
    const mask = tensor(new Uint8Array(16 * 16).fill(1), { shape: [16, 16], dtype: "bool" });
    expect(flashSupport(params([2, 4, 16, 64], "float16", { attnMask: mask }), SM80)).toMatch(
      /does not support attnMask/,
    );
    expect(flashSupport(params([1, 1, 8, 512], "float16"), SM80)).toBe(
      "flash attention supports head dims up to 256; got 512",
    );
    expect(flashSupport(params([1, 1, 8, 12], "float16"), SM80)).toBe(
      "flash attention needs the head dim to be a multiple of 8; got 12",
    );
    expect(flashSupport(params([1, 1, 8, 64], "float16", {}, 32), SM80)).toMatch(/E=64, Ev=32/);
    expect(
      flashSupport(params([1, 1, 8, 256], "float16"), {
        ...SM80,
        sharedMemoryPerBlockOptin: 48 * 1024,
      }),
    ).toMatch(/needs 82176 bytes of shared memory per block; Fake A100 allows 49152/);
    // Dropout and causal are fine.
    expect(
      flashSupport(params([1, 2, 8, 64], "float16", { dropoutP: 0.1, isCausal: true }), SM80),
    ).toBe(true);
    // The tensor-core kernel: its head dims only, and no dropout whose 1 / (1 - p) leaves float16.
    expect(flashSupport(params([1, 2, 8, 64], "float16", { dropoutP: 0.1 }), SM80, true)).toBe(
      true,
    );
    expect(flashSupport(params([1, 2, 8, 40], "float16"), SM80, true)).toMatch(
      /runs head dims 16, 32, 64, 96, 128; got 40 \(cuda-flash-simt runs it\)/,
    );
    expect(
      flashSupport(params([1, 2, 8, 64], "float16", { dropoutP: 0.99999 }), SM80, true),
    ).toMatch(/overflows float16 above dropoutP = 0\.99998/);
    expect(flashSupport(params([1, 2, 8, 64], "bfloat16", { dropoutP: 0.99999 }), SM80, true)).toBe(
      true,
    );
    expect(flashSupport(params([1, 2, 8, 64], "float16", { dropoutP: 0.99999 }), SM80)).toBe(true);
  });

  it("EFFICIENT_ATTENTION: fp32/fp16 (bf16 on sm80+), masks, head dims <= 256", () => {
    const mask = tensor(new Float32Array(8 * 8), { shape: [8, 8] });
    expect(efficientSupport(params([1, 2, 8, 40], "float32", { attnMask: mask }), SM75)).toBe(true);
    expect(efficientSupport(params([1, 2, 8, 40], "bfloat16"), SM75)).toMatch(
      /supports bfloat16 on compute capability 8.0\+ only; Fake T4 is 7.5/,
    );
    expect(efficientSupport(params([1, 2, 8, 300], "float16"), SM80)).toMatch(
      /up to 256; got E=300/,
    );
    expect(
      efficientSupport(params([1, 2, 8, 40], "float16"), { ...SM80, major: 7, minor: 0 }),
    ).toMatch(/compute capability 7.0; the package's PTX needs 7.5\+/);
  });

  it("MATH: every dtype, needs cuBLAS", () => {
    expect(mathSupport(params([1, 2, 8, 40], "float64"), SM75, undefined)).toBe(true);
    expect(mathSupport(params([1, 2, 8, 40], "float32"), SM80, "libcublas.so.13 not found")).toBe(
      "the math path needs cuBLAS: libcublas.so.13 not found",
    );
  });

  it("sizes past the kernels' int arguments are refused with the reason, not wrapped", () => {
    // L = 2^31 rows of one key: 12 GiB of math-path scores, which fit half of a 40 GiB device.
    const p = { ...params([1, 1, 8, 64], "float16"), L: 2 ** 31, S: 1 };
    const why = /take int sizes \(at most 2147483647\); got L=2147483648/;
    expect(mathSupport(p, SM80, undefined)).toMatch(why);
    expect(efficientSupport(p, SM80)).toMatch(why);
    expect(flashSupport(p, SM80)).toMatch(why);
    expect(flashSupport(p, SM80, true)).toMatch(why);
    // cuBLAS's batchCount is an int too (the fused kernels stop at 65535 grid rows before it).
    const wide = { ...params([1, 1, 1, 8], "float16"), batchShape: [2 ** 31] };
    expect(mathSupport(wide, SM80, undefined)).toMatch(/got batch=2147483648/);
    expect(mathSupport({ ...p, L: 2 ** 31 - 1 }, SM80, undefined)).toBe(true);
  });

  it("maps GQA query heads to their key/value heads in the offset tables", () => {
    const q = randn([1, 4, 3, 8], { seed: 4 });
    const kv = randn([1, 2, 5, 8], { seed: 5 });
    const off = attentionOffsets(
      ops.scaledDotProductAttention.prepare(q, kv, kv, { enableGqa: true }),
    );
    expect(Array.from(off.q, Number)).toEqual([0, 24, 48, 72]);
    expect(Array.from(off.k, Number)).toEqual([0, 0, 40, 40]);
    expect(off.m).toBeUndefined();
  });
});

describe("canUse* and the launches (RecordingLayer)", () => {
  const onCuda = (ts: ReturnType<typeof qkv>) => ts.map((t) => t.to("cuda"));

  it("canUseFlashAttention reads the kernels' reasons, with debug output", async () => {
    await withRecording({ devices: [SM80] }, () => {
      const [q, k, v] = onCuda(qkv([2, 4, 16, 64], "float16"));
      expect(isFlashAttentionAvailable()).toBe(true);
      expect(canUseFlashAttention(new SDPAParams(q!, k!, v!))).toBe(true);
      const mask = tensor(new Uint8Array(256).fill(1), { shape: [16, 16], dtype: "bool" }).to(
        "cuda",
      );
      let ok = true;
      const lines = captureWarnings(() => {
        ok = canUseFlashAttention(new SDPAParams(q!, k!, v!, mask), { debug: true });
      });
      expect(ok).toBe(false);
      expect(lines.join("\n")).toContain(
        "FLASH_ATTENTION refused: cuda-flash (cuda): flash attention does not support attnMask",
      );
      expect(canUseEfficientAttention(new SDPAParams(q!, k!, v!, mask))).toBe(true);
      using _ = backends.cuda.flags({ flashSdp: false });
      expect(sdpaRefusals(SDPBackend.FLASH_ATTENTION, new SDPAParams(q!, k!, v!))).toEqual([
        "cuda-flash (cuda): disabled by flag cuda.flashSdp = false",
        "cuda-flash-simt (cuda): disabled by flag cuda.flashSdp = false",
      ]);
    });
  });

  it("on an sm_75 device flash refuses and the memory-efficient kernel runs", async () => {
    await withRecording({ devices: [SM75] }, (layer) => {
      const [q, k, v] = onCuda(qkv([1, 2, 10, 32], "float16"));
      expect(sdpaRefusals(SDPBackend.FLASH_ATTENTION, new SDPAParams(q!, k!, v!))).toEqual([
        "cuda-flash (cuda): flash attention needs compute capability 8.0+ (sm80); Fake T4 is 7.5",
        "cuda-flash-simt (cuda): flash attention needs compute capability 8.0+ (sm80); Fake T4 is 7.5",
      ]);
      const fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION];
      const out = nn.attention.withSdpaKernel(fused, () =>
        scaledDotProductAttention(q!, k!, v!, { isCausal: true, seed: 3 }),
      );
      expect(out.shape).toEqual([1, 2, 10, 32]);
      const l = layer.launches.at(-1)!;
      expect(l.kernel).toBe("mem_efficient_fwd_f16");
      expect(l.grid).toEqual([3, 2, 1]); // ceil(10 / 4 warps), batch x heads
      expect(l.block).toEqual([128, 1, 1]);
      expect(l.sharedBytes).toBe(4 * 32 * 4);
      expect(launchArg(l, 9, "i32")).toBe(0); // no mask
      expect(launchArg(l, 18, "i32")).toBe(10); // L
      expect(launchArg(l, 23, "i32")).toBe(1); // causal
      expect(launchArg(l, 22, "f32")).toBeCloseTo(1 / Math.sqrt(32), 6);
      expect(launchArg(l, 25, "u32")).toBe(3); // seed
    });
  });

  it("FLASH_ATTENTION launches the tensor-core kernel for its head dims, flash_fwd for the others", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      const flash = <R>(f: () => R) => nn.attention.withSdpaKernel([SDPBackend.FLASH_ATTENTION], f);
      const [q, k, v] = onCuda(qkv([2, 3, 40, 128], "bfloat16"));
      flash(() => scaledDotProductAttention(q!, k!, v!, { dropoutP: 0.25, seed: 11 }));
      let l = layer.launches.at(-1)!;
      expect(l.kernel).toBe("flash_tc_fwd_bf16_d128");
      expect(l.grid).toEqual([1, 6, 1]); // ceil(40 / 64 rows), 2 x 3
      expect(l.block).toEqual([128, 1, 1]);
      // 64 Q rows (one m-tile a warp at d = 128), K and V tiles double-buffered.
      expect(l.sharedBytes).toBe((64 + 4 * 64) * 136 * 2);
      expect(launchArg(l, 24, "f32")).toBeCloseTo(0.25, 6);
      // Above 48 KiB the kernel opts into more shared memory first.
      expect(layer.callsOf("cuFuncSetAttribute").at(-1)!.args.slice(1)).toEqual([
        8,
        (64 + 4 * 64) * 136 * 2,
      ]);
      const [q1, k1, v1] = onCuda(qkv([1, 2, 130, 64], "float16"));
      flash(() => scaledDotProductAttention(q1!, k1!, v1!, { isCausal: true }));
      l = layer.launches.at(-1)!;
      expect(l.kernel).toBe("flash_tc_fwd_f16_d64");
      expect(l.grid).toEqual([2, 2, 1]); // two m-tiles a warp up to d = 96: 128 rows a block
      expect(l.sharedBytes).toBe((128 + 4 * 64) * 72 * 2);
      // A head dim without a tensor-core kernel: the plain kernel, 16 rows a block.
      const [q3, k3, v3] = onCuda(qkv([2, 3, 40, 40], "bfloat16"));
      flash(() => scaledDotProductAttention(q3!, k3!, v3!));
      l = layer.launches.at(-1)!;
      expect(l.kernel).toBe("flash_fwd_bf16");
      expect(l.grid).toEqual([3, 6, 1]); // ceil(40 / 16 rows)
      expect(l.sharedBytes).toBe(16 * 40 * 4 + 64 * 42 * 2 + 64 * 40 * 2);
      // Above 48 KiB the kernel opts into more shared memory first.
      const [q2, k2, v2] = onCuda(qkv([1, 1, 16, 256], "float16"));
      flash(() => scaledDotProductAttention(q2!, k2!, v2!));
      const attr = layer.callsOf("cuFuncSetAttribute").at(-1)!;
      expect(attr.args.slice(1)).toEqual([8, 16 * 256 * 4 + 64 * 258 * 2 + 64 * 256 * 2]);
    });
  });

  it("by default the tensor-core flash kernel runs first, then MATH while its scores fit in half the device, then the plain fused kernels", async () => {
    // Measured on an H100: tensor-core flash 2.2x-6.0x faster than the math path, which ran
    // 10x-90x faster than the plain CUDA C flash kernel on an H200.
    await withRecording({ devices: [SM80] }, () => {
      const [q, k, v] = onCuda(qkv([1, 2, 64, 64], "float16"));
      expect(explain("scaledDotProductAttention", q, k, v).selected).toBe("cuda-flash");
      const [q40, k40, v40] = onCuda(qkv([1, 2, 64, 40], "float16"));
      const e40 = explain("scaledDotProductAttention", q40, k40, v40);
      expect(e40.selected).toBe("cuda-math");
      expect(e40.candidates.find((c) => c.kernel === "cuda-flash")!.reason).toBe(
        "the tensor-core flash kernel runs head dims 16, 32, 64, 96, 128; got 40 (cuda-flash-simt runs it)",
      );
      // 2 heads x 100,000^2 scores x (4 + 2) bytes = 120 GB: more than half of 40 GiB.
      const [bq, bk, bv] = onCuda(qkv([1, 2, 100_000, 8], "float16"));
      const e = explain("scaledDotProductAttention", bq, bk, bv);
      expect(e.selected).toBe("cuda-flash-simt");
      expect(e.candidates.find((c) => c.kernel === "cuda-math")!.reason).toMatch(
        /score matrices need 111\.8 GiB, more than half of Fake A100's 40 GiB/,
      );
    });
  });

  it("MATH runs cuBLAS, the softmax kernel, cuBLAS", async () => {
    await withRecording({ devices: [SM80] }, (layer) => {
      const [q, k, v] = onCuda(qkv([2, 2, 6, 16], "float32", 8));
      const mask = tensor(new Float32Array(36), { shape: [6, 6] }).to("cuda");
      layer.clear();
      nn.attention.withSdpaKernel([SDPBackend.MATH], () =>
        scaledDotProductAttention(q!, k!, v!, { attnMask: mask }),
      );
      const seq = layer.names().filter((n) => n.startsWith("cublasGemm") || n === "cuLaunchKernel");
      expect(seq).toEqual([
        "cublasGemmStridedBatchedEx",
        "cuLaunchKernel",
        "cublasGemmStridedBatchedEx",
      ]);
      expect(layer.launches[0]!.kernel).toBe("attn_softmax_f32");
      expect(launchArg(layer.launches[0]!, 4, "i32")).toBe(2); // additive mask
      const [qk, pv] = layer.callsOf("cublasGemmStridedBatchedEx");
      // Q K^T: cuBLAS computes S^T = K Q^T, so transa = T (K read as K^T^T), m = S, n = L, k = E.
      expect(qk!.args.slice(1, 6)).toEqual([1, 0, 6, 6, 16]);
      expect(qk!.args[17]).toBe(0); // scores in CUDA_R_32F
      expect(pv!.args.slice(3, 6)).toEqual([8, 6, 6]); // m = Ev, n = L, k = S
    });
  });
});
