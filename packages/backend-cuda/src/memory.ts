/**
 * The "cuda" DeviceMemory: storages are blocks of the per-device caching allocator, and
 * every operation goes through the driver layer (copies enqueued on the device's stream).
 * gather() (contiguous() and to() of a strided view) runs kernels/copy.cu's copy2d: the last
 * two dims as rows x cols, the leading ones as a batch with an offset table.
 */
import { ArgumentError, DeviceError } from "@backplane/core";
import { batchOffsets, type DeviceMemory } from "@backplane/core/backend";
import type { Block } from "./allocator.ts";
import { hasCopy2d, launchCopy2d } from "./copy2d.ts";
import type { CudaRuntime } from "./runtime.ts";

export interface CudaHandle {
  /** The runtime that allocated it (its allocator takes it back). */
  readonly runtime: CudaRuntime;
  readonly device: number;
  readonly block: Block;
  /** Bytes the storage asked for. */
  readonly byteLength: number;
  /**
   * Set by free(): the block may already serve another storage, so every later use of this
   * handle is a DeviceError instead of a read or write of that storage's bytes.
   */
  freed: boolean;
}

/** "cuda" -> 0, "cuda:3" -> 3. */
export function deviceIndex(device: string): number {
  const m = /^cuda(?::(\d+))?$/.exec(device);
  if (!m) throw new DeviceError(`not a CUDA device: ${JSON.stringify(device)}`);
  return m[1] === undefined ? 0 : Number(m[1]);
}

/** Throws unless the handle's block is still its own (not freed, its runtime not released). */
function live(h: CudaHandle, what: string): void {
  if (h.freed)
    throw new DeviceError(
      `cuda memory ${what}: the storage was freed (its block at 0x${h.block.ptr.toString(16)} on cuda:${h.device} may serve another storage)`,
    );
  if (h.runtime.released)
    throw new DeviceError(
      `cuda memory ${what}: the storage belongs to a CUDA runtime that was released (backends.cuda.reprobe()); its device memory went with its context: move tensors to the CPU before reprobing`,
    );
}

function range(h: CudaHandle, offset: number, bytes: number, what: string): bigint {
  live(h, what);
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

function gather(
  src: CudaHandle,
  offset: number,
  shape: readonly number[],
  strides: readonly number[],
  elementBytes: number,
  dst: CudaHandle,
): void {
  if (!hasCopy2d(elementBytes))
    throw new ArgumentError(`cuda memory gather: no copy kernel for ${elementBytes}-byte elements`);
  if (shape.length !== strides.length)
    throw new ArgumentError(
      `cuda memory gather: shape [${shape}] and strides [${strides}] differ in length`,
    );
  const ints = [offset, ...shape, ...strides];
  if (!ints.every((x) => Number.isSafeInteger(x) && x >= 0))
    throw new ArgumentError(
      `cuda memory gather: offset ${offset}, shape [${shape}] and strides [${strides}] must be integers >= 0`,
    );
  const numel = shape.reduce((a, b) => a * b, 1);
  live(src, "gather source");
  range(dst, 0, numel * elementBytes, "gather destination");
  if (numel === 0) return;
  const last = shape.reduce((a, n, d) => a + (n - 1) * strides[d]!, offset);
  range(src, last * elementBytes, elementBytes, "gather source");
  if (src.runtime !== dst.runtime || src.device !== dst.device)
    throw new DeviceError("cuda memory gather: source and destination are on different devices");
  const r = shape.length;
  const rows = r >= 2 ? shape[r - 2]! : 1;
  const cols = r >= 1 ? shape[r - 1]! : 1;
  const [lead] = batchOffsets(shape.slice(0, -2), [strides.slice(0, -2)]);
  const rt = src.runtime;
  rt.scratch(src.device, (s) => {
    launchCopy2d(rt, src.device, elementBytes, {
      dst: dst.block.ptr,
      src: src.block.ptr,
      table: s.upload(BigInt64Array.from(lead!, (o) => BigInt(o + offset))),
      srcBatch: 0,
      batch: lead!.length,
      rows,
      cols,
      srcRowStride: r >= 2 ? strides[r - 2]! : 0,
      srcColStride: r >= 1 ? strides[r - 1]! : 0,
      dstBatch: rows * cols,
      dstRowStride: cols,
      dstColStride: 1,
    });
  });
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
        freed: false,
      };
    },
    free(h) {
      if (h.freed) live(h, "free (a double free)");
      h.freed = true;
      // A released runtime's memory went with its context: nothing to give back.
      if (!h.runtime.released) h.runtime.allocator(h.device).free(h.block);
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
    gather,
    async sync(device) {
      await current().driver.synchronizeAsync(deviceIndex(device));
    },
  };
}
