/**
 * Tensor: dtype, shape, strides and an offset over a Storage that a device memory owns.
 * transpose/permute (and reshape, wherever the strides allow) are views; views share the
 * storage, which is freed when the last holder is disposed or garbage-collected.
 */

import { ArgumentError, DeviceError, DisposedError, DTypeError, ShapeError } from "../errors.ts";
import { show } from "../util/format.ts";
import { placeOf, retaken } from "../util/views.ts";
import { version } from "../version.ts";
import {
  bytesPerElement,
  checkDType,
  checkFloatFill,
  type DType,
  isDType,
  isFloat,
  readNumber,
  type StorageArray,
  viewOf,
  writeNumber,
  writeValue,
} from "./dtype.ts";
import { allocateStorage, deviceTypeOf, normalizeDevice, type Storage } from "./memory.ts";

// Safety net: a tensor collected without dispose() still gives its storage back.
const finalizer =
  typeof FinalizationRegistry !== "undefined"
    ? new FinalizationRegistry<Storage>((s) => s.release())
    : undefined;

export type NestedArray = number | boolean | bigint | readonly NestedArray[];

/** Strides of `shape` broadcast to `target`'s leading dims (0 where broadcast). */
export function leadingBroadcastStrides(
  shape: readonly number[],
  strides: readonly number[],
  target: readonly number[],
): number[] {
  const off = target.length - shape.length;
  return target.map((_, i) => (i < off || shape[i - off] === 1 ? 0 : strides[i - off]));
}

/** Row-major strides; a size-0 dim counts as 1, as torch's (empty([2, 0, 3]) has [3, 3, 1]). */
export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= Math.max(shape[i]!, 1);
  }
  return strides;
}

export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i];
  return n;
}

export function checkShape(name: string, shape: unknown): number[] {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new ShapeError(
      `${name}: shape must be an array of non-negative integers, got ${show(shape)}`,
    );
  }
  checkCopyable(name, shape);
  return shape as number[];
}

/** The most elements a new tensor (or a copy of a view) may have. */
function checkCopyable(name: string, shape: readonly number[]): void {
  if (sizeOf(shape) > 2 ** 31)
    throw new ShapeError(`${name}: shape ${show(shape)} has more than 2^31 elements`);
}

/**
 * On every tensor, the version of the core that made it: a tensor that reaches a copy of
 * the core other than its own (two copies that did not join, see one-core.ts) is then
 * named as such instead of as "not a Tensor".
 */
export const TENSOR_BRAND: unique symbol = Symbol.for("@backplane/core.Tensor");

export class Tensor implements Disposable {
  /** See TENSOR_BRAND. */
  get [TENSOR_BRAND](): string {
    return version;
  }
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  /** Offset of element [0, 0, ...] in the storage, in elements. */
  readonly offset: number;
  readonly device: string;
  /** Device type: "cpu", "cuda", "webgpu"... (the device without its index). */
  readonly deviceType: string;
  readonly storage: Storage;
  /** Elements: the product of the shape (a field: loops read it on every step). */
  readonly numel: number;
  private _disposed = false;
  private _view: StorageArray | undefined;

  /**
   * Low level: wraps an existing storage, taking over one of its references (dispose() or the
   * finalizer releases it): `storage.retain()` first to view a storage another tensor still
   * holds. Use tensor(), zeros(), empty(), or a view method (transpose, permute, reshape) instead.
   */
  constructor(
    storage: Storage,
    dtype: DType,
    shape: readonly number[],
    strides?: readonly number[],
    offset = 0,
  ) {
    this.storage = storage;
    this.dtype = dtype;
    // Copies: the caller's arrays, changed after the check, made a view reach past its storage.
    this.shape = copyOf(shape);
    // Checked before anything reads it: a null shape or a bigint size threw a TypeError here.
    this.numel = checkedNumel(this.shape);
    this.strides = strides === undefined ? contiguousStrides(this.shape) : copyOf(strides);
    this.offset = offset;
    checkView(storage, dtype, this.shape, this.strides, offset);
    this.device = storage.device;
    this.deviceType = deviceTypeOf(storage.device);
    finalizer?.register(this, storage, this);
  }

  get rank(): number {
    return this.shape.length;
  }
  get disposed(): boolean {
    return this._disposed;
  }
  get isContiguous(): boolean {
    // Empty: no element to lay out, so any strides are contiguous (as torch's is_contiguous).
    if (this.numel === 0) return true;
    let s = 1;
    for (let i = this.shape.length - 1; i >= 0; i--) {
      if (this.shape[i] !== 1 && this.strides[i] !== s) return false;
      s *= this.shape[i];
    }
    return true;
  }

  /**
   * Throws DisposedError when the tensor (or its storage) is gone, and ShapeError when its
   * shape or strides were written to since it was made. `name` is the argument name.
   */
  assertAlive(name = "tensor", op?: string): void {
    if (this._disposed || this.storage.freed) {
      throw new DisposedError(
        `${op ? `${op}: ` : ""}${name} was disposed; it cannot be used any more (keep it alive, or clone() it first)`,
      );
    }
    if (!this.viewIntact()) {
      throw new ShapeError(
        `${op ? `${op}: ` : ""}${name}'s shape or strides changed after the tensor was made (now [${this.shape}] strides [${this.strides}] for ${this.numel} elements); they are read-only: make a new view with reshape(), view() or permute()`,
      );
    }
  }

