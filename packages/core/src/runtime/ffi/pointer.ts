/**
 * Pointer helpers that work the same on every runtime. They are synchronous, so they use the
 * adapter created by initFfi()/openLibrary() (FfiError before that). Pointers handed to native
 * code stay valid only while the JS object owning the memory is alive.
 *
 * Out-parameters: pass a one-element typed array where the C function takes `T*`, e.g.
 * `new Int32Array(1)` for `int*` (read `out[0]`), `new BigUint64Array(1)` for `void**`
 * (read it with {@link readPointer}).
 */
import { ArgumentError } from "../../errors.ts";
import { currentAdapter } from "./adapter.ts";
import type { Pointer } from "./types.ts";

/** The NULL pointer, accepted by every `pointer`, `buffer` and `cstring` argument. */
export const nullPtr = null;

/** True for NULL in any runtime's representation. */
export function isNullPtr(p: Pointer | null | undefined): p is null | undefined {
  return p == null || (p as unknown) === 0 || (p as unknown) === 0n;
}

/**
 * The address of a typed array's data (byteOffset included) as a runtime Pointer. Not needed
 * to pass a view to a `pointer`/`buffer` argument (pass the view itself); use it to store an
 * address in native memory or to compare addresses.
 */
export function ptrOf(view: ArrayBufferView): Pointer {
  if (!ArrayBuffer.isView(view)) throw new ArgumentError("ptrOf: expected an ArrayBufferView");
  if (view.byteLength === 0) throw new ArgumentError("ptrOf: an empty view has no stable address");
  return currentAdapter("ptrOf").ptrOf(view);
}

/** A Pointer from a raw address (0 gives null). */
export function ptrFromAddress(address: bigint | number): Pointer | null {
  if (typeof address === "number" && !(Number.isSafeInteger(address) && address >= 0)) {
    throw new ArgumentError(`ptrFromAddress: ${address} is not an address`);
  }
  const a = BigInt.asUintN(64, BigInt(address));
  return a === 0n ? null : currentAdapter("ptrFromAddress").ptrFromAddress(a);
}

/** The raw address of a pointer (0n for NULL). */
export function ptrAddress(p: Pointer | null): bigint {
  return isNullPtr(p) ? 0n : currentAdapter("ptrAddress").ptrAddress(p);
}

/** Reads a pointer out-parameter written into a 64-bit buffer (`void**`), NULL -> null. */
export function readPointer(buf: BigUint64Array | BigInt64Array, index = 0): Pointer | null {
  if (!(buf instanceof BigUint64Array || buf instanceof BigInt64Array)) {
    throw new ArgumentError("readPointer: expected a BigUint64Array or BigInt64Array");
  }
  if (!(Number.isInteger(index) && index >= 0 && index < buf.length)) {
    throw new ArgumentError(`readPointer: index ${index} out of range [0, ${buf.length})`);
  }
  return ptrFromAddress(BigInt.asUintN(64, buf[index]!));
}

const decoder = new TextDecoder();

/**
 * Reads a UTF-8 C string: from a `char*` Pointer up to its NUL (or exactly `byteLength`
 * bytes), or from a byte view (a char buffer an out-parameter filled) up to its first NUL.
 */
export function readCString(p: Pointer | ArrayBufferView | null, byteLength?: number): string {
  if (byteLength !== undefined && !(Number.isInteger(byteLength) && byteLength >= 0)) {
    throw new ArgumentError(`readCString: byteLength ${byteLength} is not a non-negative integer`);
  }
  if (ArrayBuffer.isView(p)) {
    const bytes = new Uint8Array(p.buffer, p.byteOffset, p.byteLength);
    const nul = bytes.indexOf(0);
    const end = Math.min(byteLength ?? bytes.length, nul < 0 ? bytes.length : nul);
    return decoder.decode(bytes.subarray(0, end));
  }
  if (isNullPtr(p)) throw new ArgumentError("readCString: NULL pointer");
  if (byteLength === 0) return "";
  return currentAdapter("readCString").readCString(p, byteLength);
}

/** A zero-copy ArrayBuffer over `byteLength` bytes of native memory at `p`. */
export function toArrayBuffer(p: Pointer, byteLength: number): ArrayBuffer {
  if (isNullPtr(p)) throw new ArgumentError("toArrayBuffer: NULL pointer");
  if (!(Number.isInteger(byteLength) && byteLength > 0)) {
    throw new ArgumentError(`toArrayBuffer: byteLength ${byteLength} must be a positive integer`);
  }
  return currentAdapter("toArrayBuffer").toArrayBuffer(p, byteLength);
}
