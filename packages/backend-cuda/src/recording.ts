/**
 * RecordingLayer: an implementation of the driver layer that needs no GPU. It records every
 * call (library, function, arguments), hands out fake handles and fake device pointers, and
 * keeps the bytes of its fake allocations so host<->device<->device copies round-trip. It
 * claims no numeric results: kernel launches and cuBLAS / cuFFT / cuSOLVER calls are only
 * recorded, and their outputs keep whatever bytes they had. Tests use it to check the host
 * logic (allocator, plan cache, flag-to-cuBLAS translation, launch parameters, call order,
 * error naming) through the same interfaces the FFI layer implements.
 */
import type { CudaLayer, MathLibraries } from "./layer.ts";
import { DRIVER_DECL, type DriverSymbols } from "./native/driver-api.ts";
import {
  CUBLAS_DECL,
  CUBLASLT_DECL,
  CUFFT_DECL,
  CUSOLVER_DECL,
  HEURISTIC_RESULT,
  HEURISTIC_RESULT_BYTES,
  type LibraryName,
} from "./native/library-api.ts";
import { CU_RESULT_NAMES } from "./native/status-names.ts";

export interface RecordedCall {
  lib: "cuda" | LibraryName;
  name: string;
  args: unknown[];
  /** The status it returned. */
  status: number;
  /** The device whose context was current when it was called (-1: none yet). */
  device: number;
}

export interface FakeDevice {
  name: string;
  major: number;
  minor: number;
  totalMemory: number;
  multiprocessors?: number;
  sharedMemoryPerBlockOptin?: number;
}

export interface RecordingOptions {
  devices?: FakeDevice[];
  /** Which math libraries exist (default: all four). */
  libraries?: (keyof MathLibraries)[];
  /** cuFFT work area size reported by cufftMakePlanMany (default 4096). */
  fftWorkSize?: number;
  /** cuSOLVER *_bufferSize answer, in elements (default 64). */
  solverWorkElements?: number;
  /** cuBLASLt heuristic workspace size (default 0). */
  ltWorkspaceSize?: number;
}

export interface RecordedLaunch {
  kernel: string;
  grid: [number, number, number];
  block: [number, number, number];
  sharedBytes: number;
  /** The packed kernelParams buffer (pointers first, then the values). */
  params: ArrayBuffer;
  /** Byte offsets of each argument's value in `params`. */
  offsets: number[];
  /** The device whose context was current at the launch (-1: none). */
  device: number;
}

const DEFAULT_DEVICE: FakeDevice = {
  name: "Recording GPU (sm_80)",
  major: 8,
  minor: 0,
  totalMemory: 16 * 2 ** 30,
  multiprocessors: 108,
  sharedMemoryPerBlockOptin: 163 * 1024,
};

const HANDLE_BASE = 0x10000000n;
const DEVICE_BASE = 0x7f0000000000n;

export class RecordingLayer implements CudaLayer {
  readonly kind = "recording" as const;
  readonly calls: RecordedCall[] = [];
  readonly launches: RecordedLaunch[] = [];
  readonly cu: DriverSymbols;
  readonly libs: MathLibraries = {};
  readonly info: CudaLayer["info"] = {};
  readonly devices: FakeDevice[];
  /** Live fake allocations: address -> bytes. */
  readonly memory = new Map<bigint, Uint8Array>();
  private readonly memoryDevice = new Map<bigint, number>();
  /** Bytes currently allocated per device (cuMemAlloc). */
  readonly allocatedPerDevice: number[];
  private readonly failures = new Map<string, { status: number; times: number }>();
  private readonly overrides = new Map<string, (...args: never[]) => unknown>();
  private nextHandle = HANDLE_BASE;
  private nextDevicePtr = DEVICE_BASE;
  private nextFft = 1;
  private readonly views = new Map<bigint, ArrayBufferView>();
  private nextView = 0x5000000000n;
  private readonly functionNames = new Map<bigint, string>();
  private readonly contextDevice = new Map<bigint, number>();
  private current = -1;
  private readonly opts: Required<Omit<RecordingOptions, "devices" | "libraries">>;

