/**
 * The CUDA driver, as this package uses it: initialisation, devices and their properties,
 * primary (and created) contexts, one stream per device that all work is ordered on, events,
 * raw memory, asynchronous copies host<->device<->device, modules loaded from PTX, and kernel
 * launches. Every CUresult is checked and named (CudaError). It talks to the hardware only
 * through a CudaLayer, so the same code runs over the FFI and over the RecordingLayer.
 */
import { ArgumentError, DeviceError } from "@backplane/core";
import { CudaError } from "./errors.ts";
import type { CudaLayer } from "./layer.ts";
import { CU } from "./native/driver-api.ts";

/** How long synchronizeAsync polls before it starts yielding to the event loop (ms). */
const SPIN_MS = 2;

export interface DeviceInfo {
  index: number;
  name: string;
  major: number;
  minor: number;
  /** "8.0", "9.0"... */
  capability: string;
  multiprocessors: number;
  totalMemory: number;
  maxThreadsPerBlock: number;
  warpSize: number;
  sharedMemoryPerBlock: number;
  /** Shared memory a kernel may opt into (cuFuncSetAttribute). */
  sharedMemoryPerBlockOptin: number;
  l2CacheSize: number;
  pciBusId: number;
}

/** One kernel argument, as the kernel's C signature declares it. */
export type KernelArg =
  | { type: "ptr"; value: bigint }
  | { type: "i32" | "u32"; value: number }
  | { type: "i64" | "u64"; value: number | bigint }
  | { type: "f32" | "f64"; value: number }
  /** A struct passed by value: its bytes and alignment. */
  | { type: "bytes"; value: Uint8Array; align: number };

export interface PackedParams {
  /** kernelParams (n pointers) followed by the argument values. */
  buffer: ArrayBuffer;
  /** Byte offset of each argument's value in `buffer`. */
  offsets: number[];
}

const SIZE: Record<Exclude<KernelArg["type"], "bytes">, number> = {
  ptr: 8,
  i32: 4,
  u32: 4,
  i64: 8,
  u64: 8,
  f32: 4,
  f64: 8,
};

const INT_RANGE = { i32: [-(2 ** 31), 2 ** 31 - 1], u32: [0, 2 ** 32 - 1] } as const;

/** A 32-bit argument out of its type's range would be wrapped by DataView: refused instead. */
function checkKernelArg(a: KernelArg, i: number): void {
  if (a.type !== "i32" && a.type !== "u32") return;
  const [lo, hi] = INT_RANGE[a.type];
  if (!(Number.isInteger(a.value) && a.value >= lo && a.value <= hi))
    throw new ArgumentError(
      `kernel argument ${i} is ${a.type} and must be an integer in [${lo}, ${hi}]; got ${a.value}`,
    );
}

/**
 * Lays the arguments out for cuLaunchKernel's kernelParams: an array of n pointers, then each
 * value at its natural alignment. The pointers are filled in by {@link fillParamPointers} once
 * the buffer's address is known.
 */
export function packKernelParams(args: readonly KernelArg[]): PackedParams {
  args.forEach(checkKernelArg);
  let off = args.length * 8;
  const offsets: number[] = [];
  for (const a of args) {
    const size = a.type === "bytes" ? a.value.byteLength : SIZE[a.type];
    const align = a.type === "bytes" ? a.align : size;
    if (!(align > 0 && (align & (align - 1)) === 0))
      throw new ArgumentError(`kernel argument alignment must be a power of two, got ${align}`);
    off = Math.ceil(off / align) * align;
    offsets.push(off);
    off += size;
  }
  const buffer = new ArrayBuffer(Math.max(8, Math.ceil(off / 8) * 8));
  const dv = new DataView(buffer);
  args.forEach((a, i) => {
    const o = offsets[i]!;
    switch (a.type) {
      case "ptr":
      case "u64":
        dv.setBigUint64(o, BigInt.asUintN(64, BigInt(a.value)), true);
        break;
      case "i64":
        dv.setBigInt64(o, BigInt.asIntN(64, BigInt(a.value)), true);
        break;
      case "i32":
        dv.setInt32(o, a.value, true);
        break;
      case "u32":
        dv.setUint32(o, a.value, true);
        break;
      case "f32":
        dv.setFloat32(o, a.value, true);
        break;
      case "f64":
        dv.setFloat64(o, a.value, true);
        break;
      case "bytes":
        new Uint8Array(buffer, o, a.value.byteLength).set(a.value);
        break;
    }
  });
  return { buffer, offsets };
}

