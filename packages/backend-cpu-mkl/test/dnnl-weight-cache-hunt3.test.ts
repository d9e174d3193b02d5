/**
 * onednn-conv keeps, per weight tensor, a copy of its bytes and its reorder into oneDNN's
 * layout (up to 32 weights). A disposed weight is never looked up again, so its entry held
 * both until 32 newer weights pushed it out: replacing a model left its layers' copies
 * allocated. They now go when the cache next takes a weight. Results are checked against
 * the float64 reference kernel.
 */
import { conv2d, memoryStats, randn, type Tensor, withKernelPriority } from "@backplane/core";
import { maxAbsDiff } from "@backplane/testkit";
import { expect } from "vitest";
import { itDnnl } from "./dnnl-helpers.ts";

const liveBuffers = () => memoryStats("cpu").liveBuffers;

function onednnConv(x: Tensor, w: Tensor): Tensor {
  const y = withKernelPriority("conv2d", ["onednn-conv"], () => conv2d(x, w, { padding: 1 }));
  const x64 = x.astype("float64");
  const w64 = w.astype("float64");
  const ref = withKernelPriority("conv2d", ["reference"], () => conv2d(x64, w64, { padding: 1 }));
  expect(maxAbsDiff(y, ref)).toBeLessThan(1e-4);
  for (const t of [x64, w64, ref]) t.dispose();
  return y;
}

itDnnl("onednn-conv frees a disposed weight's cached copy when it takes the next weight", () => {
  const x = randn([1, 16, 9, 9], { seed: 41 });
  const first = randn([16, 16, 3, 3], { seed: 42 });
  onednnConv(x, first).dispose();
  first.dispose(); // the model is replaced
  const second = randn([16, 16, 3, 3], { seed: 43 });
  const withSecond = liveBuffers();
  onednnConv(x, second).dispose();
  // The second weight's entry (its copy and its reorder) takes the first's place: before
  // the fix the first's stayed too (2 more buffers).
  expect(liveBuffers()).toBeLessThanOrEqual(withSecond);
  second.dispose();
  x.dispose();
});
