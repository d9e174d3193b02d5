/**
 * What the kernels run on: a cuDNN handle per device (bound to the device's stream from core's
 * device contract), the plan cache, plan choice under the flags, and execution with a
 * variant pack and a workspace borrowed from the device's memory.
 */

import type { DType } from "@backplane/core";
import type { DeviceContext } from "@backplane/core/backend";
import { CudnnError } from "./errors.ts";
import { GraphBuilder } from "./graph/builder.ts";
import { check, Descriptor } from "./graph/descriptor.ts";
import type { CudnnLayer } from "./layer.ts";
import { ATTR, STATUS } from "./native/api.ts";
import { type CachedPlan, PlanCache } from "./plan/cache.ts";
import {
  destroyCandidate,
  type ExecutionPlan,
  engineConfigs,
  executionPlan,
  releasePlan,
} from "./plan/engines.ts";
import { benchmarkCount, fastest, type SelectionFlags, screen } from "./plan/select.ts";

/** Times one plan on the device (ms): the benchmark mode's measure. */
export type PlanTimer = (plan: ExecutionPlan) => number;

export class CudnnRuntime {
  readonly plans = new PlanCache();
  private readonly handles = new Map<number, bigint>();

  constructor(readonly layer: CudnnLayer) {}

  get lib() {
    return this.layer.symbols;
  }

  /**
   * The device's cuDNN handle, created on first use and bound to the device's stream. Makes the
   * device current each time (a no-op when it is): plans are built and run in the context of
   * the device the handle belongs to, not of the device used last.
   */
  handle(ctx: DeviceContext, device: number): bigint {
    ctx.activate(device);
    let h = this.handles.get(device);
    if (h === undefined) {
      h = this.newHandle(ctx, device);
      this.handles.set(device, h);
    }
    return h;
  }

  /**
   * A handle bound to the device's stream. Cached only once bound: a handle left on the legacy
   * stream would race the device's stream, so a failed bind destroys it and the next call
   * starts over.
   */
  private newHandle(ctx: DeviceContext, device: number): bigint {
    const out = new BigUint64Array(1);
    check(this.lib, "cudnnCreate", this.lib.cudnnCreate(out));
    const h = out[0]!;
    try {
      check(this.lib, "cudnnSetStream", this.lib.cudnnSetStream(h, ctx.stream(device)));
    } catch (e) {
      this.lib.cudnnDestroy(h);
      throw e;
    }
    return h;
  }

  /**
   * The plan for `key`: from the cache, or built from the graph `build` adds, its engines
   * screened by the flags, and either the first that cuDNN accepts or (benchmark) the
   * fastest of up to benchmarkLimit of them. `handle` is the one handle() just returned, so
   * the plan is built with its device current.
   */
  plan(
    key: string,
    build: (b: GraphBuilder) => Descriptor,
    dtype: DType,
    flags: SelectionFlags,
    handle: bigint,
    time?: PlanTimer,
  ): CachedPlan {
    const cached = this.plans.get(key);
    if (cached) return cached;
    const refused = this.plans.refusal(key);
    if (refused) throw refused;
    const b = new GraphBuilder(this.lib, handle);
    try {
      const graph = build(b);
      const heuristicErrors: string[] = [];
      const candidates = engineConfigs(this.lib, graph, heuristicErrors);
      const { allowed, excluded } = screen(candidates, dtype, flags);
      const want = benchmarkCount(allowed.length, flags);
      const built: ExecutionPlan[] = [];
      const refused = [...excluded];
      for (const c of allowed) {
        if (built.length >= want) break;
        try {
          built.push(executionPlan(this.lib, c, handle));
        } catch (e) {
          refused.push({ index: c.index, reason: (e as Error).message });
        }
      }
      for (const c of candidates) destroyCandidate(c);
      if (built.length === 0) {
        // Remembered: asking again (every supports() of the problem) builds nothing.
        const err = noPlan(candidates.length, refused, heuristicErrors);
        this.plans.refuse(key, err);
        throw err;
      }
      const timings = timeAll(built, flags.benchmark && built.length > 1 ? time : undefined);
      const chosen = timings.length ? fastest(timings)!.plan : built[0]!;
      for (const p of built) if (p !== chosen) releasePlan(p);
      const plan: CachedPlan = {
        ...chosen,
        chosenBy: timings.length ? "benchmark" : "heuristics",
        excluded: refused,
        timings: timings.map(({ engine, ms }) => ({ engine, ms })),
      };
      this.plans.set(key, plan);
      return plan;
    } finally {
      b.dispose();
    }
  }