  /**
   * Whether shape and strides still describe the view checked when the tensor was made:
   * `t.shape[0] = 64` made kernels read past the storage. Not frozen, as torch's size() is,
   * because V8 takes slow paths on frozen arrays (0.4 µs more per small op, measured); this
   * O(rank) check, run wherever an op or method takes the tensor, catches any write that
   * changes the element count or leaves the storage.
   */
  private viewIntact(): boolean {
    const { shape, strides } = this;
    if (shape.length !== strides.length) return false;
    let count = 1;
    for (let i = 0; i < shape.length; i++) {
      if (!(isIndex(shape[i]) && isIndex(strides[i]))) return false;
      count *= shape[i]!;
    }
    if (count !== this.numel) return false;
    return (
      count === 0 || lastIndexOf(shape, strides, this.offset) < capacityOf(this.storage, this.dtype)
    );
  }

  /**
   * Zero-copy typed view of the storage from this tensor's offset to the end of what it
   * spans (host-visible memory only). Index it with the tensor's strides.
   */
  hostData(): StorageArray {
    this.assertAlive();
    const v = this._view;
    // A view over WASM memory detaches when the memory grows: rebuild it then.
    if (v !== undefined && (v.length > 0 || this.storage.byteLength === 0)) return v;
    const mem = this.storage.memory;
    if (!mem.hostView) {
      throw new DeviceError(
        `tensor on ${this.device} is not host-visible; use await t.data() or t.to("cpu")`,
      );
    }
    const bpe = bytesPerElement(this.dtype);
    const start = this.offset * bpe;
    const bytes = mem.hostView(this.storage.handle, start, this.storage.byteLength - start);
    this._view = viewOf(this.dtype, bytes.buffer, bytes.byteOffset, bytes.byteLength / bpe);
    return this._view;
  }

  /** A contiguous copy of the elements, as a typed array (sync: host-visible or sync-readable devices). */
  dataSync(): StorageArray {
    this.assertAlive();
    const t = this.isContiguous ? this : this.contiguous();
    try {
      const bpe = bytesPerElement(t.dtype);
      const mem = t.storage.memory;
      if (mem.hostView) return t.hostData().slice(0, t.numel);
      if (!mem.downloadSync) {
        throw new DeviceError(
          `tensor on ${t.device} can only be read asynchronously; use await t.data()`,
        );
      }
      const bytes = mem.downloadSync(t.storage.handle, t.offset * bpe, t.numel * bpe);
      return viewOf(t.dtype, bytes.buffer, bytes.byteOffset, t.numel);
    } finally {
      if (t !== this) t.dispose();
    }
  }

  /** A contiguous copy of the elements, read back from any device. */
  async data(): Promise<StorageArray> {
    this.assertAlive();
    if (this.storage.memory.hostView || this.storage.memory.downloadSync) return this.dataSync();
    const t = this.isContiguous ? this : this.contiguous();
    try {
      const bpe = bytesPerElement(t.dtype);
      await t.storage.memory.sync(t.device);
      const bytes = await t.storage.memory.download(
        t.storage.handle,
        t.offset * bpe,
        t.numel * bpe,
      );
      return viewOf(t.dtype, bytes.buffer, bytes.byteOffset, t.numel);
    } finally {
      if (t !== this) t.dispose();
    }
  }

  /** Nested JS arrays (numbers; booleans for bool; numbers for int64 within 2^53). */
  toArray(): NestedArray {
    return nest(this.dataSync(), this.dtype, this.shape);
  }

  async array(): Promise<NestedArray> {
    return nest(await this.data(), this.dtype, this.shape);
  }

  /** Logical elements in row-major order, as float64 (strides and dtype handled). Host only. */
  toFloat64(): Float64Array {
    this.assertAlive();
    // A stride-0 view can hold more elements than any copy (new Float64Array threw a RangeError).
    checkCopyable("toFloat64", this.shape);
    const out = new Float64Array(this.numel);
    if (out.length === 0) return out;
    const src = this.hostData();
    const { dtype } = this;
    if (this.isContiguous) {
      if (dtype !== "float16" && dtype !== "bfloat16" && dtype !== "int64") {
        out.set((src as Float64Array).subarray(0, out.length));
      } else {
        for (let i = 0; i < out.length; i++) out[i] = readNumber(dtype, src, i);
      }
      return out;
    }
    forEachIndex(this.shape, this.strides, (pos, i) => {
      out[i] = readNumber(dtype, src, pos);
    });
    return out;
  }

  /**
   * A copy converted to another dtype, values rounded as the dtype requires (as torch's
   * .to(dtype)): on the host, or on the device where it cannot be read synchronously.
   */
  astype(dtype: DType): Tensor {
    checkDType("astype", dtype);
    this.assertAlive();
    if (dtype === this.dtype) return this.clone();
    const mem = this.storage.memory;
    if (!mem.hostView && !mem.downloadSync) return this.convertedOnDevice(dtype);
    if (this.dtype === "int64" && dtype !== "float64") return this.int64Narrowed(dtype);
    const src = this.toFloat64();
    const out = filled(empty(this.shape, { dtype, device: "cpu" }), (dst) => {
      for (let i = 0; i < src.length; i++) writeNumber(dtype, dst, i, src[i]);
    });
    return moveTo(out, this.device);
  }

  /** astype() where the elements cannot be read synchronously (WebGPU): the device converts. */
  private convertedOnDevice(dtype: DType): Tensor {
    const mem = this.storage.memory;
    if (!mem.convert)
      throw new DeviceError(
        `astype: ${this.device} memory converts no dtypes on the device and cannot be read synchronously; use (await t.toAsync("cpu")).astype("${dtype}")`,
      );
    const convert = mem.convert.bind(mem);
    return freedOnThrow(empty(this.shape, { dtype, device: this.device }), (out) =>
      convert(
        this.storage.handle,
        this.offset,
        this.shape,
        this.strides,
        this.dtype,
        dtype,
        out.storage.handle,
      ),
    );
  }

