/// <reference types="@webgpu/types" />
/**
 * Device memory "webgpu": storages are pooled GPU buffers. Uploads are queue.writeBuffer,
 * downloads a copy into a pooled MAP_READ staging buffer and mapAsync (there is no
 * synchronous readback on WebGPU), copies copyBufferToBuffer, sync onSubmittedWorkDone.
 * WebGPU moves bytes in 4-byte words; ranges that are not (float16 and bool tensors
 * with odd lengths or offsets) go through a small byte-copy shader, and strided views
 * (contiguous(), to(), reading a transposed tensor) through a gather shader; astype()
 * converts on the device (convert.ts).
 */
import { DeviceError } from "@backplane/core";
import type { DeviceMemory } from "@backplane/core/backend";
import { CONVERT, convertKind, viewWalk } from "./convert.ts";
import {
  type Binding,
  getPools,
  grid,
  launch,
  Meta,
  pendingTraces,
  pipelineFor,
  requirePools,
} from "./exec.ts";
import { type DeviceLimits, gpuState } from "./gpu.ts";
import { largestBuffer, MAP_READ_MODE } from "./pool.ts";

export interface GpuHandle {
  readonly buffer: GPUBuffer;
  /** Bytes the buffer really has (its size class, at least byteLength rounded up to 4). */
  readonly size: number;
  /** Bytes the storage asked for. */
  readonly byteLength: number;
  /** The device generation the buffer belongs to (see reinitialize()). */
  readonly generation: number;
  freed: boolean;
}

export const STALE =
  "the storage belongs to a webgpu device that was closed (reinitialize()); move the data again";

/** n rounded up to whole 4-byte words (arithmetic: a bitwise & wraps past 2^31). */
const up4 = (n: number) => Math.ceil(n / 4) * 4;

/** The range of a storage a shader binds: at least 4 bytes, a multiple of 4. */
export function bindingOf(h: GpuHandle): Binding {
  return { buffer: h.buffer, size: Math.max(4, up4(h.byteLength)) };
}

/**
 * The range a shader binds to reach bytes [lo, hi) of a buffer: from lo aligned down to
 * `align` (minStorageBufferOffsetAlignment, and 8 at least, so that the offset is whole
 * elements of every size) to hi rounded up to a 4-byte word; 4 bytes at least. The
 * shader is given positions relative to `offset`.
 */
export function bindRange(lo: number, hi: number, align: number): { offset: number; size: number } {
  const a = Math.max(align, 8);
  const offset = Math.floor(lo / a) * a;
  return { offset, size: Math.max(4, up4(hi) - offset) };
}

/** The elements [lo, hi) that a view (at least one element) reaches in its storage. */
export function viewSpan(
  offset: number,
  shape: readonly number[],
  strides: readonly number[],
): [number, number] {
  let lo = offset;
  let hi = offset;
  shape.forEach((n, d) => {
    const reach = (n - 1) * strides[d];
    if (reach < 0) lo += reach;
    else hi += reach;
  });
  return [lo, hi + 1];
}

/**
 * The binding of bytes [lo, hi) of `buffer` (bindRange()), or a DeviceError where that
 * range is more than maxStorageBufferBindingSize: a shader cannot reach it at once.
 */
function rangeBinding(
  buffer: GPUBuffer,
  lo: number,
  hi: number,
  limits: DeviceLimits,
  what: string,
): Binding & { offset: number } {
  const r = bindRange(lo, hi, limits.minStorageBufferOffsetAlignment);
  const max = limits.maxStorageBufferBindingSize;
  if (r.size > max)
    throw new DeviceError(
      `webgpu ${what}: it reaches bytes [${lo}, ${hi}) of one buffer, ${r.size} bytes to bind to a shader at once, more than the device's maxStorageBufferBindingSize (${max})`,
    );
  return { buffer, ...r };
}

const COPY_BYTES = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
// srcByte, dstByte, bytes, firstWord, words
@group(0) @binding(2) var<storage, read> prm: array<u32>;

