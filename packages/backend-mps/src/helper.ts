/**
 * The helper library, bound: one method per C function, each turning a non-OK status
 * into a typed error with the helper's message. Callers (memory.ts, the kernels) have
 * already checked their arguments; the helper checks them again, so a mistake here is an
 * error, never a crash. `calls` counts every native call, so tests can prove that bad
 * input was refused before reaching the helper.
 */
import type { NativeLibrary } from "@backplane/core/cpu";
import { mpsError } from "./errors.ts";
import { MAX_RANK, type MpsDecl, STATUS } from "./native/abi.ts";

/** A buffer handle from bp_mps_buffer_alloc. */
export type BufferId = bigint;

export interface DeviceFacts {
  name: string;
  /** Metal's recommendedMaxWorkingSetSize: the default memory cap. */
  workingSetBytes: number;
  unifiedMemory: boolean;
  bfloat16: boolean;
  /** MPSGraph's own scaled dot-product attention (macOS 15+). */
  nativeAttention: boolean;
}

export interface HelperMemoryStats {
  heldBytes: number;
  capBytes: number;
  liveBuffers: number;
}

function dims(values: readonly number[]): BigInt64Array {
  if (values.length > MAX_RANK + 8) throw new RangeError("too many dims");
  return BigInt64Array.from(values, (v) => BigInt(v));
}

export class MpsHelper {
  /** Native calls made through this object. */
  calls = 0;
  private readonly f: NativeLibrary<MpsDecl>["symbols"];

  constructor(
    readonly lib: NativeLibrary<MpsDecl>,
    /** "metal", or "cpu-stand-in" for the tests' build. */
    readonly implementation: string,
  ) {
    this.f = lib.symbols;
  }

  private check(call: string, status: number): void {
    this.calls++;
    if (status === STATUS.OK) return;
    throw mpsError(call, status, this.f.bp_mps_last_error() ?? "");
  }

  init(): void {
    this.check("bp_mps_init", this.f.bp_mps_init());
  }

  device(): DeviceFacts {
    const name = new Uint8Array(256);
    this.check("bp_mps_device_name", this.f.bp_mps_device_name(name, name.length));
    const info = new BigUint64Array(4);
    this.check("bp_mps_device_info", this.f.bp_mps_device_info(info));
    return {
      name: new TextDecoder().decode(name.subarray(0, name.indexOf(0))),
      workingSetBytes: Number(info[0]),
      unifiedMemory: info[1] === 1n,
      bfloat16: info[2] === 1n,
      nativeAttention: info[3] === 1n,
    };
  }

  /** [major, minor, patch] of macOS, or undefined off macOS. */
  osVersion(): [number, number, number] | undefined {
    const out = new Int32Array(3);
    this.calls++;
    if (this.f.bp_mps_os_version(out) !== STATUS.OK) return undefined;
    return [out[0]!, out[1]!, out[2]!];
  }

  setMemoryLimit(bytes: number): void {
    this.check("bp_mps_set_memory_limit", this.f.bp_mps_set_memory_limit(bytes));
  }

  memoryStats(): HelperMemoryStats {
    const out = new BigUint64Array(3);
    this.check("bp_mps_memory_stats", this.f.bp_mps_memory_stats(out));
    return { heldBytes: Number(out[0]), capBytes: Number(out[1]), liveBuffers: Number(out[2]) };
  }

  alloc(bytes: number): BufferId {
    const out = new BigUint64Array(1);
    this.check("bp_mps_buffer_alloc", this.f.bp_mps_buffer_alloc(bytes, out));
    return out[0]!;
  }

  free(id: BufferId): void {
    this.check("bp_mps_buffer_free", this.f.bp_mps_buffer_free(id));
  }

  write(id: BufferId, offset: number, src: Uint8Array): void {
    this.check("bp_mps_buffer_write", this.f.bp_mps_buffer_write(id, offset, src, src.byteLength));
  }

  read(id: BufferId, offset: number, dst: Uint8Array): void {
    this.check("bp_mps_buffer_read", this.f.bp_mps_buffer_read(id, offset, dst, dst.byteLength));
  }

  copy(src: BufferId, srcOffset: number, dst: BufferId, dstOffset: number, bytes: number): void {
    this.check(
      "bp_mps_buffer_copy",
      this.f.bp_mps_buffer_copy(src, srcOffset, dst, dstOffset, bytes),
    );
  }

  synchronize(): void {
    this.check("bp_mps_synchronize", this.f.bp_mps_synchronize());
  }

  stridedCopy(
    elemBytes: number,
    src: BufferId,
    offset: number,
    shape: readonly number[],
    strides: readonly number[],
    dst: BufferId,
  ): void {
    this.check(
      "bp_mps_strided_copy",
      this.f.bp_mps_strided_copy(
        elemBytes,
        src,
        offset,
        shape.length,
        dims(shape),
        dims(strides),
        dst,
      ),
    );
  }

  matmul(
    dtype: number,
    a: BufferId,
    b: BufferId,
    c: BufferId,
    [batch, m, n, k]: readonly [number, number, number, number],
    aBatched: boolean,
    bBatched: boolean,
  ): void {
    this.check(
      "bp_mps_matmul",
      this.f.bp_mps_matmul(dtype, a, b, c, batch, m, n, k, aBatched ? 1 : 0, bBatched ? 1 : 0),
    );
  }

  conv2d(
    dtype: number,
    x: BufferId,
    w: BufferId,
    bias: BufferId | 0n,
    y: BufferId,
    geometry: readonly number[],
  ): void {
    this.check("bp_mps_conv2d", this.f.bp_mps_conv2d(dtype, x, w, bias, y, dims(geometry)));
  }

  softmax(
    dtype: number,
    x: BufferId,
    y: BufferId,
    [outer, dim, inner]: readonly [number, number, number],
    log: boolean,
  ): void {
    this.check(
      "bp_mps_softmax",
      this.f.bp_mps_softmax(dtype, x, y, outer, dim, inner, log ? 1 : 0),
    );
  }

  sdpa(
    dtype: number,
    [q, k, v]: readonly [BufferId, BufferId, BufferId],
    mask: BufferId | 0n,
    maskKind: number,
    y: BufferId,
    shape: readonly number[],
    scale: number,
  ): void {
    this.check(
      "bp_mps_sdpa",
      this.f.bp_mps_sdpa(dtype, q, k, v, mask, maskKind, y, dims(shape), scale),
    );
  }

  elementwise(
    op: number,
    dtype: number,
    a: BufferId,
    b: BufferId | 0n,
    y: BufferId,
    shapes: { a: readonly number[]; b: readonly number[]; out: readonly number[] },
  ): void {
    this.check(
      "bp_mps_elementwise",
      this.f.bp_mps_elementwise(
        op,
        dtype,
        a,
        b,
        y,
        shapes.out.length,
        dims(shapes.a),
        dims(shapes.b),
        dims(shapes.out),
      ),
    );
  }
}
