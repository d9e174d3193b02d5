/**
 * The CPU device's memory: one WebAssembly.Memory where every CPU tensor lives and which
 * every WASM kernel module imports (as `env.memory`), so kernels read tensors without
 * copies and worker threads (backend-openmp) share them. Shared (SharedArrayBuffer-backed)
 * wherever threads are possible; plain otherwise (pages that are not cross-origin isolated).
 *
 * Layout: [0, 64 KiB) is reserved for the static data of WASM modules, each claiming the
 * range it was built for when it loads (static.ts); tensors are allocated above it by a
 * small allocator: 64-byte aligned blocks, size classes up to 1 MiB, and a coalescing
 * free list above that.
 */

import { ArgumentError, DeviceError } from "../errors.ts";
import { runtime } from "../runtime/detect.ts";
import { type DeviceMemory, registerDeviceMemory } from "../tensor/memory.ts";
import { setFloat32FiniteScan } from "../tensor/tensor.ts";
import { finiteScanOver } from "./finite-scan.ts";
import { HEAP_BASE } from "./static.ts";
import type { WasmImports, WasmMemory } from "./types.ts";

const PAGE = 65536;
const ALIGN = 64;

const SMALL_CLASSES = 15; // 64 B .. 1 MiB
const SMALL_MAX = ALIGN << (SMALL_CLASSES - 1);

function classOf(bytes: number): number {
  let c = 0;
  let size = ALIGN;
  while (size < bytes) {
    size <<= 1;
    c++;
  }
  return c;
}

export interface CpuMemoryStats {
  /** Bytes of linear memory in use by the heap (top of the bump region). */
  heapTop: number;
  /** Size of the linear memory. */
  memoryBytes: number;
  shared: boolean;
}

/** The one CPU memory. Handles are byte offsets ("pointers") into `memory`. */
export class WasmCpuMemory implements DeviceMemory<number> {
  readonly deviceType = "cpu";
  readonly hostVisible = true;
  readonly memory: WasmMemory;
  readonly shared: boolean;
  readonly maxPages: number;
  private top = HEAP_BASE;
  private readonly small: number[][] = Array.from({ length: SMALL_CLASSES }, () => []);
  /** Free large blocks, sorted by address: [ptr, size] pairs. */
  private large: [number, number][] = [];
  private readonly sizes = new Map<number, number>();

  constructor(opts: { shared?: boolean; maxPages?: number } = {}) {
    const rt = runtime();
    this.shared = opts.shared ?? (rt.sharedArrayBuffer && rt.crossOriginIsolated);
    // 4 GiB of address space on servers; 1 GiB in browsers, where a large reservation can fail.
    this.maxPages = opts.maxPages ?? (rt.name === "browser" ? 16384 : 65536);
    this.memory = new WebAssembly.Memory({
      initial: 17,
      maximum: this.maxPages,
      shared: this.shared,
    } as WebAssembly.MemoryDescriptor);
  }

  /** A 64-byte aligned block of at least `bytes` bytes. Contents are unspecified. */
  allocate(bytes: number): number {
    // A NaN size used to make the heap top NaN, after which every block had address NaN.
    if (typeof bytes !== "number" || !(bytes >= 0))
      throw new ArgumentError(
        `cpu: cannot allocate ${String(bytes)} bytes; the size must be a number >= 0`,
      );
    const size = bytes === 0 ? ALIGN : Math.ceil(bytes / ALIGN) * ALIGN;
    let ptr: number | undefined;
    let block: number;
    if (size <= SMALL_MAX) {
      const c = classOf(size);
      block = ALIGN << c;
      ptr = this.small[c].pop();
    } else {
      block = size;
      const taken = this.takeLarge(size);
      // (the block taken may be larger than asked: record what it really is)
      if (taken) [ptr, block] = taken;
    }
    if (ptr === undefined) ptr = this.bump(block);
    this.sizes.set(ptr, block);
    return ptr;
  }

  free(ptr: number): void {
    const block = this.sizes.get(ptr);
    if (block === undefined) return;
    this.sizes.delete(ptr);
    if (block <= SMALL_MAX) this.small[classOf(block)].push(ptr);
    else this.giveLarge(ptr, block);
  }

  private bump(size: number): number {
    const ptr = this.top;
    const end = ptr + size;
    const have = this.memory.buffer.byteLength;
    if (end > have) this.growTo(end, size);
    this.top = end;
    return ptr;
  }

