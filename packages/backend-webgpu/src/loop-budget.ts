/// <reference types="@webgpu/types" />
import { MAP_READ_MODE, Usage } from "./pool.ts";

/**
 * How many loop iterations one shader invocation may run before the driver cuts its loops
 * short. Mesa's llvmpipe (lavapipe, Deno's software Vulkan here) stops every loop of an
 * invocation once their iterations together reach 65,535: a single loop of 100,000 counted
 * 65,535; two of 40,000 counted 40,000 and 25,534. The shader then goes on with whatever
 * it holds, so a kernel past the budget returns plausible wrong numbers (attention over
 * 600 keys of 64 dims dropped its last keys). Measured once per device by counting such a
 * loop; kernels whose loops could pass it refuse with the reason (loopProblem).
 */

/** Iterations asked of the probe: a driver that runs them all is taken to have no budget. */
const PROBE_ITERATIONS = 1 << 20;

const PROBE_WGSL = `@group(0) @binding(0) var<storage, read_write> count: array<u32, 1>;
@group(0) @binding(1) var<storage, read> limit: array<u32, 1>;
@compute @workgroup_size(1)
fn main() {
  var c = 0u;
  for (var i = 0u; i < limit[0]; i++) { c++; }
  count[0] = c;
}`;

/** The loop iterations an invocation of `device` runs; Infinity when the probe ran them all. */
export async function measureLoopBudget(device: GPUDevice): Promise<number> {
  const usage = Usage;
  const count = device.createBuffer({ size: 4, usage: usage.STORAGE | usage.COPY_SRC });
  const limit = device.createBuffer({ size: 4, usage: usage.STORAGE | usage.COPY_DST });
  const read = device.createBuffer({ size: 4, usage: usage.MAP_READ | usage.COPY_DST });
  try {
    device.queue.writeBuffer(limit, 0, Uint32Array.of(PROBE_ITERATIONS));
    const module = device.createShaderModule({ code: PROBE_WGSL });
    const pipeline = device.createComputePipeline({
      layout: "auto",
      compute: { module, entryPoint: "main" },
    });
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: count } },
        { binding: 1, resource: { buffer: limit } },
      ],
    });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(1);
    pass.end();
    encoder.copyBufferToBuffer(count, 0, read, 0, 4);
    device.queue.submit([encoder.finish()]);
    await read.mapAsync(MAP_READ_MODE);
    const counted = new Uint32Array(read.getMappedRange())[0];
    read.unmap();
    return counted >= PROBE_ITERATIONS ? Number.POSITIVE_INFINITY : counted;
  } finally {
    for (const b of [count, limit, read]) b.destroy();
  }
}

/**
 * Why a kernel whose invocations run up to `iterations` loop iterations cannot run within
 * the device's budget (its numbers would be wrong), or undefined.
 */
export function loopProblem(
  s: { loopBudget: number; info: { description: string; device: string; vendor: string } },
  iterations: number,
  what: string,
): string | undefined {
  if (iterations <= s.loopBudget) return undefined;
  const adapter = s.info.description || s.info.device || s.info.vendor || "this adapter";
  return `${what} needs up to ${Math.ceil(iterations)} loop iterations in one shader invocation; ${adapter} stops an invocation's loops after ${s.loopBudget}, which would give wrong numbers: run it on the cpu (.to("cpu"))`;
}
