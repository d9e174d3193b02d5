/// <reference types="@webgpu/types" />
/**
 * Running WGSL: the pools, the pipeline cache, one compute dispatch per kernel call
 * (a parameter block in a pooled storage buffer, a bind group, a submit), and the GPU
 * time of traced calls (timestamp queries where the device has them, else the time
 * until the queue reports the work done) written to the verbose sink.
 */
import { getFlag } from "@backplane/core";
import { emitVerbose, getOp, type OpParams } from "@backplane/core/backend";
import { config, type GpuState, onDeviceClose, onDeviceOpen, requireState } from "./gpu.ts";
import { BufferPool, MAP_READ_MODE, Usage } from "./pool.ts";

export const STORAGE_USAGE = Usage.STORAGE | Usage.COPY_SRC | Usage.COPY_DST;
const STAGING_USAGE = Usage.MAP_READ | Usage.COPY_DST;
const COMPUTE = 0x4; // GPUShaderStage.COMPUTE

export interface Pools {
  storage: BufferPool;
  staging: BufferPool;
}

/** Counters that survive device changes (for memory tests across re-initialisation). */
let pools: Pools | undefined;
const pipelines = new Map<string, Pipeline>();
const layouts = new Map<string, GPUBindGroupLayout>();
/** GPU-time readbacks of traced calls still in flight; sync() waits for them. */
export const pendingTraces = new Set<Promise<void>>();

onDeviceOpen((s) => {
  pools = {
    storage: new BufferPool(s.device, STORAGE_USAGE, "backplane-storage", config.poolLimitBytes),
    staging: new BufferPool(s.device, STAGING_USAGE, "backplane-staging", 64 * 2 ** 20),
  };
});
onDeviceClose(() => {
  pools?.storage.detach();
  pools?.staging.detach();
  pipelines.clear();
  layouts.clear();
});

export function getPools(): Pools | undefined {
  return pools;
}
export function requirePools(what: string): Pools & { s: GpuState } {
  const s = requireState(what);
  return { ...pools!, s };
}

/**
 * A buffer range bound to a shader: `size` bytes from `offset` (0 where absent; a multiple
 * of minStorageBufferOffsetAlignment).
 */
export interface Binding {
  buffer: GPUBuffer;
  size: number;
  offset?: number;
}

export interface Pipeline {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
  reads: number;
  writes: number;
}

function layoutFor(device: GPUDevice, reads: number, writes: number): GPUBindGroupLayout {
  const key = `${reads},${writes}`;
  let l = layouts.get(key);
  if (!l) {
    const entries: GPUBindGroupLayoutEntry[] = [];
    for (let i = 0; i < reads + writes + 1; i++) {
      const type = i >= reads && i < reads + writes ? "storage" : "read-only-storage";
      entries.push({ binding: i, visibility: COMPUTE, buffer: { type } });
    }
    l = device.createBindGroupLayout({ entries, label: `backplane-${key}` });
    layouts.set(key, l);
  }
  return l;
}

/**
 * The compiled pipeline for `key`, built from `code()` on first use. Bindings are
 * `reads` read-only storage buffers, then `writes` writable ones, then the parameter block.
 */
export function pipelineFor(
  key: string,
  reads: number,
  writes: number,
  code: () => string,
): Pipeline {
  let p = pipelines.get(key);
  if (p) return p;
  const s = requireState(key);
  const layout = layoutFor(s.device, reads, writes);
  const module = s.device.createShaderModule({ code: code(), label: key });
  const pipeline = s.device.createComputePipeline({
    label: key,
    layout: s.device.createPipelineLayout({ bindGroupLayouts: [layout] }),
    compute: { module, entryPoint: "main" },
  });
  p = { pipeline, layout, reads, writes };
  pipelines.set(key, p);
  return p;
}

/** Number of compiled pipelines (for tests and capability()). */
export function pipelineCount(): number {
  return pipelines.size;
}

/** A parameter block: u32 words; floats and ints are stored by their bits. */
export class Meta {
  private words: number[] = [];
  u32(...v: number[]): this {
    for (const x of v) this.words.push(x >>> 0);
    return this;
  }
  f32(v: number): this {
    F32[0] = v;
    this.words.push(U32[0]);
    return this;
  }
  /** `values` padded (with `fill`) to `length` words. */
  list(values: readonly number[], length: number, fill = 0): this {
    for (let i = 0; i < length; i++) this.words.push((i < values.length ? values[i] : fill) >>> 0);
    return this;
  }
  build(): Uint32Array<ArrayBuffer> {
    return Uint32Array.from(this.words.length > 0 ? this.words : [0]);
  }
}
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** Workgroup grid for `groups` workgroups in a line, folded into y past the x limit. */
export function grid(groups: number, limit: number): [number, number, number] {
  if (groups <= limit) return [Math.max(groups, 1), 1, 1];
  return [limit, Math.ceil(groups / limit), 1];
}

/** The device's maxComputeWorkgroupsPerDimension. */
export function groupLimit(): number {
  return requireState("dispatch").limits.maxComputeWorkgroupsPerDimension;
}

/** Why a line of `groups` workgroups cannot be dispatched, or undefined. */
export function gridRefusal(groups: number, limit: number): string | undefined {
  return Math.ceil(groups / limit) > limit
    ? `needs ${groups} workgroups, more than maxComputeWorkgroupsPerDimension² (${limit}²)`
    : undefined;
}