  /**
   * int64 into a narrower dtype through bigints: integers and bool keep the low bits as
   * torch does (through float64 the values past 2^53 lost them: 2^62 + 1 gave 0, not 1);
   * float32, float16 and bfloat16 round once, as torch's cast (through float64, twice).
   */
  private int64Narrowed(dtype: DType): Tensor {
    const data = this.dataSync() as BigInt64Array;
    const wrap = INTEGER_WRAP[dtype];
    const out = filled(empty(this.shape, { dtype, device: "cpu" }), (dst) => {
      if (wrap) for (let i = 0; i < data.length; i++) dst[i] = wrap(data[i]!);
      else for (let i = 0; i < data.length; i++) writeValue(dtype, dst, i, data[i]!, false);
    });
    return moveTo(out, this.device);
  }

  /** Swaps two dimensions (a view). Negative dims count from the end. */
  transpose(dim0 = -2, dim1 = -1): Tensor {
    const p = [...this.shape.keys()];
    const a = normalizeDim("transpose dim0", dim0, this.rank);
    const b = normalizeDim("transpose dim1", dim1, this.rank);
    // A 0-d tensor is its own transpose (swapping p[0] of [] made permute see [undefined]).
    if (this.rank > 0) [p[a], p[b]] = [p[b], p[a]];
    return this.permute(p);
  }

  /** Reorders dimensions (a view). */
  permute(dims: readonly number[]): Tensor {
    this.assertAlive();
    if (!Array.isArray(dims) || dims.length !== this.rank) {
      throw new ShapeError(
        `permute: dims must list all ${this.rank} dimensions, got ${show(dims)}`,
      );
    }
    const d = dims.map((x) => normalizeDim("permute dims", x, this.rank));
    if (new Set(d).size !== d.length)
      throw new ShapeError(`permute: dims ${show(dims)} repeat a dimension`);
    this.storage.retain();
    return new Tensor(
      this.storage,
      this.dtype,
      d.map((i) => this.shape[i]),
      d.map((i) => this.strides[i]),
      this.offset,
    );
  }

  /**
   * Same elements, new shape (-1 infers one size). A view wherever the strides allow one
   * (as torch's reshape: contiguous, or a transposed or expanded tensor whose merged dims
   * stay evenly strided), else a contiguous copy.
   */
  reshape(shape: readonly number[]): Tensor {
    this.assertAlive();
    const s = inferShape(shape, this.numel);
    const strides = viewStrides(this.shape, this.strides, s);
    if (strides === undefined) {
      const c = copyStrided(this);
      const r = c.reshape(s);
      c.dispose();
      return r;
    }
    this.storage.retain();
    return new Tensor(this.storage, this.dtype, s, strides, this.offset);
  }

  /** This tensor if contiguous (a new reference), else a contiguous copy on the same device. */
  contiguous(): Tensor {
    this.assertAlive();
    if (this.isContiguous) {
      this.storage.retain();
      return new Tensor(this.storage, this.dtype, this.shape, this.strides, this.offset);
    }
    return copyStrided(this);
  }

  clone(): Tensor {
    this.assertAlive();
    if (!this.isContiguous) return copyStrided(this);
    const bpe = bytesPerElement(this.dtype);
    return freedOnThrow(empty(this.shape, { dtype: this.dtype, device: this.device }), (out) =>
      this.storage.memory.copy(
        this.storage.handle,
        this.offset * bpe,
        out.storage.handle,
        0,
        this.numel * bpe,
      ),
    );
  }

  /**
   * A copy on another device (sync where both memories allow it); given a dtype, a copy
   * in that dtype (astype), as torch's t.to(torch.float16). A dtype was taken for a
   * device nobody provides.
   */
  to(device: string | DType): Tensor {
    if (isDType(device)) return this.astype(device);
    const dev = normalizeDevice(device);
    this.assertAlive();
    if (dev === this.device) return this.clone();
    // The target first: a device nobody provides fails before anything is read back.
    return freedOnThrow(empty(this.shape, { dtype: this.dtype, device: dev }), (out) => {
      const data = this.dataSync();
      out.storage.memory.upload(
        out.storage.handle,
        0,
        new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      );
    });
  }

  /** A copy on another device, reading back asynchronously where needed (WebGPU). */
  async toAsync(device: string): Promise<Tensor> {
    const dev = normalizeDevice(device);
    const data = await this.data();
    return freedOnThrow(empty(this.shape, { dtype: this.dtype, device: dev }), (out) =>
      out.storage.memory.upload(
        out.storage.handle,
        0,
        new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      ),
    );
  }

  /** Releases this tensor's hold on its storage. Safe to call twice. */
  dispose(): void {
    if (this._disposed) return;
    this._disposed = true;
    this._view = undefined;
    finalizer?.unregister(this);
    this.storage.release();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    if (this._disposed) return `Tensor(disposed, ${this.dtype}, [${this.shape}], ${this.device})`;
    const body =
      fewNested(this.shape) && this.storage.memory.hostView ? `, ${this.valuesText()}` : "";
    return `Tensor(${this.dtype}, [${this.shape}], ${this.device}${body})`;
  }

