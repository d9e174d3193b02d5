/**
 * One CUDA runtime: a driver over a layer, and per device its caching allocator, library
 * handles (cuBLAS with its workspace, cuBLASLt, cuSOLVER) and cuFFT plan cache. Kernels get
 * it from state.ts; tests make one over a RecordingLayer.
 */
import { DeviceError } from "@backplane/core";
import { readEnv } from "@backplane/core/cpu";
import { type Block, CachingAllocator } from "./allocator.ts";
import { CudaDriver, type KernelArg, type ModuleSource } from "./driver.ts";
import { check } from "./errors.ts";
import { cublasWorkspaceBytes } from "./kernels/blas/modes.ts";
import { PlanCache, type PlanFactory } from "./kernels/fft/plan-cache.ts";
import type {
  CublasLtSymbols,
  CublasSymbols,
  CudaLayer,
  CufftSymbols,
  CusolverSymbols,
  MathLibraries,
} from "./layer.ts";
import { moduleOf, ptxImage } from "./ptx.ts";

/** A cuFFT plan: its handle and the work area it needs (auto-allocation is off). */
export interface FftPlan {
  handle: number;
  workSize: number;
}

/** Temporary device buffers of one operation, all freed when it has been enqueued. */
export class DeviceScratch {
  private readonly blocks: Block[] = [];
  constructor(
    private readonly rt: CudaRuntime,
    readonly device: number,
  ) {}
  alloc(bytes: number): bigint {
    const b = this.rt.allocator(this.device).malloc(bytes);
    this.blocks.push(b);
    return b.ptr;
  }
  /** Uploads host data into a new scratch buffer. */
  upload(data: ArrayBufferView): bigint {
    const ptr = this.alloc(data.byteLength);
    this.rt.driver.copyHtoD(this.device, ptr, data);
    return ptr;
  }
  /** Frees everything (safe at once: later users of the memory are ordered after this work). */
  release(): void {
    const a = this.rt.allocator(this.device);
    for (const b of this.blocks.splice(0)) a.free(b);
  }
}

const GRID_CAP = 65535;

/** A 1-D launch for `count` elements with grid-stride loops. */
export function grid1d(count: number, threads = 256): [number, number, number] {
  return [Math.max(1, Math.min(GRID_CAP, Math.ceil(count / threads))), 1, 1];
}

export class CudaRuntime {
  readonly driver: CudaDriver;
  private readonly allocators = new Map<number, CachingAllocator>();
  private readonly blasHandles = new Map<number, bigint>();
  private readonly blasWorkspaces = new Map<number, Block>();
  private readonly ltHandles = new Map<number, bigint>();
  private readonly solverHandles = new Map<number, bigint>();
  private readonly planCaches = new Map<number, PlanCache<FftPlan>>();
  private readonly out64 = new BigUint64Array(1);
  /** Set by release(): its contexts, and with them every device pointer it handed out, are gone. */
  released = false;

  constructor(
    readonly layer: CudaLayer,
    moduleSource: ModuleSource = ptxImage,
  ) {
    this.driver = new CudaDriver(layer, moduleSource);
  }

  allocator(device: number): CachingAllocator {
    let a = this.allocators.get(device);
    if (!a) {
      const d = this.driver;
      a = new CachingAllocator(device, {
        malloc: (bytes) => d.memAlloc(device, bytes),
        free: (ptr) => d.memFree(device, ptr),
        synchronize: () => d.synchronize(device),
        totalMemory: () => d.device(device).totalMemory,
      });
      this.allocators.set(device, a);
    }
    return a;
  }

  /** Allocators created so far, by device. */
  allocatorDevices(): number[] {
    return [...this.allocators.keys()];
  }

  /** A DeviceScratch for an operation; call release() when its work has been enqueued. */
  scratchFor(device: number): DeviceScratch {
    return new DeviceScratch(this, device);
  }

