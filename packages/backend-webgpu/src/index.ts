/// <reference types="@webgpu/types" />
/**
 * @backplane/backend-webgpu: device "webgpu" and WGSL kernels. Importing it registers
 * the backend "webgpu" (answering for backends.webgpu) and its device memory, and starts
 * opening the device in the background:
 *
 *   import { backends, matmul, randn } from "@backplane/core";
 *   import "@backplane/backend-webgpu";
 *   await backends.ready();
 *   const a = randn([256, 256]).to("webgpu");
 *   const c = matmul(a, a);
 *   const host = await c.data(); // readback is asynchronous on WebGPU
 *
 * The GPU comes from navigator.gpu (browsers, Deno) or the optional `webgpu` package
 * (Dawn) on Node and Bun, imported lazily.
 */
import { initBackends, registerBackend } from "@backplane/core/backend";
import { WEBGPU_BACKEND, webgpuBackend } from "./backend.ts";

registerBackend(webgpuBackend);
// Open the device in the background, so it is usually ready by first use.
void initBackends(WEBGPU_BACKEND).catch(() => {});

export * from "./backend.ts";

export {
  type AdapterInfo,
  type DeviceLimits,
  type StaticEnvironment,
  staticAvailability,
  type WebGPUConfig,
} from "./gpu.ts";
export { type GpuHandle, webgpuMemory } from "./memory.ts";
export { type PoolCounters, sizeClass } from "./pool.ts";
