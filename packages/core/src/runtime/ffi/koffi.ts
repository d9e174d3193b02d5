/**
 * Node adapter over koffi (an optional peer dependency, imported lazily on first use).
 * koffi's `void *` takes typed arrays, DataViews, bigint pointers and null, and `str` takes
 * strings and byte views and returns string | null, so most functions are koffi's own. The
 * one conversion: i64/u64/usize results, which koffi returns as number when they fit, are
 * made bigint like on the other runtimes.
 */
import type { FfiAdapter, LoadAttempt } from "./contract.ts";
import { loaderError } from "./load-error.ts";
import type { FfiType, LibraryDecl, Pointer } from "./types.ts";
import { type Convert, type NativeFn, wrapNative } from "./wrap.ts";

type Koffi = typeof import("koffi");
type KoffiLibrary = ReturnType<Koffi["load"]>;

const KOFFI_TYPES: Record<FfiType, string> = {
  void: "void",
  bool: "bool",
  i8: "int8_t",
  u8: "uint8_t",
  i16: "int16_t",
  u16: "uint16_t",
  i32: "int32_t",
  u32: "uint32_t",
  i64: "int64_t",
  u64: "uint64_t",
  usize: "size_t",
  f32: "float",
  f64: "double",
  pointer: "void *",
  buffer: "void *",
  cstring: "str",
};

const MISSING_FUNCTION = /cannot find (?:function|symbol)/i;

const toBigInt: Convert = (v: number | bigint) => (typeof v === "bigint" ? v : BigInt(v));

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export async function createKoffiAdapter(): Promise<FfiAdapter> {
  // A variable specifier keeps bundlers and Deno's graph from resolving koffi eagerly.
  const specifier = "koffi";
  const mod = (await import(specifier)) as Koffi & { default?: Koffi };
  const koffi: Koffi = mod.default ?? mod;
  // koffi runs C calls on a stack of its own (2 MiB by default); LAPACK routines put
  // large work arrays on the stack (OpenBLAS's dgetrf at n = 256 overflows 2 MiB), so
  // give native code the stack a C program's main thread would have.
  try {
    const cfg = (koffi as unknown as { config(c?: Record<string, number>): Record<string, number> })
      .config;
    if (cfg().sync_stack_size < 16 << 20) cfg({ ...cfg(), sync_stack_size: 16 << 20 });
  } catch {
    // Older koffi without config(): keep its defaults.
  }

  function load(path: string, decl: LibraryDecl): LoadAttempt {
    let lib: KoffiLibrary;
    try {
      lib = koffi.load(path);
    } catch (e) {
      return { ok: false, kind: "load", error: loaderError(path, message(e)) };
    }
    const symbols: Record<string, NativeFn | null> = {};
    for (const [name, s] of Object.entries(decl)) {
      let fn: NativeFn;
      try {
        fn = lib.func(
          name,
          KOFFI_TYPES[s.returns],
          s.args.map((t) => KOFFI_TYPES[t]),
        );
      } catch (e) {
        const msg = message(e);
        if (MISSING_FUNCTION.test(msg) && s.optional === true) {
          symbols[name] = null;
          continue;
        }
        lib.unload();
        return MISSING_FUNCTION.test(msg)
          ? { ok: false, kind: "symbol", symbol: name }
          : { ok: false, kind: "load", error: `${path}: ${name}: ${msg}` };
      }
      const wide = s.returns === "i64" || s.returns === "u64" || s.returns === "usize";
      symbols[name] = wrapNative(
        fn,
        s.args.map(() => null),
        wide ? toBigInt : null,
      );
    }
    return { ok: true, symbols, close: () => lib.unload() };
  }

  return {
    runtime: "node",
    load,
    ptrOf: (view) => {
      // Reading .buffer moves a small on-heap typed array's data off-heap, where it stays put.
      void view.buffer;
      return koffi.address(view) as unknown as Pointer;
    },
    ptrFromAddress: (address) => (address === 0n ? null : (address as unknown as Pointer)),
    ptrAddress: (p) => BigInt(p as unknown as bigint),
    readCString: (p, byteLength) =>
      byteLength === undefined ? koffi.decode.string(p) : koffi.decode.string(p, byteLength),
    toArrayBuffer: (p, byteLength) => koffi.view(p, byteLength),
  };
}
