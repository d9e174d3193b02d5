/**
 * A second device for tests on machines with one: its memory is host RAM behind opaque
 * handles and async-only readback, the way a GPU allocator behaves. Lets a suite check
 * device mismatches and the async read path without GPU hardware.
 */
import { type DeviceMemory, deviceMemory, registerDeviceMemory } from "@backplane/core/backend";

export function registerHostBackedDevice(deviceType = "hostdev"): DeviceMemory<number> {
  const existing = deviceMemory(deviceType);
  if (existing) return existing as DeviceMemory<number>;
  const buffers = new Map<number, Uint8Array>();
  let next = 1;
  const memory: DeviceMemory<number> = {
    deviceType,
    hostVisible: false,
    allocate: (n) => {
      buffers.set(next, new Uint8Array(n));
      return next++;
    },
    free: (h) => void buffers.delete(h),
    upload: (h, off, src) => buffers.get(h)!.set(src, off),
    download: async (h, off, n) => buffers.get(h)!.slice(off, off + n),
    copy: (s, so, d, doff, n) => buffers.get(d)!.set(buffers.get(s)!.subarray(so, so + n), doff),
    sync: async () => {},
  };
  registerDeviceMemory(memory);
  return memory;
}