  /** Runs `fn` with a DeviceScratch whose buffers are released afterwards. */
  scratch<R>(device: number, fn: (s: DeviceScratch) => R): R {
    const s = new DeviceScratch(this, device);
    try {
      return fn(s);
    } finally {
      s.release();
    }
  }

  /** Launches one of the package's PTX kernels by name. */
  launch(
    device: number,
    kernel: string,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    sharedBytes: number,
    args: readonly KernelArg[],
  ): void {
    const fn = this.kernel(device, kernel);
    this.driver.launch(device, fn, kernel, grid, block, sharedBytes, args);
  }

  /** The CUfunction of one of the package's PTX kernels on a device (module loaded on first use). */
  kernel(device: number, kernel: string): bigint {
    const module = moduleOf(kernel);
    if (!module)
      throw new DeviceError(
        `kernel ${kernel} is not in the package's PTX (ptx/manifest.json); rebuild it with npm run build:kernels`,
      );
    return this.driver.function(device, module, kernel);
  }

  /** A math library's symbols, or a DeviceError with the reason it is not loaded. */
  lib<K extends keyof MathLibraries>(name: K): NonNullable<MathLibraries[K]> {
    const l = this.layer.libs[name];
    if (!l)
      throw new DeviceError(
        `${name} is not loaded: ${this.layer.info[name]?.reason ?? "await backends.ready() first"}`,
      );
    return l as NonNullable<MathLibraries[K]>;
  }

  /** The device's cuBLAS handle, bound to its stream, with torch's workspace size. */
  cublas(device: number): { handle: bigint; lib: CublasSymbols } {
    const lib = this.lib("cublas");
    let h = this.blasHandles.get(device);
    if (h === undefined) {
      h = this.newCublasHandle(device, lib);
      this.blasHandles.set(device, h);
    }
    this.driver.use(device);
    return { handle: h, lib };
  }

  /**
   * A cuBLAS handle bound to the device's stream and workspace. Cached only once complete: a
   * handle left on the legacy stream would race the device's stream, so a failed setup
   * destroys it (and frees the workspace) and the next call starts over.
   */
  private newCublasHandle(device: number, lib: CublasSymbols): bigint {
    this.driver.use(device);
    check("cublas", "cublasCreate_v2", lib.cublasCreate_v2(this.out64));
    const h = this.out64[0]!;
    let ws: Block | undefined;
    try {
      check("cublas", "cublasSetStream_v2", lib.cublasSetStream_v2(h, this.driver.stream(device)));
      const bytes = cublasWorkspaceBytes(
        readEnv("CUBLAS_WORKSPACE_CONFIG"),
        this.driver.device(device).major,
      );
      ws = this.allocator(device).malloc(bytes);
      check("cublas", "cublasSetWorkspace_v2", lib.cublasSetWorkspace_v2(h, ws.ptr, bytes));
    } catch (e) {
      lib.cublasDestroy_v2(h);
      if (ws) this.allocator(device).free(ws);
      throw e;
    }
    this.blasWorkspaces.set(device, ws);
    return h;
  }

  cublasLt(device: number): { handle: bigint; lib: CublasLtSymbols } {
    const lib = this.lib("cublasLt");
    let h = this.ltHandles.get(device);
    if (h === undefined) {
      this.driver.use(device);
      check("cublas", "cublasLtCreate", lib.cublasLtCreate(this.out64));
      h = this.out64[0]!;
      this.ltHandles.set(device, h);
    }
    this.driver.use(device);
    return { handle: h, lib };
  }

  cusolver(device: number): { handle: bigint; lib: CusolverSymbols } {
    const lib = this.lib("cusolver");
    let h = this.solverHandles.get(device);
    if (h === undefined) {
      this.driver.use(device);
      check("cusolver", "cusolverDnCreate", lib.cusolverDnCreate(this.out64));
      const created = this.out64[0]!;
      // Cached only once bound to the device's stream (as for cuBLAS above).
      try {
        check(
          "cusolver",
          "cusolverDnSetStream",
          lib.cusolverDnSetStream(created, this.driver.stream(device)),
        );
      } catch (e) {
        lib.cusolverDnDestroy(created);
        throw e;
      }
      h = created;
      this.solverHandles.set(device, h);
    }
    this.driver.use(device);
    return { handle: h, lib };
  }

