/**
 * The "cuda" DeviceMemory: storages are blocks of the per-device caching allocator, and
 * every operation goes through the driver layer (copies enqueued on the device's stream).
 */
import { ArgumentError, DeviceError } from "@backplane/core";
import type { DeviceMemory } from "@backplane/core/backend";
import type { Block } from "./allocator.ts";
import type { CudaRuntime } from "./runtime.ts";

export interface CudaHandle {
  /** The runtime that allocated it (its allocator takes it back). */
  readonly runtime: CudaRuntime;
  readonly device: number;
  readonly block: Block;
  /** Bytes the storage asked for. */
  readonly byteLength: number;
}

/** "cuda" -> 0, "cuda:3" -> 3. */
export function deviceIndex(device: string): number {
  const m = /^cuda(?::(\d+))?$/.exec(device);
  if (!m) throw new DeviceError(`not a CUDA device: ${JSON.stringify(device)}`);
  return m[1] === undefined ? 0 : Number(m[1]);
}

function range(h: CudaHandle, offset: number, bytes: number, what: string): bigint {
  if (!(Number.isInteger(offset) && Number.isInteger(bytes) && offset >= 0 && bytes >= 0))
    throw new ArgumentError(
      `cuda memory ${what}: offset ${offset} and length ${bytes} must be integers >= 0`,
    );
  if (offset + bytes > h.byteLength)
    throw new ArgumentError(
      `cuda memory ${what}: bytes [${offset}, ${offset + bytes}) are outside the ${h.byteLength}-byte storage`,
    );
  return h.block.ptr + BigInt(offset);
}

/**
 * Creates the DeviceMemory over whatever runtime `current()` returns (it throws the reason
 * CUDA is unavailable when there is none).
 */
export function createCudaMemory(current: () => CudaRuntime): DeviceMemory<CudaHandle> {
  return {
    deviceType: "cuda",
    hostVisible: false,
    allocate(byteLength, device) {
      const runtime = current();
      const index = deviceIndex(device);
      runtime.driver.device(index);
      return {
        runtime,
        device: index,
        block: runtime.allocator(index).malloc(byteLength),
        byteLength,
      };
    },
    free(h) {
      h.runtime.allocator(h.device).free(h.block);
    },
    upload(h, offset, src) {
      const ptr = range(h, offset, src.byteLength, "upload");
      h.runtime.driver.copyHtoD(h.device, ptr, src);
    },
    async download(h, offset, bytes) {
      const ptr = range(h, offset, bytes, "download");
      await h.runtime.driver.synchronizeAsync(h.device);
      const out = new Uint8Array(bytes);
      h.runtime.driver.copyDtoH(h.device, out, ptr);
      return out;
    },
    downloadSync(h, offset, bytes) {
      const ptr = range(h, offset, bytes, "download");
      const out = new Uint8Array(bytes);
      h.runtime.driver.copyDtoH(h.device, out, ptr);
      return out;
    },
    copy(src, srcOffset, dst, dstOffset, bytes) {
      const s = range(src, srcOffset, bytes, "copy source");
      const d = range(dst, dstOffset, bytes, "copy destination");
      if (src.runtime !== dst.runtime)
        throw new DeviceError(
          "cuda memory copy: the two storages belong to different CUDA runtimes",
        );
      if (src.device === dst.device) src.runtime.driver.copyDtoD(src.device, d, s, bytes);
      else src.runtime.driver.copyPeer(dst.device, d, src.device, s, bytes);
    },
    async sync(device) {
      await current().driver.synchronizeAsync(deviceIndex(device));
    },
  };
}
