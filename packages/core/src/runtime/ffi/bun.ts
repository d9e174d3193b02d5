/**
 * Bun adapter over bun:ffi. Every declared type maps to a native bun:ffi type with the
 * documented JS conventions, so bound functions are bun's own (no wrappers):
 * `ptr` takes typed arrays, DataViews, numbers and null; `cstring` takes strings and byte
 * views and returns string | null; i64/u64/usize return bigint.
 */
import type { FfiAdapter, LoadAttempt } from "./contract.ts";
import { loaderError } from "./load-error.ts";
import type { FfiType, LibraryDecl, Pointer } from "./types.ts";
import type { NativeFn } from "./wrap.ts";

interface BunSymbolDecl {
  args: string[];
  returns: string;
}

interface BunLibrary {
  symbols: Record<string, NativeFn>;
  close(): void;
}

interface BunFfi {
  dlopen(path: string, symbols: Record<string, BunSymbolDecl>): BunLibrary;
  ptr(view: ArrayBufferView): number;
  CString: new (ptr: number, byteOffset?: number, byteLength?: number) => unknown;
  toArrayBuffer(ptr: number, byteOffset: number, byteLength: number): ArrayBuffer;
}

const BUN_TYPES: Record<FfiType, string> = {
  void: "void",
  bool: "bool",
  i8: "i8",
  u8: "u8",
  i16: "i16",
  u16: "u16",
  i32: "i32",
  u32: "u32",
  i64: "i64",
  u64: "u64",
  usize: "usize",
  f32: "f32",
  f64: "f64",
  pointer: "ptr",
  buffer: "ptr",
  cstring: "cstring",
};

const MISSING_SYMBOL = /^Symbol "([^"]+)" not found/;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function load(ffi: BunFfi, path: string, decl: LibraryDecl): LoadAttempt {
  const wanted: Record<string, BunSymbolDecl> = {};
  for (const [name, s] of Object.entries(decl)) {
    wanted[name] = { args: s.args.map((t) => BUN_TYPES[t]), returns: BUN_TYPES[s.returns] };
  }
  // bun:ffi rejects the whole library on the first missing symbol: drop optional ones and
  // retry until everything that remains binds.
  let lib: BunLibrary | undefined;
  while (Object.keys(wanted).length > 0) {
    try {
      lib = ffi.dlopen(path, wanted);
      break;
    } catch (e) {
      const msg = message(e);
      const name = MISSING_SYMBOL.exec(msg)?.[1];
      if (name === undefined || !(name in wanted))
        return { ok: false, kind: "load", error: loaderError(path, msg) };
      if (decl[name]!.optional !== true) return { ok: false, kind: "symbol", symbol: name };
      delete wanted[name];
    }
  }
  const symbols: Record<string, NativeFn | null> = {};
  for (const name of Object.keys(decl)) symbols[name] = lib?.symbols[name] ?? null;
  return { ok: true, symbols, close: () => lib?.close() };
}

export async function createBunAdapter(): Promise<FfiAdapter> {
  const specifier = "bun:ffi";
  const ffi = (await import(specifier)) as BunFfi;
  return {
    runtime: "bun",
    load: (path, decl) => load(ffi, path, decl),
    ptrOf: (view) => ffi.ptr(view) as unknown as Pointer,
    ptrFromAddress: (address) => (address === 0n ? null : (Number(address) as unknown as Pointer)),
    ptrAddress: (p) => BigInt(p as unknown as number),
    readCString: (p, byteLength) =>
      String(
        byteLength === undefined
          ? new ffi.CString(p as unknown as number)
          : new ffi.CString(p as unknown as number, 0, byteLength),
      ),
    toArrayBuffer: (p, byteLength) => ffi.toArrayBuffer(p as unknown as number, 0, byteLength),
  };
}