  /**
   * The elements as nested arrays in text, as torch prints them: NaN, Infinity and -0 by
   * name (JSON wrote null and 0), int64 exactly (as a number it rounded past 2^53).
   */
  private valuesText(): string {
    const flat = this.dataSync();
    const read =
      this.dtype === "int64"
        ? (i: number) => String(flat[i])
        : (i: number) => {
            const x = this.dtype === "bool" ? flat[i] !== 0 : readNumber(this.dtype, flat, i);
            return Object.is(x, -0) ? "-0" : String(x);
          };
    return nestedText(this.shape, read);
  }
}

export function normalizeDim(name: string, dim: number, rank: number): number {
  if (!Number.isInteger(dim))
    throw new ShapeError(`${name}: a dimension must be an integer, got ${show(dim)}`);
  const r = Math.max(rank, 1);
  if (dim < -r || dim >= r) {
    throw new ShapeError(
      `${name}: dimension ${show(dim)} is out of range for a tensor of rank ${rank} (expected a dimension in [${-r}, ${r - 1}])`,
    );
  }
  // A 0-d tensor takes dims -1 and 0 as torch's do, both meaning 0 (-1 + 0 gave -1).
  return dim < 0 ? dim + Math.max(rank, 1) : dim;
}

function inferShape(shape: readonly number[], numel: number): number[] {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= -1)) {
    throw new ShapeError(`reshape: shape must be integers >= -1, got ${show(shape)}`);
  }
  const free = shape.filter((d) => d === -1).length;
  if (free > 1) throw new ShapeError(`reshape: only one dimension may be -1, got ${show(shape)}`);
  const known = shape.reduce((a, d) => (d === -1 ? a : a * d), 1);
  // Next to a 0, -1 could be any size (torch refuses it; this gave 0).
  if (free === 1 && known === 0)
    throw new ShapeError(
      `reshape: cannot infer the -1 of shape ${show(shape)} next to a size 0: it could be any size`,
    );
  const s = shape.map((d) => (d === -1 ? numel / known : d));
  if (sizeOf(s) !== numel || !s.every(Number.isInteger)) {
    throw new ShapeError(`reshape: cannot view ${numel} elements as shape ${show(shape)}`);
  }
  return s;
}

/**
 * The strides that view a tensor of `shape` and `strides` as `newShape` over the same
 * elements, or undefined when no strides can (the copy case). torch's computeStride: the
 * old dims split into chunks that are contiguous among themselves, and each chunk must be
 * covered by whole new dims; size-1 dims go anywhere.
 */
function viewStrides(
  shape: readonly number[],
  strides: readonly number[],
  newShape: readonly number[],
): number[] | undefined {
  if (shape.length === 0) return newShape.map(() => 1);
  if (sizeOf(shape) === 0)
    return sameShape(shape, newShape) ? [...strides] : contiguousStrides(newShape);
  const out = new Array<number>(newShape.length);
  let viewD = newShape.length - 1;
  let base = strides[shape.length - 1]!;
  let chunk = 1;
  let viewed = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    chunk *= shape[d]!;
    const chunkEnds = d === 0 || (shape[d - 1] !== 1 && strides[d - 1] !== chunk * base);
    if (!chunkEnds) continue;
    while (viewD >= 0 && (viewed < chunk || newShape[viewD] === 1)) {
      out[viewD] = viewed * base;
      viewed *= newShape[viewD]!;
      viewD--;
    }
    if (viewed !== chunk) return undefined;
    if (d > 0) {
      base = strides[d - 1]!;
      chunk = 1;
      viewed = 1;
    }
  }
  return viewD === -1 ? out : undefined;
}

const sameShape = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((d, i) => d === b[i]);

/** Calls fn(storagePosition, rowMajorIndex) for every element. */
export function forEachIndex(
  shape: readonly number[],
  strides: readonly number[],
  fn: (pos: number, i: number) => void,
): void {
  // The element's index is its position in the contiguous layout of the same shape.
  forEachIndexPair(shape, strides, contiguousStrides(shape), fn);
}

/**
 * A faster answer for float32 data, where one is installed (the CPU memory's WASM SIMD
 * scan, wasm/finite-scan.ts): (the tensor's data) => all finite, or undefined to use the
 * JS loop.
 */
let float32Scan: ((t: Tensor, data: Float32Array) => boolean | undefined) | undefined;

/** Installs allFinite's float32 scan (the wasm layer does, over the CPU memory). */
export function setFloat32FiniteScan(scan: typeof float32Scan): void {
  float32Scan = scan;
}

/**
 * True when no element of a host-visible float tensor is NaN or ±Infinity (one pass; other
 * dtypes and device memory: true). Kernels whose algorithms spread a non-finite value
 * (Winograd, FFT, some blocked layouts) ask it to refuse such input with the reason.
 */
export function allFinite(t: Tensor): boolean {
  if (!t.storage.memory.hostView || t.numel === 0 || !isFloat(t.dtype)) return true;
  const direct = t.isContiguous && (t.dtype === "float32" || t.dtype === "float64");
  const data = direct ? (t.hostData() as Float32Array | Float64Array) : t.toFloat64();
  if (data instanceof Float32Array) {
    const fast = float32Scan?.(t, data);
    if (fast !== undefined) return fast;
  }
  // x - x is 0 for every finite x and NaN otherwise; the sums keep any NaN. Four of them,
  // so that the adds do not wait on each other (twice as fast as one). The length is read
  // once: numel is a getter, and re-reading it each step made this 10x slower.
  const n = t.numel;
  let a = 0;
  let b = 0;
  let c = 0;
  let d = 0;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    a += data[i]! - data[i]!;
    b += data[i + 1]! - data[i + 1]!;
    c += data[i + 2]! - data[i + 2]!;
    d += data[i + 3]! - data[i + 3]!;
  }
  for (; i < n; i++) a += data[i]! - data[i]!;
  return a + b + c + d === 0;
}