/** Writes base + offset_i into the first n slots of a packed buffer. */
export function fillParamPointers(p: PackedParams, base: bigint): BigUint64Array {
  const ptrs = new BigUint64Array(p.buffer, 0, p.offsets.length);
  p.offsets.forEach((o, i) => {
    ptrs[i] = base + BigInt(o);
  });
  return ptrs;
}

/** Supplies the PTX image (NUL-terminated) of a module by name. */
export type ModuleSource = (name: string) => Uint8Array;

const cstr = (s: string) => new TextEncoder().encode(`${s}\0`);

export class CudaDriver {
  private initialized = false;
  private infos: DeviceInfo[] | undefined;
  private readonly contexts = new Map<number, bigint>();
  private readonly streams = new Map<number, bigint>();
  private readonly modules = new Map<string, bigint>();
  private readonly functions = new Map<string, bigint>();
  private readonly events: bigint[] = [];
  /** CUdevice handles by ordinal (cuDeviceGet). */
  private readonly handles: number[] = [];
  private current = -1;
  /** The device setDevice() named (torch's current device). */
  private selected = 0;
  /** Kernel launches made so far (for tests and the verbose trace). */
  launchCount = 0;
  private readonly out64 = new BigUint64Array(1);
  private readonly outI32 = new Int32Array(1);

  constructor(
    readonly layer: CudaLayer,
    private readonly moduleSource: ModuleSource = (name) => {
      throw new DeviceError(`no PTX source for module ${name}`);
    },
  ) {}

  /** Throws a CudaError naming the CUresult unless it is CUDA_SUCCESS. */
  check(call: string, status: number): void {
    if (status !== 0) throw new CudaError(call, "driver", status, this.layer.describe(status));
  }

  init(): void {
    if (this.initialized) return;
    this.check("cuInit", this.layer.cu.cuInit(0));
    this.initialized = true;
  }

  /** cuDriverGetVersion: e.g. 13000 for a driver that supports CUDA 13.0. */
  driverVersion(): number {
    this.check("cuDriverGetVersion", this.layer.cu.cuDriverGetVersion(this.outI32));
    return this.outI32[0]!;
  }

  deviceCount(): number {
    this.init();
    this.check("cuDeviceGetCount", this.layer.cu.cuDeviceGetCount(this.outI32));
    return this.outI32[0]!;
  }

  /** Every device and its properties (read once). */
  devices(): DeviceInfo[] {
    if (this.infos) return this.infos;
    const n = this.deviceCount();
    this.infos = Array.from({ length: n }, (_, i) => this.readDevice(i));
    return this.infos;
  }

  device(index: number): DeviceInfo {
    const all = this.devices();
    const d = all[index];
    if (!d) {
      throw new DeviceError(
        `cuda:${index} does not exist: ${all.length} CUDA device${all.length === 1 ? "" : "s"} (cuda:0${all.length > 1 ? `..cuda:${all.length - 1}` : ""})`,
      );
    }
    return d;
  }