fn srcByte(p: u32) -> u32 { return (src[p >> 2u] >> ((p & 3u) * 8u)) & 0xffu; }

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = gid.x + gid.y * nw.x * 64u;
  if (w >= prm[4]) { return; }
  let word = prm[3] + w;
  var v = dst[word];
  for (var b = 0u; b < 4u; b++) {
    let p = word * 4u + b;
    if (p >= prm[1] && p < prm[1] + prm[2]) {
      let sh = b * 8u;
      v = (v & ~(0xffu << sh)) | (srcByte(prm[0] + p - prm[1]) << sh);
    }
  }
  dst[word] = v;
}`;

/**
 * Copies `n` bytes at any alignment between two different buffers, on the queue. Each
 * dispatch binds only the ranges it touches, and a copy longer than a binding may be
 * (maxStorageBufferBindingSize) goes in pieces, one dispatch each.
 */
function copyBytes(
  src: GPUBuffer,
  srcOff: number,
  dst: GPUBuffer,
  dstOff: number,
  n: number,
): void {
  const { s } = requirePools("webgpu copy");
  const L = s.limits;
  const align = Math.max(L.minStorageBufferOffsetAlignment, 8);
  // Either binding: the piece, the alignment before it, the word its end rounds up to.
  const piece = Math.floor((L.maxStorageBufferBindingSize - align - 4) / 4) * 4;
  for (let done = 0; done < n; done += piece) {
    const m = Math.min(piece, n - done);
    const from = rangeBinding(src, srcOff + done, srcOff + done + m, L, "copy (source)");
    const to = rangeBinding(dst, dstOff + done, dstOff + done + m, L, "copy (destination)");
    const s0 = srcOff + done - from.offset;
    const d0 = dstOff + done - to.offset;
    const firstWord = Math.floor(d0 / 4);
    const words = Math.ceil((d0 + m) / 4) - firstWord;
    launch({
      kernel: "copy-bytes",
      pipeline: pipelineFor("copy-bytes", 1, 1, () => COPY_BYTES),
      reads: [from],
      writes: [to],
      meta: new Meta().u32(s0, d0, m, firstWord, words).build(),
      groups: grid(Math.ceil(words / 64), L.maxComputeWorkgroupsPerDimension),
    });
  }
}

const GATHER = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
// words, elementBytes, bytes, then the view (viewWalk)
@group(0) @binding(2) var<storage, read> prm: array<u32>;
${viewWalk(3)}
fn srcByte(p: u32) -> u32 { return (src[p >> 2u] >> ((p & 3u) * 8u)) & 0xffu; }

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = gid.x + gid.y * nw.x * 64u;
  if (w >= prm[0]) { return; }
  let eb = prm[1];
  if (eb == 4u) { dst[w] = src[source(w)]; return; }
  if (eb == 8u) { dst[w] = src[source(w >> 1u) * 2u + (w & 1u)]; return; }
  // 1- and 2-byte elements: the word's bytes one by one (the last word may end early).
  var v = 0u;
  for (var b = 0u; b < 4u; b++) {
    let p = w * 4u + b;
    if (p >= prm[2]) { break; }
    v = v | (srcByte(source(p / eb) * eb + p % eb) << (b * 8u));
  }
  dst[w] = v;
}`;

/**
 * Runs `code` over a strided view of `src` (elements of `inBytes`) into `outBytes`
 * contiguous bytes of `dst`, one invocation per output word; its parameters are `head`
 * (the word count first) and the view as viewWalk() reads it. Only the bytes the view
 * reaches are bound (the whole storage may be past maxStorageBufferBindingSize).
 */
