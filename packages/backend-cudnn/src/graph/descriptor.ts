/**
 * cuDNN backend descriptors from JS: create one of a type, set typed attributes, finalize,
 * read attributes back, destroy. Every call goes through the layer and a non-zero status
 * becomes a CudnnError carrying cuDNN's own message (cudnnGetLastErrorString).
 */
import { CudnnError } from "../errors.ts";
import type { CudnnSymbols } from "../layer.ts";
import { DESC, TYPE } from "../native/api.ts";

type TypeName = keyof typeof TYPE;

/** A value list for one attribute, in the element type cuDNN expects for it. */
export type AttrValue =
  | { type: "CUDNN_TYPE_INT64"; values: readonly (number | bigint)[] }
  | { type: "CUDNN_TYPE_FLOAT"; values: readonly number[] }
  | { type: "CUDNN_TYPE_DOUBLE"; values: readonly number[] }
  | { type: "CUDNN_TYPE_BOOLEAN"; values: readonly boolean[] }
  | { type: "CUDNN_TYPE_VOID_PTR" | "CUDNN_TYPE_HANDLE"; values: readonly bigint[] }
  | { type: "CUDNN_TYPE_BACKEND_DESCRIPTOR"; values: readonly Descriptor[] }
  | {
      type: Exclude<
        TypeName,
        | "CUDNN_TYPE_INT64"
        | "CUDNN_TYPE_FLOAT"
        | "CUDNN_TYPE_DOUBLE"
        | "CUDNN_TYPE_BOOLEAN"
        | "CUDNN_TYPE_VOID_PTR"
        | "CUDNN_TYPE_HANDLE"
        | "CUDNN_TYPE_BACKEND_DESCRIPTOR"
      >;
      values: readonly number[];
    };

/** The bytes cuDNN reads for an attribute's elements. */
export function encode(v: AttrValue): ArrayBufferView {
  switch (v.type) {
    case "CUDNN_TYPE_INT64":
      return BigInt64Array.from(v.values, (x) => BigInt(x));
    case "CUDNN_TYPE_FLOAT":
      return Float32Array.from(v.values);
    case "CUDNN_TYPE_DOUBLE":
      return Float64Array.from(v.values);
    case "CUDNN_TYPE_BOOLEAN":
      // cuDNN's bool is C++'s: one byte.
      return Uint8Array.from(v.values, (x) => (x ? 1 : 0));
    case "CUDNN_TYPE_VOID_PTR":
    case "CUDNN_TYPE_HANDLE":
      return BigUint64Array.from(v.values);
    case "CUDNN_TYPE_BACKEND_DESCRIPTOR":
      return BigUint64Array.from(v.values, (d) => d.handle);
    default:
      // Every enum type (data type, modes, notes) is a 4-byte int.
      return Int32Array.from(v.values);
  }
}

const DESC_NAMES = new Map<number, string>(
  Object.entries(DESC).map(([k, v]) => [v, k.replace(/^CUDNN_BACKEND_|_DESCRIPTOR$/g, "")]),
);

/** One cuDNN backend descriptor. */
export class Descriptor {
  private destroyed = false;
  private constructor(
    readonly lib: CudnnSymbols,
    readonly type: number,
    readonly handle: bigint,
  ) {}

  /** cudnnBackendCreateDescriptor(type). */
  static create(lib: CudnnSymbols, type: keyof typeof DESC): Descriptor {
    const out = new BigUint64Array(1);
    check(
      lib,
      `cudnnBackendCreateDescriptor(${type})`,
      lib.cudnnBackendCreateDescriptor(DESC[type], out),
    );
    return new Descriptor(lib, DESC[type], out[0]!);
  }

  get typeName(): string {
    return DESC_NAMES.get(this.type) ?? String(this.type);
  }

