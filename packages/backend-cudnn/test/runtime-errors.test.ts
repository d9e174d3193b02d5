/**
 * The cuDNN runtime's error paths give back what they made: a handle whose cudnnSetStream
 * failed is destroyed, not cached on the legacy stream (the next call binds a new one), and a
 * benchmark run that throws releases every execution plan built for the timing.
 */
import { randn } from "@backplane/core";
import { ops } from "@backplane/core/backend";
import { afterAll, describe, expect, it } from "vitest";
import { CudnnError } from "../src/errors.ts";
import { buildConvGraph } from "../src/graph/conv.ts";
import { STATUS } from "../src/native/api.ts";
import { RecordingLayer } from "../src/recording.ts";
import { CudnnRuntime } from "../src/runtime.ts";
import { fakeContext } from "./helpers.ts";

const device = fakeContext();
afterAll(() => device.restore());

describe("cuDNN runtime error paths", () => {
  it("a failed cudnnSetStream destroys the handle; the next call makes a bound one", () => {
    const layer = new RecordingLayer([{ index: 1, numericalNotes: [] }]);
    const rt = new CudnnRuntime(layer);
    const destroyed: bigint[] = [];
    const symbols = layer.symbols as unknown as Record<string, (...a: unknown[]) => unknown>;
    const bind = symbols.cudnnSetStream!;
    symbols.cudnnDestroy = (h: unknown) => {
      destroyed.push(h as bigint);
      return 0;
    };
    symbols.cudnnSetStream = () => STATUS.CUDNN_STATUS_INTERNAL_ERROR;
    expect(() => rt.handle(device.ctx, 0)).toThrow(CudnnError);
    expect(destroyed).toHaveLength(1);
    symbols.cudnnSetStream = bind;
    const h = rt.handle(device.ctx, 0);
    expect(h).not.toBe(destroyed[0]);
    expect(layer.calls.filter((c) => c === "cudnnCreate")).toHaveLength(2);
    expect(rt.handle(device.ctx, 0)).toBe(h);
  });

  it("a benchmark run that throws releases every plan built for it", () => {
    const layer = new RecordingLayer([
      { index: 3, numericalNotes: [], ms: 1, workspaceBytes: 0 },
      { index: 5, numericalNotes: [], ms: 2, workspaceBytes: 0 },
    ]);
    const rt = new CudnnRuntime(layer);
    const p = ops.conv2d.prepare(randn([1, 4, 5, 5]), randn([2, 4, 3, 3]), { padding: 1 });
    const build = (b: Parameters<typeof buildConvGraph>[0]) =>
      buildConvGraph(b, p, "NCHW", { x: 16, w: 16 });
    const flags = { deterministic: false, allowTf32: true, benchmark: true, benchmarkLimit: 10 };
    const time = () => {
      throw new Error("the timing run failed");
    };
    expect(() => rt.plan("k", build, "float32", flags, 1n, time)).toThrow(/timing run failed/);
    expect(layer.liveDescriptors).toBe(0);
  });
});