  constructor(opts: RecordingOptions = {}) {
    this.devices = opts.devices ?? [DEFAULT_DEVICE];
    this.allocatedPerDevice = this.devices.map(() => 0);
    this.opts = {
      fftWorkSize: opts.fftWorkSize ?? 4096,
      solverWorkElements: opts.solverWorkElements ?? 64,
      ltWorkspaceSize: opts.ltWorkspaceSize ?? 0,
    };
    this.cu = this.symbols("cuda", DRIVER_DECL, this.driverHandlers()) as DriverSymbols;
    const libs = opts.libraries ?? ["cublas", "cublasLt", "cufft", "cusolver"];
    const handle = (out: unknown) => {
      (out as BigUint64Array)[0] = this.handle();
      return 0;
    };
    const property = (type: unknown, out: unknown) => {
      (out as Int32Array)[0] = [13, 0, 0][type as number] ?? 0;
      return 0;
    };
    const lwork = (...args: unknown[]) => {
      (args[args.length - 1] as Int32Array)[0] = this.opts.solverWorkElements;
      return 0;
    };
    if (libs.includes("cublas")) {
      this.libs.cublas = this.symbols("cublas", CUBLAS_DECL, {
        cublasCreate_v2: handle,
        cublasGetProperty: property,
      }) as MathLibraries["cublas"];
      this.info.cublas = { path: "(recording)", version: "13.0.0" };
    }
    if (libs.includes("cublasLt")) {
      this.libs.cublasLt = this.symbols("cublasLt", CUBLASLT_DECL, {
        cublasLtCreate: handle,
        cublasLtMatmulDescCreate: handle,
        cublasLtMatrixLayoutCreate: handle,
        cublasLtMatmulPreferenceCreate: handle,
        cublasLtGetVersion: () => 130000n,
        cublasLtMatmulAlgoGetHeuristic: (...args: unknown[]) => {
          const results = args[8] as Uint8Array;
          const dv = new DataView(results.buffer, results.byteOffset, HEURISTIC_RESULT_BYTES);
          dv.setBigUint64(HEURISTIC_RESULT.workspaceSize, BigInt(this.opts.ltWorkspaceSize), true);
          dv.setInt32(HEURISTIC_RESULT.state, 0, true);
          dv.setFloat32(HEURISTIC_RESULT.wavesCount, 1, true);
          (args[9] as Int32Array)[0] = 1;
          return 0;
        },
      }) as MathLibraries["cublasLt"];
      this.info.cublasLt = { path: "(recording)", version: "13.0.0" };
    }
    if (libs.includes("cufft")) {
      this.libs.cufft = this.symbols("cufft", CUFFT_DECL, {
        cufftCreate: (out: unknown) => {
          (out as Int32Array)[0] = this.nextFft++;
          return 0;
        },
        cufftGetVersion: (out: unknown) => {
          (out as Int32Array)[0] = 12000;
          return 0;
        },
        cufftMakePlanMany: (...args: unknown[]) => {
          (args[11] as BigUint64Array)[0] = BigInt(this.opts.fftWorkSize);
          return 0;
        },
      }) as MathLibraries["cufft"];
      this.info.cufft = { path: "(recording)", version: "12.0.0" };
    }
    if (libs.includes("cusolver")) {
      this.libs.cusolver = this.symbols("cusolver", CUSOLVER_DECL, {
        cusolverDnCreate: handle,
        cusolverGetProperty: property,
        cusolverDnSpotrf_bufferSize: lwork,
        cusolverDnDpotrf_bufferSize: lwork,
        cusolverDnSgetrf_bufferSize: lwork,
        cusolverDnDgetrf_bufferSize: lwork,
        cusolverDnSgeqrf_bufferSize: lwork,
        cusolverDnDgeqrf_bufferSize: lwork,
        cusolverDnSorgqr_bufferSize: lwork,
        cusolverDnDorgqr_bufferSize: lwork,
        cusolverDnSsyevd_bufferSize: lwork,
        cusolverDnDsyevd_bufferSize: lwork,
        cusolverDnSgesvd_bufferSize: lwork,
        cusolverDnDgesvd_bufferSize: lwork,
      }) as MathLibraries["cusolver"];
      this.info.cusolver = { path: "(recording)", version: "12.0.0" };
    }
    for (const l of ["cublas", "cublasLt", "cufft", "cusolver"] as const)
      if (!libs.includes(l)) this.info[l] = { reason: `${l} left out of this RecordingLayer` };
  }

