/** The contract every runtime adapter (bun.ts, deno.ts, koffi.ts) fulfils. */
import type { FfiRuntime, LibraryDecl, Pointer } from "./types.ts";
import type { NativeFn } from "./wrap.ts";

/** The outcome of loading one path with one declaration. */
export type LoadAttempt =
  | {
      readonly ok: true;
      /** Bound functions; missing optional symbols are null. */
      readonly symbols: Record<string, NativeFn | null>;
      readonly close: () => void;
    }
  /** The file could not be loaded at all (dlopen's message). */
  | { readonly ok: false; readonly kind: "load"; readonly error: string }
  /** The file loaded but lacks a required symbol (the library is already closed again). */
  | { readonly ok: false; readonly kind: "symbol"; readonly symbol: string };

export interface FfiAdapter {
  readonly runtime: FfiRuntime;
  load(path: string, decl: LibraryDecl): LoadAttempt;
  ptrOf(view: ArrayBufferView): Pointer;
  ptrFromAddress(address: bigint): Pointer | null;
  ptrAddress(p: Pointer): bigint;
  readCString(p: Pointer, byteLength?: number): string;
  toArrayBuffer(p: Pointer, byteLength: number): ArrayBuffer;
}