  /** The device's cuFFT plan cache. */
  planCache(device: number): PlanCache<FftPlan> {
    let c = this.planCaches.get(device);
    if (!c) {
      c = new PlanCache<FftPlan>(device, () => this.planFactory(device));
      this.planCaches.set(device, c);
    }
    return c;
  }

  private planFactory(device: number): PlanFactory<FftPlan> | undefined {
    const lib: CufftSymbols | undefined = this.layer.libs.cufft;
    if (!lib) return undefined;
    return {
      create: (key) => {
        const k = parsePlanKey(key);
        this.driver.use(device);
        const h = new Int32Array(1);
        check("cufft", "cufftCreate", lib.cufftCreate(h));
        const handle = h[0]!;
        try {
          check("cufft", "cufftSetAutoAllocation", lib.cufftSetAutoAllocation(handle, 0));
          const n = Int32Array.of(k.n);
          const inembed = Int32Array.of(k.inembed);
          const onembed = Int32Array.of(k.onembed);
          const work = new BigUint64Array(1);
          check(
            "cufft",
            "cufftMakePlanMany",
            lib.cufftMakePlanMany(
              handle,
              1,
              n,
              inembed,
              k.istride,
              k.idist,
              onembed,
              k.ostride,
              k.odist,
              k.type,
              k.batch,
              work,
            ),
          );
          check("cufft", "cufftSetStream", lib.cufftSetStream(handle, this.driver.stream(device)));
          return { handle, workSize: Number(work[0]) };
        } catch (e) {
          lib.cufftDestroy(handle);
          throw e;
        }
      },
      destroy: (plan) => {
        this.driver.use(device);
        check("cufft", "cufftDestroy", lib.cufftDestroy(plan.handle));
      },
    };
  }

  /** Frees library handles, cached plans and memory, then the driver's resources. */
  release(): void {
    this.released = true;
    for (const c of this.planCaches.values()) {
      try {
        c.clear();
      } catch {
        // best effort
      }
    }
    const { cublas, cublasLt, cusolver } = this.layer.libs;
    for (const h of this.blasHandles.values()) cublas?.cublasDestroy_v2(h);
    for (const h of this.ltHandles.values()) cublasLt?.cublasLtDestroy(h);
    for (const h of this.solverHandles.values()) cusolver?.cusolverDnDestroy(h);
    for (const [d, ws] of this.blasWorkspaces) this.allocator(d).free(ws);
    for (const a of this.allocators.values()) a.emptyCache();
    this.blasHandles.clear();
    this.ltHandles.clear();
    this.solverHandles.clear();
    this.blasWorkspaces.clear();
    this.driver.release();
  }
}

/** The parameters of a 1-D batched cuFFT plan, and the cache key that names them. */
export interface PlanKey {
  type: number;
  n: number;
  inembed: number;
  istride: number;
  idist: number;
  onembed: number;
  ostride: number;
  odist: number;
  batch: number;
}

export function planKey(k: PlanKey): string {
  return `t${k.type}:n${k.n}:i${k.inembed},${k.istride},${k.idist}:o${k.onembed},${k.ostride},${k.odist}:b${k.batch}`;
}

export function parsePlanKey(s: string): PlanKey {
  const m = /^t(\d+):n(\d+):i(\d+),(\d+),(\d+):o(\d+),(\d+),(\d+):b(\d+)$/.exec(s);
  if (!m) throw new Error(`bad cuFFT plan key ${s}`);
  const v = m.slice(1).map(Number);
  return {
    type: v[0]!,
    n: v[1]!,
    inembed: v[2]!,
    istride: v[3]!,
    idist: v[4]!,
    onembed: v[5]!,
    ostride: v[6]!,
    odist: v[7]!,
    batch: v[8]!,
  };
}
