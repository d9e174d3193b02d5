/**
 * The conv2d plan key must tell apart problems whose graphs differ. padding "same" with an
 * even kernel pads one more row/column after the input than before (post padding 1), so it has
 * the same input, weight, stride and top/left padding as padding 0 but a larger output: one
 * plan for both would write the "same" output's dims into the smaller tensor (out of bounds)
 * or leave the last row and column of the larger one unwritten.
 */
import "../src/index.ts";
import { backends, conv2d, randn, refreshAvailability } from "@backplane/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RecordingLayer } from "../src/recording.ts";
import { installLayer } from "../src/state.ts";
import { fakeContext, hostCudaMemory } from "./helpers.ts";

const memory = hostCudaMemory();
afterAll(() => memory.restore());

describe("conv2d plan keys", () => {
  let undo: () => void;
  let device: ReturnType<typeof fakeContext>;
  beforeAll(() => {
    undo = installLayer(new RecordingLayer([{ index: 2, numericalNotes: [], workspaceBytes: 0 }]));
    device = fakeContext();
    refreshAvailability();
  });
  afterAll(() => {
    device.restore();
    undo();
    refreshAvailability();
  });

  it('padding "same" (even kernel) and padding 0 get their own plans', () => {
    backends.cudnn.clearPlanCache();
    const x = randn([1, 2, 5, 5]).to("cuda");
    const w = randn([3, 2, 2, 2]).to("cuda");
    expect(conv2d(x, w, { padding: "same" }).shape).toEqual([1, 3, 5, 5]);
    expect(conv2d(x, w, { padding: 0 }).shape).toEqual([1, 3, 4, 4]);
    expect(backends.cudnn.plans()).toHaveLength(2);
    // Each problem hits its own plan afterwards.
    conv2d(x, w, { padding: "same" });
    conv2d(x, w, { padding: 0 });
    expect(backends.cudnn.plans()).toHaveLength(2);
  });
});