function launchOverView(
  job: { kernel: string; what: string; code: string },
  view: { src: GpuHandle; offset: number; shape: readonly number[]; strides: readonly number[] },
  inBytes: number,
  dst: GpuHandle,
  outBytes: number,
  head: (words: number) => number[],
): void {
  const { src, offset, shape, strides } = view;
  const numel = shape.reduce((a, b) => a * b, 1);
  check(src, `${job.kernel} (source)`, 0, 0);
  check(dst, `${job.kernel} (destination)`, 0, outBytes);
  if (numel === 0) return;
  const [lo, hi] = viewSpan(offset, shape, strides);
  check(src, `${job.kernel} (source)`, lo * inBytes, (hi - lo) * inBytes);
  let pools: ReturnType<typeof requirePools>;
  try {
    pools = requirePools(job.kernel);
  } catch (e) {
    fail(job.kernel, e);
  }
  const L = pools.s.limits;
  const from = rangeBinding(src.buffer, lo * inBytes, hi * inBytes, L, job.what);
  const to = rangeBinding(dst.buffer, 0, outBytes, L, job.what);
  const first = offset - from.offset / inBytes;
  const words = up4(outBytes) / 4;
  launch({
    kernel: job.kernel,
    pipeline: pipelineFor(job.kernel, 1, 1, () => job.code),
    reads: [from],
    writes: [to],
    meta: new Meta().u32(...head(words), shape.length, first, ...shape, ...strides).build(),
    groups: grid(Math.ceil(words / 64), L.maxComputeWorkgroupsPerDimension),
  });
}

function fail(what: string, e: unknown): never {
  throw new DeviceError(`webgpu ${what}: ${(e as Error)?.message ?? String(e)}`);
}

function check(h: GpuHandle, what: string, off: number, n: number): void {
  if (h.freed) throw new DeviceError(`webgpu ${what}: the storage was freed`);
  if (h.generation !== gpuState()?.generation) throw new DeviceError(`webgpu ${what}: ${STALE}`);
  if (off < 0 || off + n > h.byteLength)
    throw new DeviceError(
      `webgpu ${what}: bytes [${off}, ${off + n}) are outside the storage of ${h.byteLength} bytes`,
    );
}