  private readDevice(index: number): DeviceInfo {
    const cu = this.layer.cu;
    this.check("cuDeviceGet", cu.cuDeviceGet(this.outI32, index));
    const dev = this.outI32[0]!;
    this.handles[index] = dev;
    const name = new Uint8Array(256);
    this.check("cuDeviceGetName", cu.cuDeviceGetName(name, name.length, dev));
    const attr = (a: number, what: string) => {
      this.check(`cuDeviceGetAttribute(${what})`, cu.cuDeviceGetAttribute(this.outI32, a, dev));
      return this.outI32[0]!;
    };
    const mem = new BigUint64Array(1);
    this.check("cuDeviceTotalMem_v2", cu.cuDeviceTotalMem_v2(mem, dev));
    const major = attr(CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR");
    const minor = attr(CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR");
    const nul = name.indexOf(0);
    return {
      index,
      name: new TextDecoder().decode(name.subarray(0, nul < 0 ? name.length : nul)),
      major,
      minor,
      capability: `${major}.${minor}`,
      multiprocessors: attr(CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT"),
      totalMemory: Number(mem[0]),
      maxThreadsPerBlock: attr(
        CU.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        "MAX_THREADS_PER_BLOCK",
      ),
      warpSize: attr(CU.CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE"),
      sharedMemoryPerBlock: attr(
        CU.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        "MAX_SHARED_MEMORY_PER_BLOCK",
      ),
      sharedMemoryPerBlockOptin: attr(
        CU.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
      ),
      l2CacheSize: attr(CU.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE"),
      pciBusId: attr(CU.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, "PCI_BUS_ID"),
    };
  }

  /** The device's primary context, retained on first use. */
  context(index: number): bigint {
    let ctx = this.contexts.get(index);
    if (ctx === undefined) {
      this.device(index);
      this.check(
        "cuDevicePrimaryCtxRetain",
        this.layer.cu.cuDevicePrimaryCtxRetain(this.out64, this.handles[index]!),
      );
      ctx = this.out64[0]!;
      this.contexts.set(index, ctx);
    }
    return ctx;
  }

  /** Makes the device's primary context current on this thread (a no-op when it already is). */
  use(index: number): void {
    if (this.current === index) return;
    const ctx = this.context(index);
    this.check("cuCtxSetCurrent", this.layer.cu.cuCtxSetCurrent(ctx));
    this.current = index;
  }

  /**
   * The current device as torch.cuda.current_device() means it: the one select() (setDevice)
   * named, 0 before. Ops switch contexts to their tensors' device without changing it, as
   * torch's device guards restore it.
   */
  currentDevice(): number {
    return this.selected;
  }

  /** Makes `index` the current device (torch.cuda.set_device): checked, and its context made current. */
  select(index: number): void {
    this.device(index);
    this.use(index);
    this.selected = index;
  }

  /**
   * A new context of its own on `index` (cuCtxCreate, which cuda.h maps to cuCtxCreate_v4 with
   * default parameters). It is pushed current; pop it with popContext() and destroy it when done.
   */
  createContext(index: number, flags = 0): bigint {
    this.device(index);
    const create = this.layer.cu.cuCtxCreate_v4;
    if (!create) {
      throw new DeviceError(
        "cuCtxCreate_v4 is not exported by this driver (it needs a CUDA 12.5+ driver); use the primary context",
      );
    }
    this.check("cuCtxCreate_v4", create(this.out64, null, flags, this.handles[index]!));
    this.current = -1;
    return this.out64[0]!;
  }

  popContext(): bigint {
    this.check("cuCtxPopCurrent_v2", this.layer.cu.cuCtxPopCurrent_v2(this.out64));
    this.current = -1;
    return this.out64[0]!;
  }

  destroyContext(ctx: bigint): void {
    this.check("cuCtxDestroy_v2", this.layer.cu.cuCtxDestroy_v2(ctx));
    this.current = -1;
  }

  /**
   * The device's stream: every copy, kernel and library call of this package is ordered on it.
   * Makes the device current too (a no-op when it is): whatever is enqueued on the stream next
   * must run in the device's context, not in the context of the device used last.
   */
  stream(index: number): bigint {
    this.use(index);
    let s = this.streams.get(index);
    if (s === undefined) {
      this.check(
        "cuStreamCreate",
        this.layer.cu.cuStreamCreate(this.out64, CU.CU_STREAM_NON_BLOCKING),
      );
      s = this.out64[0]!;
      this.streams.set(index, s);
    }
    return s;
  }

  /** Blocks until the device's stream has finished everything enqueued. */
  synchronize(index: number): void {
    this.device(index); // an unknown device is a DeviceError, not "nothing to wait for"
    if (!this.streams.has(index)) return;
    this.use(index);
    this.check("cuStreamSynchronize", this.layer.cu.cuStreamSynchronize(this.stream(index)));
  }

  /**
   * Waits for the device's stream without blocking the event loop: records an event and polls
   * it (cuEventQuery) between macrotasks.
   */
  async synchronizeAsync(index: number): Promise<void> {
    this.device(index);
    if (!this.streams.has(index)) return;
    this.use(index);
    const ev = this.events.pop() ?? this.createEvent();
    try {
      this.check("cuEventRecord", this.layer.cu.cuEventRecord(ev, this.stream(index)));
      // Poll without yielding for a short while first: a timer's turn costs about 1 ms
      // (measured on an H200: 1.17 ms for a 1x1 product and its synchronize, torch 0.02 ms),
      // far more than most waits. Longer waits yield to the event loop between polls.
      const spinUntil = performance.now() + SPIN_MS;
      for (;;) {
        const s = this.layer.cu.cuEventQuery(ev);
        if (s === CU.CUDA_SUCCESS) break;
        if (s !== CU.CUDA_ERROR_NOT_READY) this.check("cuEventQuery", s);
        if (performance.now() < spinUntil) continue;
        await new Promise((r) => setTimeout(r, 0));
        this.use(index);
      }
    } finally {
      this.events.push(ev);
    }
  }

  private createEvent(): bigint {
    this.check(
      "cuEventCreate",
      this.layer.cu.cuEventCreate(this.out64, CU.CU_EVENT_DISABLE_TIMING),
    );
    return this.out64[0]!;
  }

  memAlloc(index: number, bytes: number): bigint {
    this.use(index);
    const out = new BigUint64Array(1);
    this.check("cuMemAlloc_v2", this.layer.cu.cuMemAlloc_v2(out, bytes));
    return out[0]!;
  }

  memFree(index: number, ptr: bigint): void {
    this.use(index);
    this.check("cuMemFree_v2", this.layer.cu.cuMemFree_v2(ptr));
  }

  memGetInfo(index: number): { free: number; total: number } {
    this.use(index);
    const free = new BigUint64Array(1);
    const total = new BigUint64Array(1);
    this.check("cuMemGetInfo_v2", this.layer.cu.cuMemGetInfo_v2(free, total));
    return { free: Number(free[0]), total: Number(total[0]) };
  }

  /**
   * Host -> device, enqueued on the device's stream. From pageable memory the driver stages
   * the bytes before returning, so `src` may be reused at once.
   */
  copyHtoD(index: number, dst: bigint, src: ArrayBufferView): void {
    if (src.byteLength === 0) return;
    const s = this.stream(index);
    this.check(
      "cuMemcpyHtoDAsync_v2",
      this.layer.cu.cuMemcpyHtoDAsync_v2(dst, src, src.byteLength, s),
    );
  }

  /** Device -> host into pageable memory: returns when the bytes are there. */
  copyDtoH(index: number, dst: ArrayBufferView, src: bigint): void {
    if (dst.byteLength === 0) return;
    const s = this.stream(index);
    this.check(
      "cuMemcpyDtoHAsync_v2",
      this.layer.cu.cuMemcpyDtoHAsync_v2(dst, src, dst.byteLength, s),
    );
    // Pageable destinations complete before the call returns; a stream sync makes it explicit.
    this.check("cuStreamSynchronize", this.layer.cu.cuStreamSynchronize(s));
  }

  /** Device -> device on the same device, enqueued. */
  copyDtoD(index: number, dst: bigint, src: bigint, bytes: number): void {
    if (bytes === 0) return;
    const s = this.stream(index);
    this.check("cuMemcpyDtoDAsync_v2", this.layer.cu.cuMemcpyDtoDAsync_v2(dst, src, bytes, s));
  }

  /** Device -> another device, ordered after the source device's work. */
  copyPeer(dstIndex: number, dst: bigint, srcIndex: number, src: bigint, bytes: number): void {
    if (bytes === 0) return;
    const dstCtx = this.context(dstIndex);
    const srcCtx = this.context(srcIndex);
    this.synchronize(dstIndex);
    const s = this.stream(srcIndex);
    this.check(
      "cuMemcpyPeerAsync",
      this.layer.cu.cuMemcpyPeerAsync(dst, dstCtx, src, srcCtx, bytes, s),
    );
    this.synchronize(srcIndex);
  }

  /** Sets `bytes` bytes at `dst` to `value`, enqueued. */
  memset(index: number, dst: bigint, value: number, bytes: number): void {
    if (bytes === 0) return;
    const s = this.stream(index);
    this.check("cuMemsetD8Async", this.layer.cu.cuMemsetD8Async(dst, value & 0xff, bytes, s));
  }

  /** A kernel of a PTX module, loading the module on the device on first use. */
  function(index: number, module: string, name: string): bigint {
    const key = `${index}/${module}/${name}`;
    let fn = this.functions.get(key);
    if (fn !== undefined) return fn;
    this.use(index);
    const mkey = `${index}/${module}`;
    let mod = this.modules.get(mkey);
    if (mod === undefined) {
      const image = this.moduleSource(module);
      this.check(`cuModuleLoadData(${module})`, this.layer.cu.cuModuleLoadData(this.out64, image));
      mod = this.out64[0]!;
      this.modules.set(mkey, mod);
    }
    this.check(
      `cuModuleGetFunction(${name})`,
      this.layer.cu.cuModuleGetFunction(this.out64, mod, cstr(name)),
    );
    fn = this.out64[0]!;
    this.functions.set(key, fn);
    return fn;
  }

  setFunctionAttribute(fn: bigint, attribute: number, value: number, what: string): void {
    this.check(
      `cuFuncSetAttribute(${what})`,
      this.layer.cu.cuFuncSetAttribute(fn, attribute, value),
    );
  }

  functionAttribute(fn: bigint, attribute: number, what: string): number {
    this.check(
      `cuFuncGetAttribute(${what})`,
      this.layer.cu.cuFuncGetAttribute(this.outI32, attribute, fn),
    );
    return this.outI32[0]!;
  }

  /**
   * Launches `fn` on the device's stream with the device's context current (after work on
   * another device, that one's context is); `name` is for the error message.
   */
  launch(
    index: number,
    fn: bigint,
    name: string,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    sharedBytes: number,
    args: readonly KernelArg[],
  ): void {
    for (const [what, dims, max] of [
      ["grid", grid, [2 ** 31 - 1, 65535, 65535]],
      ["block", block, [1024, 1024, 64]],
    ] as const) {
      dims.forEach((d, i) => {
        if (!(Number.isInteger(d) && d >= 1 && d <= max[i]!))
          throw new ArgumentError(`${name}: ${what} dimension ${i} is ${d} (1..${max[i]})`);
      });
    }
    this.use(index);
    const s = this.stream(index);
    const packed = packKernelParams(args);
    const ptrs = fillParamPointers(packed, this.layer.addressOf(new Uint8Array(packed.buffer)));
    this.check(
      `cuLaunchKernel(${name})`,
      this.layer.cu.cuLaunchKernel(
        fn,
        grid[0],
        grid[1],
        grid[2],
        block[0],
        block[1],
        block[2],
        sharedBytes,
        s,
        ptrs,
        null,
      ),
    );
    this.launchCount++;
  }

  /** Releases streams, events, modules and primary contexts (best effort, errors ignored). */
  release(): void {
    const cu = this.layer.cu;
    for (const [i, s] of this.streams) {
      // A context that cannot be made current must not stop the rest from being released.
      try {
        this.use(i);
      } catch {
        continue;
      }
      cu.cuStreamSynchronize(s);
      cu.cuStreamDestroy_v2(s);
    }
    for (const e of this.events.splice(0)) cu.cuEventDestroy_v2(e);
    for (const m of this.modules.values()) cu.cuModuleUnload(m);
    for (const i of this.contexts.keys()) cu.cuDevicePrimaryCtxRelease_v2(this.handles[i]!);
    this.streams.clear();
    this.modules.clear();
    this.functions.clear();
    this.contexts.clear();
    this.current = -1;
  }
}