/**
 * Launches `d` over a 3-D grid of `groups` workgroups, however large: one dispatch per
 * chunk of at most maxComputeWorkgroupsPerDimension workgroups in each dimension (a batch
 * of 65536 matrices, 4.2M output positions of a conv2d). Each dispatch's parameter block
 * is `d.meta` followed by the chunk's first workgroup id (x, y, z): the shader adds it to
 * its workgroup_id.
 */
export function launchGrid(d: Omit<Dispatch, "groups">, groups: [number, number, number]): void {
  const limit = groupLimit();
  const [gx, gy, gz] = groups.map((g) => Math.max(1, g));
  for (let z = 0; z < gz; z += limit)
    for (let y = 0; y < gy; y += limit)
      for (let x = 0; x < gx; x += limit) {
        const meta = new Uint32Array(d.meta.length + 3);
        meta.set(d.meta);
        meta.set([x, y, z], d.meta.length);
        const chunk: [number, number, number] = [
          Math.min(limit, gx - x),
          Math.min(limit, gy - y),
          Math.min(limit, gz - z),
        ];
        launch({ ...d, meta, groups: chunk });
      }
}

export function tracing(): boolean {
  return getFlag("core.verbose") === true || getFlag("webgpu.verbose") === true;
}

export interface Dispatch {
  /** Kernel name, for errors and the trace. */
  kernel: string;
  /** Op and params: the trace line names the op's shape key and dtype. */
  op?: string;
  params?: OpParams;
  pipeline: Pipeline;
  reads: Binding[];
  writes: Binding[];
  meta: Uint32Array<ArrayBuffer>;
  groups: [number, number, number];
}

/** Encodes and submits one compute dispatch. */
export function launch(d: Dispatch): void {
  const { s, storage } = requirePools(d.kernel);
  const device = s.device;
  const metaBuf = storage.acquire(d.meta.byteLength);
  device.queue.writeBuffer(metaBuf.buffer, 0, d.meta);
  const bound = [...d.reads, ...d.writes, { buffer: metaBuf.buffer, size: d.meta.byteLength }];
  const bindGroup = device.createBindGroup({
    layout: d.pipeline.layout,
    entries: bound.map((b, i) => ({
      binding: i,
      resource: { buffer: b.buffer, offset: b.offset ?? 0, size: b.size },
    })),
  });
  const traced = tracing();
  const stamps = traced && s.timestamps ? timestampSet(device) : undefined;
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass(
    stamps
      ? {
          timestampWrites: {
            querySet: stamps.querySet,
            beginningOfPassWriteIndex: 0,
            endOfPassWriteIndex: 1,
          },
        }
      : undefined,
  );
  pass.setPipeline(d.pipeline.pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(d.groups[0], d.groups[1], d.groups[2]);
  pass.end();
  if (stamps) {
    encoder.resolveQuerySet(stamps.querySet, 0, 2, stamps.resolve, 0);
    encoder.copyBufferToBuffer(stamps.resolve, 0, stamps.read, 0, 16);
  }
  const t0 = performance.now();
  device.queue.submit([encoder.finish()]);
  // Safe at once: the next writeBuffer into this buffer is queued after this submit.
  storage.release(metaBuf.buffer, metaBuf.size);
  if (traced) trace(s, d, t0, stamps);
}

interface Stamps {
  querySet: GPUQuerySet;
  resolve: GPUBuffer;
  read: GPUBuffer;
}

function timestampSet(device: GPUDevice): Stamps {
  return {
    querySet: device.createQuerySet({ type: "timestamp", count: 2 }),
    resolve: device.createBuffer({ size: 16, usage: Usage.QUERY_RESOLVE | Usage.COPY_SRC }),
    read: device.createBuffer({ size: 16, usage: Usage.MAP_READ | Usage.COPY_DST }),
  };
}

function trace(s: GpuState, d: Dispatch, t0: number, stamps: Stamps | undefined): void {
  const opName = d.op ?? "-";
  let shape = "-";
  try {
    if (d.params) shape = getOp(opName)?.shapeKey(d.params) ?? "-";
  } catch {}
  const dtype = d.params?.dtype ?? "-";
  const line = (ms: number, how: string) =>
    emitVerbose(
      `backplane_verbose,gpu,${opName},webgpu:${d.kernel},${shape},${dtype},${ms.toFixed(4)} ms,${how}`,
    );
  let p: Promise<void>;
  if (stamps) {
    p = stamps.read.mapAsync(MAP_READ_MODE).then(
      () => {
        const t = new BigUint64Array(stamps.read.getMappedRange(0, 16).slice(0));
        stamps.read.unmap();
        line(Number(t[1] - t[0]) / 1e6, "timestamp-query");
      },
      (e) => line(Number.NaN, `timestamp readback failed: ${(e as Error)?.message}`),
    );
    p = p.finally(() => {
      stamps.querySet.destroy();
      stamps.resolve.destroy();
      stamps.read.destroy();
    });
  } else {
    p = s.device.queue
      .onSubmittedWorkDone()
      .then(() => line(performance.now() - t0, "queue (no timestamp-query)"));
  }
  const tracked: Promise<void> = p.catch(() => {}).finally(() => pendingTraces.delete(tracked));
  pendingTraces.add(tracked);
}
