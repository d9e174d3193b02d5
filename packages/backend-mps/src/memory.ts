/**
 * The "mps" DeviceMemory: storages are helper buffers (Metal shared storage). Offsets and
 * lengths are checked here before any native call; the helper checks them again.
 */
import { ArgumentError, DeviceError } from "@backplane/core";
import type { DeviceMemory } from "@backplane/core/backend";
import type { BufferId, MpsHelper } from "./helper.ts";
import { currentHelper } from "./state.ts";

export interface MpsHandle {
  /** The helper that allocated it (and frees it). */
  readonly helper: MpsHelper;
  readonly id: BufferId;
  readonly byteLength: number;
}

/** "mps" and "mps:0" are the one device. */
export function checkMpsDevice(device: string): void {
  if (device !== "mps" && device !== "mps:0")
    throw new DeviceError(`MPS has one device, "mps" (or "mps:0"), got ${JSON.stringify(device)}`);
}

function range(h: MpsHandle, offset: number, bytes: number, what: string): void {
  if (!(Number.isSafeInteger(offset) && Number.isSafeInteger(bytes) && offset >= 0 && bytes >= 0))
    throw new ArgumentError(
      `mps memory ${what}: offset ${offset} and length ${bytes} must be integers >= 0`,
    );
  if (offset + bytes > h.byteLength)
    throw new ArgumentError(
      `mps memory ${what}: bytes [${offset}, ${offset + bytes}) are outside the ${h.byteLength}-byte storage`,
    );
}

export const mpsMemory: DeviceMemory<MpsHandle> = {
  deviceType: "mps",
  hostVisible: false,
  allocate(byteLength, device) {
    checkMpsDevice(device);
    if (!Number.isSafeInteger(byteLength) || byteLength < 0)
      throw new ArgumentError(`mps memory: cannot allocate ${byteLength} bytes`);
    const helper = currentHelper();
    return { helper, id: helper.alloc(byteLength), byteLength };
  },
  free(h) {
    h.helper.free(h.id);
  },
  upload(h, offset, src) {
    range(h, offset, src.byteLength, "upload");
    h.helper.write(h.id, offset, src);
  },
  async download(h, offset, bytes) {
    return mpsMemory.downloadSync!(h, offset, bytes);
  },
  downloadSync(h, offset, bytes) {
    range(h, offset, bytes, "download");
    const out = new Uint8Array(bytes);
    h.helper.read(h.id, offset, out);
    return out;
  },
  copy(src, srcOffset, dst, dstOffset, bytes) {
    range(src, srcOffset, bytes, "copy source");
    range(dst, dstOffset, bytes, "copy destination");
    if (src.helper !== dst.helper)
      throw new DeviceError("mps memory copy: the two storages belong to different helpers");
    src.helper.copy(src.id, srcOffset, dst.id, dstOffset, bytes);
  },
  gather(src, offset, shape, strides, elementBytes, dst) {
    src.helper.stridedCopy(elementBytes, src.id, offset, shape, strides, dst.id);
  },
  async sync(device) {
    checkMpsDevice(device);
    currentHelper().synchronize();
  },
};