  /**
   * Enqueues the plan on the device's stream with these device pointers (uid -> address), the
   * device current (handle() makes it so).
   */
  execute(
    ctx: DeviceContext,
    device: number,
    plan: ExecutionPlan,
    pointers: ReadonlyMap<number, bigint>,
  ): void {
    const handle = this.handle(ctx, device);
    const workspace =
      plan.workspaceBytes > 0 ? ctx.allocate(device, plan.workspaceBytes) : undefined;
    try {
      const pack = variantPack(this.lib, plan, pointers, workspace?.ptr ?? 0n);
      const status = this.lib.cudnnBackendExecute(handle, plan.descriptor.handle, pack.handle);
      if (status !== 0) check(this.lib, "cudnnBackendExecute", status);
    } finally {
      // Stream-ordered: later users of the memory are ordered after this work.
      workspace?.free();
    }
  }

  release(): void {
    this.plans.clear();
    for (const h of this.handles.values()) this.lib.cudnnDestroy(h);
    this.handles.clear();
  }
}

/** Benchmark timings of every built plan ([] without a timer); a failed run releases them all. */
function timeAll(
  built: ExecutionPlan[],
  time: PlanTimer | undefined,
): { engine: number; ms: number; plan: ExecutionPlan }[] {
  if (!time) return [];
  try {
    return built.map((p) => ({ engine: p.engine, ms: time(p), plan: p }));
  } catch (e) {
    for (const p of built) releasePlan(p);
    throw e;
  }
}

/**
 * The variant pack binding these addresses (by uid) and this workspace: the plan's last one
 * when the uids and every address are the same, else a new one that the plan keeps.
 */
function variantPack(
  lib: CudnnLayer["symbols"],
  plan: ExecutionPlan,
  pointers: ReadonlyMap<number, bigint>,
  workspace: bigint,
): Descriptor {
  const last = plan.lastPack;
  // Compared without allocating: this runs on every call.
  if (last && sameBinding(last, pointers, workspace)) return last.descriptor;
  const n = pointers.size;
  const uids = [...pointers.keys()];
  const addresses = new BigUint64Array(n + 1);
  let i = 0;
  for (const ptr of pointers.values()) addresses[i++] = ptr;
  addresses[n] = workspace;
  const pack = Descriptor.create(lib, "CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR");
  try {
    pack
      .setRaw(
        "UNIQUE_IDS",
        ATTR.CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
        "CUDNN_TYPE_INT64",
        BigInt64Array.from(uids, BigInt),
      )
      .setRaw(
        "DATA_POINTERS",
        ATTR.CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
        "CUDNN_TYPE_VOID_PTR",
        addresses.subarray(0, n),
      )
      .setRaw(
        "WORKSPACE",
        ATTR.CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
        "CUDNN_TYPE_VOID_PTR",
        addresses.subarray(n),
      )
      .finalize();
  } catch (e) {
    pack.destroy();
    throw e;
  }
  last?.descriptor.destroy();
  plan.lastPack = { descriptor: pack, uids, addresses };
  return pack;
}

function sameBinding(
  kept: NonNullable<ExecutionPlan["lastPack"]>,
  pointers: ReadonlyMap<number, bigint>,
  workspace: bigint,
): boolean {
  const n = kept.uids.length;
  if (pointers.size !== n || kept.addresses[n] !== workspace) return false;
  let i = 0;
  for (const [uid, ptr] of pointers) {
    if (kept.uids[i] !== uid || kept.addresses[i] !== ptr) return false;
    i++;
  }
  return true;
}

function noPlan(
  proposed: number,
  refused: readonly { index: number; reason: string }[],
  heuristicErrors: readonly string[],
): CudnnError {
  const heuristics = heuristicErrors.length ? ` (heuristics: ${heuristicErrors.join("; ")})` : "";
  const why =
    proposed === 0
      ? `cuDNN's heuristics proposed no engine for this graph${heuristics}`
      : `none of the ${proposed} engines cuDNN proposed can run: ${refused
          .slice(0, 4)
          .map((r) => `engine ${r.index}: ${r.reason}`)
          .join("; ")}${heuristics}`;
  return new CudnnError("choosing an execution plan", STATUS.CUDNN_STATUS_NOT_SUPPORTED, why);
}