/** forEachIndex over two strided layouts of one shape at once: fn(posA, posB). */
export function forEachIndexPair(
  shape: readonly number[],
  stridesA: readonly number[],
  stridesB: readonly number[],
  fn: (a: number, b: number) => void,
): void {
  const n = sizeOf(shape);
  if (n === 0) return;
  const rank = shape.length;
  const idx = new Array<number>(rank).fill(0);
  let a = 0;
  let b = 0;
  for (let i = 0; i < n; i++) {
    fn(a, b);
    for (let d = rank - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) {
        a += stridesA[d];
        b += stridesB[d];
        break;
      }
      a -= stridesA[d] * (shape[d] - 1);
      b -= stridesB[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

/** `out` after `fill` wrote it; freed (not left to the GC) when `fill` throws. */
function freedOnThrow(out: Tensor, fill: (out: Tensor) => unknown): Tensor {
  try {
    fill(out);
  } catch (e) {
    out.dispose();
    throw e;
  }
  return out;
}

/** A typed view of `data`'s bytes whose elements are `bpe` bytes or a whole part of them. */
function wordsOf(data: StorageArray, bpe: number): Uint8Array | Uint16Array | Uint32Array {
  const { buffer, byteOffset, byteLength } = data;
  if (bpe % 4 === 0) return new Uint32Array(buffer, byteOffset, byteLength / 4);
  if (bpe % 2 === 0) return new Uint16Array(buffer, byteOffset, byteLength / 2);
  return new Uint8Array(buffer, byteOffset, byteLength);
}

function copyStrided(t: Tensor): Tensor {
  const mem = t.storage.memory;
  if (!mem.hostView && mem.gather) {
    return freedOnThrow(empty(t.shape, { dtype: t.dtype, device: t.device }), (out) => {
      if (out.numel > 0)
        mem.gather?.(
          t.storage.handle,
          t.offset,
          t.shape,
          t.strides,
          bytesPerElement(t.dtype),
          out.storage.handle,
        );
    });
  }
  if (!mem.hostView) {
    throw new DeviceError(
      `a strided view on ${t.device} cannot be made contiguous there (its memory has no gather): pass the view to an op that reads views, or move the tensor the view was taken from (await base.toAsync("cpu")) and take the view on the CPU`,
    );
  }
  const out = empty(t.shape, { dtype: t.dtype, device: t.device });
  // Copied as integer words, bit for bit: through a JS number a float32 signalling NaN
  // came out quiet (torch copies the bits).
  const bpe = bytesPerElement(t.dtype);
  const src = wordsOf(t.hostData(), bpe);
  const dst = wordsOf(out.hostData(), bpe);
  const per = (bpe * Uint8Array.BYTES_PER_ELEMENT) / src.BYTES_PER_ELEMENT;
  if (per === 1)
    forEachIndex(t.shape, t.strides, (pos, i) => {
      dst[i] = src[pos];
    });
  else
    forEachIndex(t.shape, t.strides, (pos, i) => {
      for (let w = 0; w < per; w++) dst[i * per + w] = src[pos * per + w];
    });
  return out;
}

function nest(flat: StorageArray, dtype: DType, shape: readonly number[]): NestedArray {
  const read = (i: number): number | boolean =>
    dtype === "bool" ? flat[i] !== 0 : readNumber(dtype, flat, i);
  if (shape.length === 0) return read(0);
  let i = 0;
  const build = (d: number): NestedArray[] => {
    const out: NestedArray[] = [];
    for (let k = 0; k < shape[d]; k++) out.push(d === shape.length - 1 ? read(i++) : build(d + 1));
    return out;
  };
  return build(0);
}

/**
 * True when the nested arrays of `shape` are few enough to print (64 elements, 64 arrays a
 * level): a size-0 tensor of shape [2^20, 2^20, 0] holds no element but 2^40 empty arrays,
 * which toString() built until the heap ran out.
 */
function fewNested(shape: readonly number[]): boolean {
  if (sizeOf(shape) > 64) return false;
  let arrays = 1;
  for (let d = 0; d < shape.length - 1 && arrays > 0; d++) {
    arrays *= shape[d]!;
    if (arrays > 64) return false;
  }
  return true;
}

/** Row-major elements (read(i) their text) nested by `shape`, as "[[1,2],[3,4]]". */
function nestedText(shape: readonly number[], read: (i: number) => string): string {
  let i = 0;
  const level = (d: number): string => {
    if (d === shape.length) return read(i++);
    const parts: string[] = [];
    for (let k = 0; k < shape[d]!; k++) parts.push(level(d + 1));
    return `[${parts.join(",")}]`;
  };
  return level(0);
}

export interface CreateOptions {
  dtype?: DType;
  device?: string;
}

/** An uninitialised tensor: its contents are unspecified until a kernel writes them. */
/** Creation options, checked: an object (or nothing), never null or a number. */
function checkCreateOptions<T extends object>(name: string, opts: T | undefined): T {
  if (opts === undefined) return {} as T;
  if (opts === null || typeof opts !== "object" || Array.isArray(opts))
    throw new ArgumentError(
      `${name}: options must be an object like { dtype: "float32" }, got ${show(opts)}`,
    );
  return opts;
}

export function empty(shape: readonly number[], opts?: CreateOptions): Tensor {
  const s = checkShape("empty", Array.isArray(shape) ? [...shape] : shape);
  opts = checkCreateOptions("empty", opts);
  const dtype = checkDType("dtype", opts.dtype ?? "float32");
  const device = normalizeDevice(opts.device ?? "cpu");
  const storage = allocateStorage(device, sizeOf(s) * bytesPerElement(dtype));
  return new Tensor(storage, dtype, s);
}

type Element = number | boolean | bigint;

const MAX_NESTED_DIMS = 128;

function inferNested(data: NestedArray): { shape: number[]; flat: Element[] } {
  const shape: number[] = [];
  let probe: NestedArray = data;
  while (Array.isArray(probe)) {
    // As torch.tensor's limit; deeper, the recursive walk below overflowed the stack (a RangeError).
    if (shape.length === MAX_NESTED_DIMS)
      throw new ShapeError(
        `tensor: the nested arrays are more than ${MAX_NESTED_DIMS} levels deep (torch's limit too); use fewer dimensions`,
      );
    shape.push(probe.length);
    probe = probe[0] as NestedArray;
  }
  const flat: Element[] = [];
  const walk = (x: NestedArray, d: number, path: string): void => {
    if (d === shape.length) {
      if (Array.isArray(x)) throw new ShapeError(`tensor: ragged nested array at ${path}`);
      if (typeof x !== "number" && typeof x !== "boolean" && typeof x !== "bigint") {
        throw new DTypeError(
          `tensor: element at ${path} is ${typeof x}; expected a number, boolean or bigint`,
        );
      }
      flat.push(x);
      return;
    }
    if (!Array.isArray(x) || x.length !== shape[d]) {
      throw new ShapeError(`tensor: ragged nested array at ${path}: expected ${shape[d]} elements`);
    }
    for (let i = 0; i < x.length; i++) walk(x[i], d + 1, `${path}[${i}]`);
  };
  walk(data, 0, "data");
  return { shape, flat };
}

/** int64 to a narrower integer dtype or bool: the low bits, as torch keeps them. */
const INTEGER_WRAP: Partial<Record<DType, (x: bigint) => number>> = {
  int32: (x) => Number(BigInt.asIntN(32, x)),
  int8: (x) => Number(BigInt.asIntN(8, x)),
  uint8: (x) => Number(BigInt.asUintN(8, x)),
  bool: (x) => (x !== 0n ? 1 : 0),
};

const TYPED_DTYPE = new Map<unknown, DType>([
  [Float32Array, "float32"],
  [Float64Array, "float64"],
  [Int32Array, "int32"],
  [BigInt64Array, "int64"],
  [Int8Array, "int8"],
  [Uint8Array, "bool"], // uint8 needs { dtype: "uint8" }
]);

/**
 * The dtype nested values ask for when none is given: numbers float32, bigints int64,
 * booleans bool. Booleans next to numbers or bigints promote to them (as torch's
 * tensor([True, 2])); numbers next to bigints are refused: which one is meant is unclear,
 * and float32 would round the bigints.
 */
function inferDType(flat: readonly Element[]): DType {
  let numbers = false;
  let bigints = false;
  let bools = false;
  for (const x of flat) {
    if (typeof x === "number") numbers = true;
    else if (typeof x === "bigint") bigints = true;
    else bools = true;
  }
  if (numbers && bigints)
    throw new DTypeError(
      'tensor: the data mixes numbers and bigints; use bigints only (int64), numbers only (float32), or pass { dtype: "int64" } or another dtype',
    );
  return numbers ? "float32" : bigints ? "int64" : bools ? "bool" : "float32";
}

/**
 * Fills a fresh CPU tensor; when a value does not fit the dtype (NaN into int64), the
 * tensor is freed before the error passes on, so a failed creation holds no memory.
 */
function filled(t: Tensor, fill: (dst: StorageArray, t: Tensor) => void): Tensor {
  try {
    fill(t.hostData(), t);
  } catch (e) {
    t.dispose();
    throw e;
  }
  return t;
}

/**
 * A tensor from a typed array (copied) or nested arrays. Nested arrays without a dtype:
 * numbers give float32, bigints int64 (stored exactly), booleans bool; see inferDType.
 */
export function tensor(
  data: NestedArray | ArrayBufferView,
  opts: CreateOptions & { shape?: readonly number[] } = {},
): Tensor {
  opts = checkCreateOptions("tensor", opts);
  // dtype null is torch's dtype=None: inferred, as empty() and the others take it.
  if (opts.dtype === null) opts = { ...opts, dtype: undefined };
  if (opts.dtype !== undefined && !isDType(opts.dtype)) checkDType("dtype", opts.dtype);
  if (opts.device !== undefined) normalizeDevice(opts.device);
  const shapeOpt =
    opts.shape === undefined
      ? undefined
      : checkShape("shape", Array.isArray(opts.shape) ? [...opts.shape] : opts.shape);
  if (data instanceof DataView)
    throw new ArgumentError(
      "tensor: a DataView has no element type; pass a typed array (new Float32Array(view.buffer, view.byteOffset, n)) instead",
    );
  if (ArrayBuffer.isView(data)) {
    const inferred = TYPED_DTYPE.get(data.constructor);
    const dtype = opts.dtype ?? inferred;
    if (!dtype) throw new DTypeError(`tensor: ${data.constructor.name} needs an explicit dtype`);
    const n = (data as unknown as ArrayLike<unknown>).length;
    const shape = shapeOpt ?? [n];
    if (sizeOf(shape) !== n)
      throw new ShapeError(
        `tensor: shape ${show(shape)} needs ${sizeOf(shape)} elements, got ${n}`,
      );
    const at = placeOf(data as ArrayBufferView & { length: number }); // empty() may detach it
    const t = filled(empty(shape, { dtype, device: "cpu" }), (dst) => {
      const from = retaken(data, at, dst.buffer);
      if (
        dtype === inferred ||
        ((dtype === "float16" || dtype === "bfloat16") && from instanceof Uint16Array)
      ) {
        dst.set(from as never);
        // A Uint8Array read as bool: any nonzero byte is true, stored as 1 (as torch's bool).
        if (dtype === "bool") for (let i = 0; i < n; i++) if (dst[i]) dst[i] = 1;
      } else {
        const src = from as unknown as ArrayLike<number | bigint>;
        // A typed array is cast as torch casts a numpy array (wrapping), not checked.
        for (let i = 0; i < n; i++) writeValue(dtype, dst, i, src[i], false);
      }
    });
    return moveTo(t, opts.device);
  }
  if (data === null || data === undefined)
    throw new ArgumentError("tensor: data is required (a typed array or nested arrays)");
  const { shape, flat } = inferNested(data as NestedArray);
  const dtype = opts.dtype ?? inferDType(flat);
  const finalShape = shapeOpt ?? shape;
  if (sizeOf(finalShape) !== flat.length) {
    throw new ShapeError(
      `tensor: shape ${show(finalShape)} needs ${sizeOf(finalShape)} elements, got ${flat.length}`,
    );
  }
  const t = filled(empty(finalShape, { dtype, device: "cpu" }), (dst) => {
    for (let i = 0; i < flat.length; i++) writeValue(dtype, dst, i, flat[i]);
  });
  return moveTo(t, opts.device);
}

/** `t` (a new CPU tensor) moved to `device`; `t` is freed either way. */
function moveTo(t: Tensor, device: string | undefined): Tensor {
  if (device === undefined) return t;
  let dev: string;
  try {
    dev = normalizeDevice(device);
  } catch (e) {
    t.dispose(); // a malformed name ("Bad!", 5) left full()'s buffer counted as live
    throw e;
  }
  if (dev === "cpu") return t;
  try {
    return t.to(dev);
  } finally {
    t.dispose();
  }
}

/** A tensor filled with one value. */
export function full(shape: readonly number[], value: number, opts?: CreateOptions): Tensor {
  if (typeof value !== "number" && typeof value !== "boolean")
    throw new ArgumentError(`full: value must be a number, got ${show(value)}`);
  opts = checkCreateOptions("full", opts);
  const dtype = checkDType("dtype", opts.dtype ?? "float32");
  // torch 2.13 fills a one-element float16 or bfloat16 tensor without the range check: a
  // value past the type's range gives inf there (torch.full([1], 1e39,
  // dtype=torch.bfloat16)), and raises for any other size (and for float32 of any size).
  const single = Array.isArray(shape) && shape.every((d) => d === 1);
  const half = dtype === "float16" || dtype === "bfloat16";
  if (!(single && half)) checkFloatFill("full", dtype, Number(value));
  const t = filled(empty(shape, { ...opts, device: "cpu" }), (dst, t) => {
    // Refused where the dtype cannot hold it, as torch.full does (300 into uint8).
    writeValue(t.dtype, dst, 0, value);
    for (let i = 1; i < t.numel; i++) writeNumber(t.dtype, dst, i, value);
  });
  return moveTo(t, opts.device);
}
export const zeros = (shape: readonly number[], opts: CreateOptions = {}): Tensor =>
  full(shape, 0, opts);
export const ones = (shape: readonly number[], opts: CreateOptions = {}): Tensor =>
  full(shape, 1, opts);

/**
 * A 32-bit state from an integer seed: its low 32 bits mixed with its high bits, so seeds
 * 2^32 apart differ (as a torch seed's 64 bits all count; seed >>> 0 made 2^32 act as 0)
 * while every seed in [0, 2^32) keeps the state it always had.
 */
export function foldSeed(seed: number): number {
  const high = Math.floor(seed / 2 ** 32);
  return ((seed >>> 0) ^ Math.imul(high | 0, 0x9e3779b1)) >>> 0;
}

/**
 * A seed as torch.manual_seed takes one: an integer in [-2^63, 2^64). A string, NaN or
 * nothing acted as seed 0 in seededRandom, silently, and a seed from 2^64 up folded onto
 * a smaller one (1e300 drew seed 0's numbers), where torch refuses both.
 */
function checkSeed(name: string, seed: unknown): number {
  if (typeof seed === "number" && Number.isInteger(seed) && seed >= -(2 ** 63) && seed < 2 ** 64)
    return seed;
  throw new ArgumentError(
    `${name}: seed must be an integer in [-2^63, 2^64) (as torch.manual_seed takes), got ${show(seed)}`,
  );
}

/** A small, fast, seedable PRNG (mulberry32) so random tensors are reproducible. */
export function seededRandom(seed: number): () => number {
  let a = foldSeed(checkSeed("seededRandom", seed));
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fillRandom(
  name: string,
  shape: readonly number[],
  opts: CreateOptions & { seed?: number },
  draw: (r: () => number) => number,
  below = Number.POSITIVE_INFINITY,
): Tensor {
  opts = checkCreateOptions(name, opts);
  if (opts.seed !== undefined) checkSeed(name, opts.seed);
  const dtype = checkDType("dtype", opts.dtype ?? "float32");
  // As torch's: an integer or bool rand/randn was all zeros (or all true), silently.
  if (!isFloat(dtype))
    throw new DTypeError(
      `${name}: dtype must be float32, float64, float16 or bfloat16, got ${show(dtype)}`,
    );
  const r = seededRandom(opts.seed ?? (Math.random() * 2 ** 32) >>> 0);
  const t = empty(shape, { ...opts, device: "cpu" });
  const dst = t.hostData();
  for (let i = 0; i < t.numel; i++) {
    // Draw again where rounding to the dtype reached `below` (bfloat16 made 1 of [0, 1) 1 time in 512).
    do writeNumber(dtype, dst, i, draw(r));
    while (readNumber(dtype, dst, i) >= below);
  }
  return moveTo(t, opts.device);
}

/** Uniform [0, 1): 1 itself never, whatever the dtype rounds to. */
export function rand(
  shape: readonly number[],
  opts: CreateOptions & { seed?: number } = {},
): Tensor {
  return fillRandom("rand", shape, opts, (r) => r(), 1);
}

/** Standard normal (Box-Muller). */
export function randn(
  shape: readonly number[],
  opts: CreateOptions & { seed?: number } = {},
): Tensor {
  return fillRandom(
    "randn",
    shape,
    opts,
    (r) => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r()),
  );
}

/** A CPU tensor from float64 values (what reference kernels produce), rounded to dtype. */
export function fromFloat64(values: Float64Array, shape: readonly number[], dtype: DType): Tensor {
  if (!(values instanceof Float64Array))
    throw new ArgumentError(
      `fromFloat64: values must be a Float64Array, got ${ArrayBuffer.isView(values) ? (values as object).constructor.name : show(values)}`,
    );
  const s = checkShape("fromFloat64", Array.isArray(shape) ? [...shape] : shape);
  // Fewer values would leave elements unwritten, more would not fit: both are a wrong shape.
  if (values.length !== sizeOf(s))
    throw new ShapeError(
      `fromFloat64: shape ${show(s)} needs ${sizeOf(s)} values, got ${values.length}`,
    );
  const at = placeOf(values); // empty() may detach it
  return filled(empty(s, { dtype }), (dst) => {
    const from = retaken(values, at, dst.buffer);
    if (dtype === "float64" || dtype === "float32") dst.set(from as never);
    else for (let i = 0; i < from.length; i++) writeNumber(dtype, dst, i, from[i]);
  });
}

/** A copy of an array (anything else as it is, for checkView to refuse). */
function copyOf<T>(a: T): T {
  return Array.isArray(a) ? ([...a] as T) : a;
}

const isIndex = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
/** Sizes past 2^53 - 1 cannot be told apart in a JS number, even of an empty tensor's dim. */
const SAFE = " up to 2^53 - 1 (Number.MAX_SAFE_INTEGER)";

/**
 * The elements of a view's shape, once the shape is checked: sizes that are non-negative
 * integers, and a count a JS number holds exactly (torch refuses a numel past int64 too).
 */
function checkedNumel(shape: readonly number[]): number {
  if (!Array.isArray(shape) || !shape.every(isIndex))
    throw new ShapeError(`tensor shape must be non-negative integers${SAFE}; got ${show(shape)}`);
  const numel = sizeOf(shape);
  if (!Number.isSafeInteger(numel))
    throw new ShapeError(
      `tensor shape ${show(shape)} has ${numel} elements, more than a JS number counts exactly (2^53 - 1); use smaller sizes`,
    );
  return numel;
}

/**
 * A view is checked once, where it is made (as torch's as_strided): integer, non-negative
 * sizes, strides and offset, and every element inside the storage. No kernel then meets a
 * view that reads outside its memory (native BLAS segfaulted on one, WASM trapped).
 */
/** Elements of `dtype` the storage holds. */
const capacityOf = (storage: Storage, dtype: DType): number =>
  Math.floor(storage.byteLength / bytesPerElement(dtype));

/** The storage index of a view's last element (its size-0 dims skipped). */
function lastIndexOf(shape: readonly number[], strides: readonly number[], offset: number): number {
  let last = offset;
  for (let i = 0; i < shape.length; i++) if (shape[i]! > 0) last += (shape[i]! - 1) * strides[i]!;
  return last;
}

function checkView(
  storage: Storage,
  dtype: DType,
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
): void {
  const where = () => `view [${shape}] strides [${strides}] offset ${offset}`;
  if (!Array.isArray(strides) || strides.length !== shape.length || !strides.every(isIndex))
    throw new ShapeError(
      `tensor strides must be ${shape.length} non-negative integers${SAFE} (one per dim); got ${where()}`,
    );
  if (!isIndex(offset))
    throw new ShapeError(`tensor offset must be a non-negative integer${SAFE}; got ${where()}`);
  // Checked by shape, not instanceof: a second copy of the core has its own Storage class.
  if (typeof (storage as Partial<Storage> | undefined)?.byteLength !== "number")
    throw new ArgumentError(
      `new Tensor: storage must be a Storage (a tensor's .storage), got ${show(storage)}`,
    );
  const capacity = capacityOf(storage, dtype);
  const last = lastIndexOf(shape, strides, offset);
  if (shape.includes(0) ? offset > capacity : last >= capacity)
    throw new ShapeError(
      `${where()} reaches element ${last} of a ${dtype} storage of ${capacity} elements; every element of a view must lie inside its storage`,
    );
}