  /** Makes the next `times` calls of `name` return `status` (e.g. cuMemAlloc_v2 -> 2). */
  fail(name: string, status: number, times = 1): void {
    this.failures.set(name, { status, times });
  }

  /**
   * Replaces the behaviour of one function (e.g. a test playing cuSOLVER writing devInfo);
   * the call is still recorded.
   */
  on(name: string, handler: (...args: never[]) => unknown): void {
    this.overrides.set(name, handler);
  }

  /** Recorded calls of one function. */
  callsOf(name: string): RecordedCall[] {
    return this.calls.filter((c) => c.name === name);
  }

  /** Names of the recorded calls, in order (optionally only those of one library). */
  names(lib?: RecordedCall["lib"]): string[] {
    return this.calls.filter((c) => lib === undefined || c.lib === lib).map((c) => c.name);
  }

  clear(): void {
    this.calls.length = 0;
    this.launches.length = 0;
  }

  addressOf(view: ArrayBufferView): bigint {
    const addr = this.nextView;
    this.nextView += BigInt(Math.ceil((view.byteLength + 64) / 64) * 64);
    this.views.set(addr, view);
    return addr;
  }

  describe(code: number): string | undefined {
    return CU_RESULT_NAMES[code] ? `(recording layer) ${CU_RESULT_NAMES[code]}` : undefined;
  }

  /** The bytes of a fake allocation from `ptr` (which may point inside it). */
  bytesAt(ptr: bigint, length: number): Uint8Array | undefined {
    for (const [base, bytes] of this.memory) {
      if (ptr >= base && ptr + BigInt(length) <= base + BigInt(bytes.byteLength)) {
        const off = Number(ptr - base);
        return bytes.subarray(off, off + length);
      }
    }
    return undefined;
  }

  private handle(): bigint {
    this.nextHandle += 0x100n;
    return this.nextHandle;
  }

  private symbols(
    lib: RecordedCall["lib"],
    decl: Record<string, unknown>,
    handlers: Record<string, (...args: never[]) => unknown>,
  ): Record<string, (...args: unknown[]) => unknown> {
    const out: Record<string, (...args: unknown[]) => unknown> = {};
    for (const name of Object.keys(decl)) {
      out[name] = (...args: unknown[]) => {
        const device = this.current;
        const f = this.failures.get(name);
        let result: unknown;
        if (f && f.times > 0) {
          f.times--;
          result = f.status;
        } else {
          const h = this.overrides.get(name) ?? handlers[name];
          result = h ? h(...(args as never[])) : 0; // each handler declares its own argument types
        }
        const status = typeof result === "number" ? result : 0;
        this.calls.push({ lib, name, args, status, device });
        return result;
      };
    }
    return out;
  }

  private alloc(bytes: number | bigint): bigint {
    const n = Number(bytes);
    const dev = Math.max(0, this.current);
    const d = this.devices[dev]!;
    if (this.allocatedPerDevice[dev]! + n > d.totalMemory) return 0n;
    const ptr = this.nextDevicePtr;
    this.nextDevicePtr += BigInt(Math.ceil((n + 256) / 256) * 256);
    this.memory.set(ptr, new Uint8Array(n));
    this.memoryDevice.set(ptr, dev);
    this.allocatedPerDevice[dev]! += n;
    return ptr;
  }

