/**
 * The "cuda" DeviceContext (core's device contract): what cuDNN and other libraries that run
 * on CUDA devices use of this package without importing it — device facts, the stream all
 * work is ordered on, scratch memory from the caching allocator, tensor addresses.
 */
import type { DeviceBuffer, DeviceContext } from "@backplane/core/backend";
import { cudaStatus, currentRuntime } from "./state.ts";
import { dataPtr, deviceOf } from "./tensors.ts";

export const cudaContext: DeviceContext = {
  deviceType: "cuda",
  provider: "@backplane/backend-cuda",
  unavailableReason: () => {
    const st = cudaStatus();
    return st.available ? undefined : (st.reason ?? "CUDA is not available");
  },
  deviceCount: () => cudaStatus().devices.length,
  properties: (index) => {
    const d = currentRuntime().driver.device(index);
    return { index, name: d.name, major: d.major, minor: d.minor, totalMemory: d.totalMemory };
  },
  activate: (index) => currentRuntime().driver.use(index),
  stream: (index) => currentRuntime().driver.stream(index),
  allocate: (index, byteLength): DeviceBuffer => {
    const allocator = currentRuntime().allocator(index);
    const block = allocator.malloc(byteLength);
    let freed = false;
    return {
      ptr: block.ptr,
      byteLength,
      free: () => {
        if (freed) return;
        freed = true;
        allocator.free(block);
      },
    };
  },
  indexOf: (t) => deviceOf(t),
  address: (t) => dataPtr(t),
  synchronize: (index) => currentRuntime().driver.synchronize(index),
};