  /** cudnnBackendSetAttribute; `attr` is the attribute's number (ATTR.*), `name` its name for errors. */
  set(name: string, attr: number, value: AttrValue): this {
    const bytes = encode(value);
    check(
      this.lib,
      `cudnnBackendSetAttribute(${this.typeName}, ${name})`,
      this.lib.cudnnBackendSetAttribute(
        this.handle,
        attr,
        TYPE[value.type],
        value.values.length,
        bytes,
      ),
    );
    return this;
  }

  /** cudnnBackendSetAttribute with elements already encoded (the per-call variant pack). */
  setRaw(
    name: string,
    attr: number,
    type: TypeName,
    elements: ArrayBufferView & { length: number },
  ): this {
    const status = this.lib.cudnnBackendSetAttribute(
      this.handle,
      attr,
      TYPE[type],
      elements.length,
      elements,
    );
    if (status !== 0)
      check(this.lib, `cudnnBackendSetAttribute(${this.typeName}, ${name})`, status);
    return this;
  }

  /** cudnnBackendFinalize. */
  finalize(): this {
    const status = this.lib.cudnnBackendFinalize(this.handle);
    if (status !== 0) check(this.lib, `cudnnBackendFinalize(${this.typeName})`, status);
    return this;
  }

  /** Reads up to `max` 4-byte enum elements (notes, modes). */
  getEnums(name: string, attr: number, type: TypeName, max: number): number[] {
    const count = new BigInt64Array(1);
    const out = new Int32Array(Math.max(1, max));
    check(
      this.lib,
      `cudnnBackendGetAttribute(${this.typeName}, ${name})`,
      this.lib.cudnnBackendGetAttribute(this.handle, attr, TYPE[type], max, count, out),
    );
    return Array.from(out.subarray(0, Number(count[0])));
  }

  /** Reads one INT64 attribute. */
  getInt64(name: string, attr: number): number {
    const count = new BigInt64Array(1);
    const out = new BigInt64Array(1);
    check(
      this.lib,
      `cudnnBackendGetAttribute(${this.typeName}, ${name})`,
      this.lib.cudnnBackendGetAttribute(this.handle, attr, TYPE.CUDNN_TYPE_INT64, 1, count, out),
    );
    return Number(out[0]);
  }

  /**
   * Reads a descriptor-valued attribute into descriptors the caller created for it (cuDNN
   * fills existing descriptors: the engine configs of heuristics, the engine of a config).
   */
  getDescriptors(name: string, attr: number, into: Descriptor[]): number {
    const count = new BigInt64Array(1);
    const handles = BigUint64Array.from(into, (d) => d.handle);
    check(
      this.lib,
      `cudnnBackendGetAttribute(${this.typeName}, ${name})`,
      this.lib.cudnnBackendGetAttribute(
        this.handle,
        attr,
        TYPE.CUDNN_TYPE_BACKEND_DESCRIPTOR,
        into.length,
        count,
        handles,
      ),
    );
    return Number(count[0]);
  }

  /** cudnnBackendDestroyDescriptor (once; later calls do nothing). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.lib.cudnnBackendDestroyDescriptor(this.handle);
  }
}

/**
 * cuDNN's message for the last failed call (its first line: the lines after it are the
 * internal checks that led there), or undefined when it has none.
 */
export function lastError(lib: CudnnSymbols): string | undefined {
  const buf = new Uint8Array(1024);
  lib.cudnnGetLastErrorString(buf, buf.length);
  const end = buf.indexOf(0);
  const text = new TextDecoder().decode(buf.subarray(0, end < 0 ? buf.length : end)).trim();
  return text === "" ? undefined : text.split("\n")[0]!.trim();
}

/** Throws a CudnnError with cuDNN's message when `status` is not CUDNN_STATUS_SUCCESS. */
export function check(lib: CudnnSymbols, call: string, status: number): void {
  if (status !== 0) throw new CudnnError(call, status, lastError(lib));
}

/** Destroys every descriptor in the list (a graph's tensors, ops and the graph itself). */
export function destroyAll(list: Iterable<Descriptor>): void {
  for (const d of list) d.destroy();
}