  // Long: a table: one fake driver entry point per line.
  private driverHandlers(): Record<string, (...args: never[]) => unknown> {
    const i32 = (out: Int32Array, v: number) => {
      out[0] = v;
      return 0;
    };
    const dev = (d: number) => this.devices[d];
    return {
      cuInit: () => 0,
      cuDriverGetVersion: (out: Int32Array) => i32(out, 13000),
      cuDeviceGetCount: (out: Int32Array) => i32(out, this.devices.length),
      cuDeviceGet: (out: Int32Array, ordinal: number) =>
        dev(ordinal) ? i32(out, ordinal) : 101 /* CUDA_ERROR_INVALID_DEVICE */,
      cuDeviceGetName: (out: Uint8Array, len: number, d: number) => {
        const bytes = new TextEncoder().encode(dev(d)!.name);
        out.fill(0);
        out.set(bytes.subarray(0, len - 1));
        return 0;
      },
      cuDeviceGetAttribute: (out: Int32Array, attr: number, d: number) => {
        const x = dev(d)!;
        const values: Record<number, number> = {
          1: 1024,
          8: 48 * 1024,
          10: 32,
          16: x.multiprocessors ?? 80,
          33: d,
          38: 40 * 2 ** 20,
          75: x.major,
          76: x.minor,
          97: x.sharedMemoryPerBlockOptin ?? 99 * 1024,
        };
        return i32(out, values[attr] ?? 0);
      },
      cuDeviceTotalMem_v2: (out: BigUint64Array, d: number) => {
        out[0] = BigInt(dev(d)!.totalMemory);
        return 0;
      },
      cuDevicePrimaryCtxRetain: (out: BigUint64Array, d: number) => {
        const h = this.handle();
        this.contextDevice.set(h, d);
        out[0] = h;
        return 0;
      },
      cuCtxCreate_v4: (out: BigUint64Array, _p: unknown, _f: number, d: number) => {
        const h = this.handle();
        this.contextDevice.set(h, d);
        this.current = d;
        out[0] = h;
        return 0;
      },
      cuCtxSetCurrent: (ctx: bigint) => {
        const d = this.contextDevice.get(BigInt(ctx));
        if (d === undefined) return 201; // CUDA_ERROR_INVALID_CONTEXT
        this.current = d;
        return 0;
      },
      cuCtxGetCurrent: (out: BigUint64Array) => {
        out[0] = 0n;
        return 0;
      },
      cuCtxPopCurrent_v2: (out: BigUint64Array) => {
        out[0] = 0n;
        return 0;
      },
      cuStreamCreate: (out: BigUint64Array) => {
        out[0] = this.handle();
        return 0;
      },
      cuEventCreate: (out: BigUint64Array) => {
        out[0] = this.handle();
        return 0;
      },
      cuEventQuery: () => 0,
      cuStreamQuery: () => 0,
      cuMemAlloc_v2: (out: BigUint64Array, bytes: number | bigint) => {
        const p = this.alloc(bytes);
        if (p === 0n) return 2; // CUDA_ERROR_OUT_OF_MEMORY
        out[0] = p;
        return 0;
      },
      cuMemFree_v2: (ptr: bigint) => {
        const p = BigInt(ptr);
        const bytes = this.memory.get(p);
        if (!bytes) return 1; // CUDA_ERROR_INVALID_VALUE
        this.memory.delete(p);
        this.allocatedPerDevice[this.memoryDevice.get(p) ?? 0]! -= bytes.byteLength;
        this.memoryDevice.delete(p);
        return 0;
      },
      cuMemGetInfo_v2: (free: BigUint64Array, total: BigUint64Array) => {
        const d = Math.max(0, this.current);
        total[0] = BigInt(this.devices[d]!.totalMemory);
        free[0] = BigInt(this.devices[d]!.totalMemory - this.allocatedPerDevice[d]!);
        return 0;
      },
      cuMemcpyHtoDAsync_v2: (dst: bigint, src: ArrayBufferView, n: number | bigint) => {
        const to = this.bytesAt(BigInt(dst), Number(n));
        if (!to) return 1;
        to.set(new Uint8Array(src.buffer, src.byteOffset, Number(n)));
        return 0;
      },
      cuMemcpyDtoHAsync_v2: (dst: ArrayBufferView, src: bigint, n: number | bigint) => {
        const from = this.bytesAt(BigInt(src), Number(n));
        if (!from) return 1;
        new Uint8Array(dst.buffer, dst.byteOffset, Number(n)).set(from);
        return 0;
      },
      cuMemcpyDtoDAsync_v2: (dst: bigint, src: bigint, n: number | bigint) => {
        const from = this.bytesAt(BigInt(src), Number(n));
        const to = this.bytesAt(BigInt(dst), Number(n));
        if (!from || !to) return 1;
        to.set(from.slice());
        return 0;
      },
      cuMemcpyPeerAsync: (
        dst: bigint,
        _dc: bigint,
        src: bigint,
        _sc: bigint,
        n: number | bigint,
      ) => {
        const from = this.bytesAt(BigInt(src), Number(n));
        const to = this.bytesAt(BigInt(dst), Number(n));
        if (!from || !to) return 1;
        to.set(from.slice());
        return 0;
      },
      cuMemsetD8Async: (dst: bigint, value: number, n: number | bigint) => {
        const to = this.bytesAt(BigInt(dst), Number(n));
        if (!to) return 1;
        to.fill(value);
        return 0;
      },
      cuModuleLoadData: (out: BigUint64Array) => {
        out[0] = this.handle();
        return 0;
      },
      cuModuleGetFunction: (out: BigUint64Array, _m: bigint, name: Uint8Array | string) => {
        const h = this.handle();
        const s =
          typeof name === "string"
            ? name
            : new TextDecoder().decode(name.subarray(0, name.indexOf(0)));
        this.functionNames.set(h, s);
        out[0] = h;
        return 0;
      },
      cuFuncGetAttribute: (out: Int32Array) => i32(out, 32),
      cuLaunchKernel: (
        fn: bigint,
        gx: number,
        gy: number,
        gz: number,
        bx: number,
        by: number,
        bz: number,
        shared: number,
        _stream: bigint,
        params: BigUint64Array,
      ) => {
        // Map the parameter pointers back to the packed host buffer they point into.
        const base = params.length > 0 ? params[0]! : 0n;
        let packed: ArrayBuffer | undefined;
        let origin = 0n;
        for (const [addr, view] of this.views) {
          if (base >= addr && base < addr + BigInt(view.byteLength)) {
            packed = view.buffer as ArrayBuffer;
            origin = addr - BigInt(view.byteOffset);
          }
        }
        this.launches.push({
          kernel: this.functionNames.get(BigInt(fn)) ?? `0x${BigInt(fn).toString(16)}`,
          grid: [gx, gy, gz],
          block: [bx, by, bz],
          sharedBytes: shared,
          params: (packed ?? new ArrayBuffer(0)).slice(0),
          offsets: [...params].map((p) => Number(p - origin)),
          device: this.current,
        });
        this.views.clear();
        return 0;
      },
    };
  }
}

/** Reads argument `i` of a recorded launch as the given type. */
export function launchArg(
  l: RecordedLaunch,
  i: number,
  type: "ptr" | "i32" | "u32" | "i64" | "f32" | "f64",
): number | bigint {
  const dv = new DataView(l.params);
  const o = l.offsets[i]!;
  switch (type) {
    case "ptr":
      return dv.getBigUint64(o, true);
    case "i64":
      return dv.getBigInt64(o, true);
    case "i32":
      return dv.getInt32(o, true);
    case "u32":
      return dv.getUint32(o, true);
    case "f32":
      return dv.getFloat32(o, true);
    case "f64":
      return dv.getFloat64(o, true);
  }
}
