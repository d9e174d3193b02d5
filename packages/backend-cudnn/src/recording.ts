/**
 * A cuDNN layer with no library behind it: descriptors are JS records, heuristics answer from
 * a table of fake engines (each with the numerical notes, workspace and run time a test
 * gives it), and every execution is recorded. The host logic — plan choice under the flags,
 * benchmark timing, the plan cache, variant packs, workspaces — runs on it unchanged.
 */
import type { CudnnLayer, CudnnSymbols } from "./layer.ts";
import { ATTR, DESC, STATUS, TYPE } from "./native/api.ts";

export interface FakeEngine {
  index: number;
  numericalNotes?: number[];
  behaviorNotes?: number[];
  workspaceBytes?: number;
  /** How long an execution takes (busy time), for benchmark mode. */
  ms?: number;
  /** Refuse to build a plan with this text (cuDNN's "not supported" for this problem). */
  refuse?: string;
}

interface DescriptorRecord {
  type: number;
  attrs: Map<number, (number | bigint)[]>;
  finalized: boolean;
  engine?: FakeEngine;
}

export interface Execution {
  engine: number;
  /** The cuDNN handle it ran on, and the one its plan was finalized with. */
  handle: bigint;
  planHandle: bigint;
  /** The variant pack's handle. */
  pack: bigint;
  uids: number[];
  pointers: bigint[];
  workspace: bigint;
}

const ELEMENT_BYTES: Partial<Record<number, number>> = {
  [TYPE.CUDNN_TYPE_INT64]: 8,
  [TYPE.CUDNN_TYPE_DOUBLE]: 8,
  [TYPE.CUDNN_TYPE_VOID_PTR]: 8,
  [TYPE.CUDNN_TYPE_HANDLE]: 8,
  [TYPE.CUDNN_TYPE_BACKEND_DESCRIPTOR]: 8,
  [TYPE.CUDNN_TYPE_BOOLEAN]: 1,
};

function read(type: number, count: number, buf: ArrayBufferView): (number | bigint)[] {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const size = ELEMENT_BYTES[type] ?? 4;
  const out: (number | bigint)[] = [];
  for (let i = 0; i < count; i++) {
    const at = i * size;
    if (type === TYPE.CUDNN_TYPE_FLOAT) out.push(dv.getFloat32(at, true));
    else if (type === TYPE.CUDNN_TYPE_DOUBLE) out.push(dv.getFloat64(at, true));
    else if (size === 8) out.push(dv.getBigUint64(at, true));
    else if (size === 1) out.push(dv.getUint8(at));
    else out.push(dv.getInt32(at, true));
  }
  return out;
}

export class RecordingLayer implements CudnnLayer {
  readonly kind = "recording" as const;
  readonly path = "(recording layer)";
  readonly records = new Map<bigint, DescriptorRecord>();
  readonly executions: Execution[] = [];
  /** Every call by name, in order. */
  readonly calls: string[] = [];
  private next = 0x1000n;
  private lastError = "";
  readonly symbols: CudnnSymbols;

  constructor(readonly engines: FakeEngine[]) {
    this.symbols = this.bind();
  }

  addressOf(view: ArrayBufferView): bigint {
    return 0x7000_0000n + BigInt(view.byteOffset);
  }

  private fail(status: number, text: string): number {
    this.lastError = text;
    return status;
  }

  private record(h: number | bigint): DescriptorRecord | undefined {
    return this.records.get(BigInt(h));
  }