export const webgpuMemory: DeviceMemory<GpuHandle> = {
  deviceType: "webgpu",
  hostVisible: false,

  allocate(byteLength: number): GpuHandle {
    let pools: ReturnType<typeof requirePools>;
    try {
      pools = requirePools("allocate");
    } catch (e) {
      fail("allocate", e);
    }
    const max = pools.s.limits.maxBufferSize;
    // (buffers are whole 4-byte words: a maxBufferSize of 2^31 - 1 holds 2^31 - 4 bytes)
    if (byteLength > largestBuffer(max))
      throw new DeviceError(
        `webgpu allocate: ${byteLength} bytes is more than the device's maxBufferSize (${max}${max % 4 === 0 ? "" : `; ${largestBuffer(max)} in whole 4-byte words`})`,
      );
    const { buffer, size } = pools.storage.acquire(byteLength);
    return { buffer, size, byteLength, generation: pools.s.generation, freed: false };
  },

  free(h: GpuHandle): void {
    if (h.freed) return;
    h.freed = true;
    // A buffer of an earlier device went with it; the current pool never saw it.
    if (h.generation !== gpuState()?.generation) return;
    getPools()?.storage.release(h.buffer, h.size);
  },

  upload(h: GpuHandle, byteOffset: number, src: Uint8Array): void {
    const n = src.byteLength;
    check(h, "upload", byteOffset, n);
    if (n === 0) return;
    let pools: ReturnType<typeof requirePools>;
    try {
      pools = requirePools("upload");
    } catch (e) {
      fail("upload", e);
    }
    const queue = pools.s.device.queue;
    // writeBuffer wants 4-byte multiples and a plain (not shared) ArrayBuffer.
    const aligned = byteOffset % 4 === 0;
    const tailFree = byteOffset + n >= h.byteLength; // the padding lands past the storage
    if (aligned && (n % 4 === 0 || tailFree)) {
      let data: Uint8Array<ArrayBuffer>;
      if (n % 4 === 0 && src.buffer instanceof ArrayBuffer) data = src as Uint8Array<ArrayBuffer>;
      else {
        data = new Uint8Array(up4(n));
        data.set(src);
      }
      queue.writeBuffer(h.buffer, byteOffset, data);
      return;
    }
    const tmp = pools.storage.acquire(up4(n));
    const data = new Uint8Array(up4(n));
    data.set(src);
    queue.writeBuffer(tmp.buffer, 0, data);
    copyBytes(tmp.buffer, 0, h.buffer, byteOffset, n);
    pools.storage.release(tmp.buffer, tmp.size);
  },

  async download(h: GpuHandle, byteOffset: number, byteLength: number): Promise<Uint8Array> {
    check(h, "download", byteOffset, byteLength);
    if (byteLength === 0) return new Uint8Array(0);
    let pools: ReturnType<typeof requirePools>;
    try {
      pools = requirePools("download");
    } catch (e) {
      fail("download", e);
    }
    const start = byteOffset - (byteOffset % 4);
    const size = up4(byteOffset + byteLength) - start;
    const staging = pools.staging.acquire(size);
    const device = pools.s.device;
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(h.buffer, start, staging.buffer, 0, size);
    device.queue.submit([encoder.finish()]);
    try {
      await staging.buffer.mapAsync(MAP_READ_MODE, 0, size);
    } catch (e) {
      pools.staging.stats.liveBuffers--;
      pools.staging.stats.liveBytes -= staging.size;
      staging.buffer.destroy();
      fail("download (mapAsync)", e);
    }
    const from = byteOffset - start;
    const out = new Uint8Array(staging.buffer.getMappedRange(0, size)).slice(
      from,
      from + byteLength,
    );
    staging.buffer.unmap();
    pools.staging.release(staging.buffer, staging.size);
    return out;
  },

  copy(src: GpuHandle, srcOffset: number, dst: GpuHandle, dstOffset: number, n: number): void {
    check(src, "copy (source)", srcOffset, n);
    check(dst, "copy (destination)", dstOffset, n);
    if (n === 0) return;
    let pools: ReturnType<typeof requirePools>;
    try {
      pools = requirePools("copy");
    } catch (e) {
      fail("copy", e);
    }
    const device = pools.s.device;
    const aligned = srcOffset % 4 === 0 && dstOffset % 4 === 0;
    const tailFree = dstOffset + n >= dst.byteLength;
    if (aligned && (n % 4 === 0 || tailFree) && src.buffer !== dst.buffer) {
      const encoder = device.createCommandEncoder();
      encoder.copyBufferToBuffer(src.buffer, srcOffset, dst.buffer, dstOffset, up4(n));
      device.queue.submit([encoder.finish()]);
      return;
    }
    if (src.buffer === dst.buffer) {
      // Through a temporary: a buffer cannot be bound for reading and writing at once.
      const tmp = pools.storage.acquire(up4(n) + 4);
      copyBytes(src.buffer, srcOffset, tmp.buffer, 0, n);
      copyBytes(tmp.buffer, 0, dst.buffer, dstOffset, n);
      pools.storage.release(tmp.buffer, tmp.size);
      return;
    }
    copyBytes(src.buffer, srcOffset, dst.buffer, dstOffset, n);
  },

  gather(src, offset, shape, strides, elementBytes, dst): void {
    const bytes = shape.reduce((a, b) => a * b, 1) * elementBytes;
    launchOverView(
      { kernel: "gather", what: "gather (a strided view read contiguous)", code: GATHER },
      { src, offset, shape, strides },
      elementBytes,
      dst,
      bytes,
      (words) => [words, elementBytes, bytes],
    );
  },

  convert(src, offset, shape, strides, from, to, dst): void {
    const a = convertKind(from, from, to);
    const b = convertKind(to, from, to);
    const numel = shape.reduce((x, y) => x * y, 1);
    launchOverView(
      { kernel: "astype", what: `astype ${from} to ${to}`, code: CONVERT },
      { src, offset, shape, strides },
      a.bytes,
      dst,
      numel * b.bytes,
      (words) => [words, numel, a.kind, a.bytes, b.kind, b.bytes],
    );
  },

  async sync(): Promise<void> {
    const s = gpuState();
    if (!s) return;
    await s.device.queue.onSubmittedWorkDone();
    if (pendingTraces.size > 0) await Promise.all([...pendingTraces]);
  },
};