  /** Grows the memory to at least `end` bytes, or throws a DeviceError leaving it as it was. */
  private growTo(end: number, size: number): void {
    const have = this.memory.buffer.byteLength;
    const havePages = have / PAGE;
    const pages = Math.ceil((end - have) / PAGE);
    // Grow by at least a quarter of the memory, so many small growths do not each cost a
    // remap; where that much cannot be had (the limit, the host's memory), just what is needed.
    const slack = Math.min(this.maxPages - havePages, Math.max(pages, Math.ceil(havePages / 4)));
    for (const grow of slack > pages ? [slack, pages] : [pages]) {
      if (!(havePages + grow <= this.maxPages)) break;
      try {
        this.memory.grow(grow);
        return;
      } catch {
        // (next: the smaller growth, else the error below)
      }
    }
    throw new DeviceError(
      `cpu: out of memory allocating ${size} bytes (${(have / 2 ** 20).toFixed(0)} MiB in use of at most ${(this.maxPages * PAGE) / 2 ** 20} MiB); dispose tensors you no longer need`,
    );
  }

  /** The best-fitting free large block for `size`: [ptr, the block's size], or undefined. */
  private takeLarge(size: number): [number, number] | undefined {
    let best = -1;
    for (let i = 0; i < this.large.length; i++) {
      const s = this.large[i][1];
      if (s >= size && (best < 0 || s < this.large[best][1])) best = i;
    }
    if (best < 0) return undefined;
    const [ptr, s] = this.large[best];
    // A remainder too small to be a large block goes with this one (it is freed with it).
    if (s - size > SMALL_MAX) {
      this.large[best] = [ptr + size, s - size];
      return [ptr, size];
    }
    this.large.splice(best, 1);
    return [ptr, s];
  }

  private giveLarge(ptr: number, size: number): void {
    // Insert sorted by address, merging with free neighbours.
    let i = 0;
    while (i < this.large.length && this.large[i][0] < ptr) i++;
    this.large.splice(i, 0, [ptr, size]);
    const next = this.large[i + 1];
    if (next && ptr + size === next[0]) {
      this.large[i][1] += next[1];
      this.large.splice(i + 1, 1);
    }
    const prev = this.large[i - 1];
    if (prev && prev[0] + prev[1] === ptr) {
      prev[1] += this.large[i][1];
      this.large.splice(i, 1);
      i--;
    }
    // A free block at the top goes back to the bump region.
    const last = this.large[this.large.length - 1];
    if (last && last[0] + last[1] === this.top) {
      this.top = last[0];
      this.large.pop();
    }
  }

  upload(h: number, off: number, src: Uint8Array): void {
    new Uint8Array(this.memory.buffer, h + off, src.byteLength).set(src);
  }
  async download(h: number, off: number, n: number): Promise<Uint8Array> {
    return this.downloadSync(h, off, n);
  }
  downloadSync(h: number, off: number, n: number): Uint8Array {
    return new Uint8Array(this.memory.buffer, h + off, n).slice();
  }
  copy(src: number, so: number, dst: number, doff: number, n: number): void {
    new Uint8Array(this.memory.buffer).copyWithin(dst + doff, src + so, src + so + n);
  }
  async sync(): Promise<void> {}
  hostView(h: number, off: number, n: number): Uint8Array {
    return new Uint8Array(this.memory.buffer, h + off, n);
  }

  stats(): CpuMemoryStats {
    return { heapTop: this.top, memoryBytes: this.memory.buffer.byteLength, shared: this.shared };
  }
}

let instance: WasmCpuMemory | undefined;

/** The CPU device's memory (created with the core, shared by every CPU backend). */
export function cpuMemory(): WasmCpuMemory {
  if (!instance)
    throw new DeviceError(
      "cpu: WebAssembly is not available in this runtime, so there is no WASM CPU memory",
    );
  return instance;
}

/** The imports every WASM kernel module is instantiated with. */
export function wasmKernelImports(module: string): WasmImports {
  return {
    env: {
      memory: cpuMemory().memory,
      abort: (_msg: number, _file: number, line: number, col: number) => {
        throw new DeviceError(`${module}: WASM kernel aborted at line ${line}:${col}`);
      },
    },
  };
}

if (typeof WebAssembly !== "undefined" && typeof WebAssembly.Memory === "function") {
  try {
    instance = new WasmCpuMemory();
    registerDeviceMemory(instance);
    const memory = instance;
    const scan = finiteScanOver(memory.memory as WebAssembly.Memory, memory.shared);
    setFloat32FiniteScan((t, data) =>
      t.storage.memory === memory ? scan(data.byteOffset, t.numel) : undefined,
    );
  } catch {
    // No usable WASM memory (a locked-down environment): CPU tensors stay in ArrayBuffers.
    instance = undefined;
  }
}