  // Long: one small function per cuDNN entry point, side by side.
  private bind(): CudnnSymbols {
    const self = this;
    const log = (name: string) => self.calls.push(name);
    return {
      cudnnGetVersion: () => 92400n,
      cudnnGetCudartVersion: () => 13000n,
      cudnnGetMaxDeviceVersion: () => 1210n,
      cudnnGetErrorString: (s: number) => `status ${s}`,
      cudnnGetLastErrorString(buf: ArrayBufferView | null) {
        if (!buf) return undefined;
        const bytes = new TextEncoder().encode(self.lastError);
        const u8 = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
        u8.fill(0);
        u8.set(bytes.subarray(0, u8.length - 1));
        self.lastError = "";
        return undefined;
      },
      cudnnCreate(out: ArrayBufferView | null) {
        log("cudnnCreate");
        (out as BigUint64Array)[0] = self.next++;
        return 0;
      },
      cudnnDestroy: () => 0,
      cudnnSetStream: () => {
        log("cudnnSetStream");
        return 0;
      },
      cudnnBackendCreateDescriptor(type: number, out: ArrayBufferView | null) {
        const h = self.next++;
        self.records.set(h, { type, attrs: new Map(), finalized: false });
        (out as BigUint64Array)[0] = h;
        return 0;
      },
      cudnnBackendDestroyDescriptor(h: number | bigint) {
        self.records.delete(BigInt(h));
        return 0;
      },
      cudnnBackendSetAttribute(h, attr, type, count, buf) {
        const r = self.record(h);
        if (!r) return self.fail(STATUS.CUDNN_STATUS_BAD_PARAM, "unknown descriptor");
        if (r.finalized)
          return self.fail(STATUS.CUDNN_STATUS_BAD_PARAM, "descriptor already finalized");
        r.attrs.set(attr, read(type, Number(count), buf!));
        return 0;
      },
      cudnnBackendFinalize(h) {
        const r = self.record(h);
        if (!r) return self.fail(STATUS.CUDNN_STATUS_BAD_PARAM, "unknown descriptor");
        // cudnn_graph.h marks the graph's handle required: without it a real GPU's engines
        // were configured for "smVersion 0" and refused at finalize or execute.
        if (
          r.type === DESC.CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR &&
          !r.attrs.has(ATTR.CUDNN_ATTR_OPERATIONGRAPH_HANDLE)
        )
          return self.fail(
            STATUS.CUDNN_STATUS_BAD_PARAM,
            "CUDNN_ATTR_OPERATIONGRAPH_HANDLE is required",
          );
        if (r.type === DESC.CUDNN_BACKEND_ENGINE_DESCRIPTOR) r.engine = self.engineOf(r);
        if (r.type === DESC.CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
          r.engine ??= self.record(
            r.attrs.get(ATTR.CUDNN_ATTR_ENGINECFG_ENGINE)?.[0] ?? 0n,
          )?.engine;
        if (r.type === DESC.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
          const cfg = self.record(
            r.attrs.get(ATTR.CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)?.[0] ?? 0n,
          );
          r.engine = cfg?.engine;
          if (r.engine?.refuse)
            return self.fail(STATUS.CUDNN_STATUS_NOT_SUPPORTED, r.engine.refuse);
        }
        r.finalized = true;
        return 0;
      },
      cudnnBackendGetAttribute(h, attr, _type, requested, countOut, buf) {
        const r = self.record(h);
        if (!r) return self.fail(STATUS.CUDNN_STATUS_BAD_PARAM, "unknown descriptor");
        const values = self.answer(r, attr, Number(requested), buf!);
        (countOut as BigInt64Array)[0] = BigInt(values);
        return 0;
      },
      cudnnBackendExecute(handle, plan, pack) {
        const p = self.record(plan)!;
        const v = self.record(pack)!;
        const until = performance.now() + (p.engine?.ms ?? 0);
        while (performance.now() < until) {
          // Busy: the engine's run time, as a device would take it.
        }
        self.executions.push({
          engine: p.engine?.index ?? -1,
          handle: BigInt(handle),
          planHandle: BigInt(p.attrs.get(ATTR.CUDNN_ATTR_EXECUTION_PLAN_HANDLE)?.[0] ?? 0n),
          pack: BigInt(pack),
          uids: (v.attrs.get(ATTR.CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS) ?? []).map(Number),
          pointers: (v.attrs.get(ATTR.CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS) ?? []) as bigint[],
          workspace: (v.attrs.get(ATTR.CUDNN_ATTR_VARIANT_PACK_WORKSPACE)?.[0] ?? 0n) as bigint,
        });
        return 0;
      },
    } as CudnnSymbols;
  }

  /** Writes a GetAttribute answer into `buf`; returns the element count. */
  private answer(
    r: DescriptorRecord,
    attr: number,
    requested: number,
    buf: ArrayBufferView,
  ): number {
    const i32 = () => new Int32Array(buf.buffer, buf.byteOffset, requested);
    const i64 = () => new BigInt64Array(buf.buffer, buf.byteOffset, 1);
    const handles = () => new BigUint64Array(buf.buffer, buf.byteOffset, requested);
    switch (attr) {
      case ATTR.CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
        i64()[0] = BigInt(this.engines.length);
        return 1;
      case ATTR.CUDNN_ATTR_ENGINEHEUR_RESULTS: {
        const mode = Number(r.attrs.get(ATTR.CUDNN_ATTR_ENGINEHEUR_MODE)?.[0]);
        if (mode !== 3) return 0; // mode A answers; the fallback list adds nothing here
        const out = handles();
        const n = Math.min(requested, this.engines.length);
        for (let i = 0; i < n; i++) this.record(out[i]!)!.engine = this.engines[i];
        return n;
      }
      case ATTR.CUDNN_ATTR_ENGINECFG_ENGINE: {
        const engine = r.engine ?? this.engineOf(r);
        this.record(handles()[0]!)!.engine = engine;
        return 1;
      }
      case ATTR.CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
        i64()[0] = BigInt((r.engine ?? this.engineOf(r))!.index);
        return 1;
      case ATTR.CUDNN_ATTR_ENGINE_NUMERICAL_NOTE:
      case ATTR.CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE: {
        const e = r.engine ?? this.engineOf(r);
        const notes =
          (attr === ATTR.CUDNN_ATTR_ENGINE_NUMERICAL_NOTE ? e?.numericalNotes : e?.behaviorNotes) ??
          [];
        i32().set(notes.slice(0, requested));
        return Math.min(notes.length, requested);
      }
      case ATTR.CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
        i64()[0] = BigInt(r.engine?.workspaceBytes ?? 0);
        return 1;
      default:
        return 0;
    }
  }

  /** The fake engine an ENGINE descriptor built by global index stands for. */
  private engineOf(r: DescriptorRecord): FakeEngine | undefined {
    const index = r.attrs.get(ATTR.CUDNN_ATTR_ENGINE_GLOBAL_INDEX)?.[0];
    return this.engines.find((e) => e.index === Number(index));
  }

  /** Descriptors still alive (a leak check for tests). */
  get liveDescriptors(): number {
    return this.records.size;
  }
}
