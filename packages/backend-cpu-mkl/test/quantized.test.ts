/**
 * The onednn quantized engine (dnnl_gemm_u8s8s32): PyTorch's numbers bit for bit (the
 * testkit's cases), chosen by backends.quantized.engine, offered only while oneDNN loads.
 */
import {
  backends,
  explain,
  FlagError,
  linearPrepack,
  quantizePerTensor,
  randn,
  ready,
} from "@backplane/core";
import { restartInit } from "@backplane/core/backend";
import { runQuantizedConformance } from "@backplane/testkit";
import { describe, expect } from "vitest";
import { configureDnnlSearch, DNNL_BACKEND } from "../src/index.ts";
import { itDnnl } from "./dnnl-helpers.ts";

const layer = () => {
  const w = quantizePerTensor(randn([8, 16], { seed: 1 }), 0.01, 0, "qint8");
  const x = quantizePerTensor(randn([3, 16], { seed: 2 }), 0.02, 128, "quint8");
  return { x, packed: linearPrepack(w) };
};

/** The reason the engine refuses on this CPU (no VNNI), or undefined. */
function vnniRefusal(): string | undefined {
  const { x, packed } = layer();
  const c = explain("quantizedLinear", x, packed, 0.05, 128).candidates.find(
    (k) => k.kernel === "onednn-qlinear",
  );
  return c?.reason?.includes("VNNI") ? c.reason : undefined;
}

describe("quantized engine onednn", () => {
  itDnnl("gives PyTorch's integers on every case (where the CPU has VNNI)", async () => {
    await ready(DNNL_BACKEND);
    const refusal = vnniRefusal();
    if (refusal) {
      console.log(`[backend-cpu-mkl] onednn engine conformance skipped: ${refusal}`);
      return;
    }
    const report = runQuantizedConformance({ kernels: { quantizedLinear: "onednn-qlinear" } });
    console.log(`[backend-cpu-mkl] ${report}`);
    report.assertPassed();
    expect(report.results.some((r) => r.kernel === "onednn-qlinear")).toBe(true);
  });

  itDnnl("is a supported engine, and the engine setting decides what runs", async () => {
    await ready(DNNL_BACKEND);
    expect(backends.quantized.supportedEngines).toContain("onednn");
    const { x, packed } = layer();
    const selected = () => explain("quantizedLinear", x, packed, 0.05, 128);
    {
      using _ = backends.quantized.flags({ engine: "onednn" as never });
      expect(selected().selected).toBe(vnniRefusal() ? "reference" : "onednn-qlinear");
    }
    {
      using _ = backends.mkldnn.flags({ enabled: false });
      const c = selected().candidates.find((k) => k.kernel === "onednn-qlinear");
      expect(c?.reason).toBe("disabled by flag mkldnn.enabled = false");
    }
  });

  itDnnl(
    "is not offered while oneDNN is missing: setting it is a FlagError naming the others",
    async () => {
      configureDnnlSearch([]);
      restartInit(DNNL_BACKEND);
      const saved = process.env.BACKPLANE_DNNL_PATH;
      delete process.env.BACKPLANE_DNNL_PATH;
      try {
        await ready(DNNL_BACKEND).catch(() => {});
        expect(backends.quantized.supportedEngines).not.toContain("onednn");
        expect(() => {
          (backends.quantized as { engine: string }).engine = "onednn";
        }).toThrow(FlagError);
        expect(() => {
          (backends.quantized as { engine: string }).engine = "onednn";
        }).toThrow(/none/);
      } finally {
        if (saved !== undefined) process.env.BACKPLANE_DNNL_PATH = saved;
        configureDnnlSearch(undefined);
        restartInit(DNNL_BACKEND);
        await ready(DNNL_BACKEND);
      }
      expect(backends.quantized.supportedEngines).toContain("onednn");
    },
  );
});
