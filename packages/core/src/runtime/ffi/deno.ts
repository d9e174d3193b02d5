/**
 * Deno adapter over Deno.dlopen. Deno's own conventions already match ours for numbers
 * (i64/u64/usize return bigint) and `buffer`, so most functions are Deno's own. Only these
 * signatures get a thin JS layer:
 * - `pointer` parameters: Deno's "pointer" type takes pointer objects only, and
 *   Deno.UnsafePointer.of(view) costs ~0.5 us per call. So a call passing an ArrayBufferView
 *   for a pointer parameter goes to a second binding of the same symbol where that parameter
 *   is a "buffer"; one binding per combination of view/pointer parameters, made on first use
 *   (the dispatch costs a few ArrayBuffer.isView checks).
 * - `cstring` parameters: a JS string is encoded to NUL-terminated UTF-8 (passed as buffer);
 * - `cstring` results: the pointer is read with UnsafePointerView.getCString (NULL -> null).
 */
import { ArgumentError, FfiError } from "../../errors.ts";
import type { FfiAdapter, LoadAttempt } from "./contract.ts";
import { loaderError } from "./load-error.ts";
import type { FfiType, LibraryDecl, Pointer } from "./types.ts";
import {
  type Convert,
  encodeCString,
  MAX_VIEW_PARAMS,
  type NativeFn,
  wrapByViews,
  wrapNative,
} from "./wrap.ts";

type DenoPointer = object | null;

interface DenoForeignFunction {
  parameters: string[];
  result: string;
  optional: boolean;
}

interface DenoLibrary {
  symbols: Record<string, NativeFn | null>;
  close(): void;
}

interface DenoFfi {
  dlopen(path: string, symbols: Record<string, DenoForeignFunction>): DenoLibrary;
  UnsafePointer: {
    of(value: ArrayBufferView): DenoPointer;
    create(address: bigint): DenoPointer;
    value(p: DenoPointer): bigint | number;
  };
  UnsafePointerView: {
    getCString(p: object, offset?: number): string;
    getArrayBuffer(p: object, byteLength: number, offset?: number): ArrayBuffer;
  };
}

const NUMERIC: Partial<Record<FfiType, string>> = {
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
};

function parameterType(t: FfiType): string {
  if (t === "pointer") return "pointer";
  if (t === "buffer" || t === "cstring") return "buffer";
  return NUMERIC[t]!;
}

function resultType(t: FfiType): string {
  return t === "pointer" || t === "cstring" ? "pointer" : NUMERIC[t]!;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

// Long: the adapter object: one short method per FfiAdapter member.
export async function createDenoAdapter(): Promise<FfiAdapter> {
  const deno = (globalThis as unknown as { Deno: DenoFfi }).Deno;
  const { UnsafePointer, UnsafePointerView } = deno;

  const toPointer: Convert = (v) => (ArrayBuffer.isView(v) ? UnsafePointer.of(v) : v);
  const fromCString: Convert = (p: DenoPointer) =>
    p === null ? null : UnsafePointerView.getCString(p);

  function load(path: string, decl: LibraryDecl): LoadAttempt {
    const names = Object.keys(decl);
    const foreign: Record<string, DenoForeignFunction> = {};
    for (const name of names) {
      const s = decl[name]!;
      foreign[name] = {
        parameters: s.args.map(parameterType),
        result: resultType(s.returns),
        // Always optional, so a missing symbol is a null we can report, not a throw.
        optional: true,
      };
    }
    let lib: DenoLibrary;
    try {
      lib = deno.dlopen(path, foreign);
    } catch (e) {
      return { ok: false, kind: "load", error: loaderError(path, message(e)) };
    }
    const absent = names.find((n) => lib.symbols[n] == null && decl[n]!.optional !== true);
    if (absent !== undefined) {
      lib.close();
      return { ok: false, kind: "symbol", symbol: absent };
    }

    // Extra bindings (views for pointer parameters), opened on first use, closed with lib.
    const extra: DenoLibrary[] = [];
    let closed = false;
    const symbols: Record<string, NativeFn | null> = {};
    for (const name of names) {
      const fn = lib.symbols[name];
      const s = decl[name]!;
      if (fn == null) {
        symbols[name] = null;
        continue;
      }
      const pointerParams = s.args.flatMap((t, i) => (t === "pointer" ? [i] : []));
      const dispatched = pointerParams.slice(0, MAX_VIEW_PARAMS);
      const argConverts = s.args.map((t, i) =>
        t === "cstring"
          ? encodeCString
          : t === "pointer" && !dispatched.includes(i)
            ? toPointer
            : null,
      );
      const resultConvert = s.returns === "cstring" ? fromCString : null;
      if (dispatched.length === 0) {
        symbols[name] = wrapNative(fn, argConverts, resultConvert);
        continue;
      }
      const bind = (mask: number): NativeFn => {
        if (closed) throw new FfiError(`${name}: the library ${path} is closed`);
        const parameters = [...foreign[name]!.parameters];
        dispatched.forEach((p, bit) => {
          if (mask & (1 << bit)) parameters[p] = "buffer";
        });
        const variant = deno.dlopen(path, {
          [name]: { parameters, result: foreign[name]!.result, optional: false },
        });
        extra.push(variant);
        return variant.symbols[name]!;
      };
      symbols[name] = wrapByViews(fn, bind, dispatched, argConverts, resultConvert);
    }
    const close = () => {
      closed = true;
      lib.close();
      for (const e of extra.splice(0)) e.close();
    };
    return { ok: true, symbols, close };
  }

  return {
    runtime: "deno",
    load,
    ptrOf: (view) => {
      const p = UnsafePointer.of(view);
      if (p === null) throw new ArgumentError("ptrOf: the view has no data pointer (empty?)");
      return p as Pointer;
    },
    ptrFromAddress: (address) => UnsafePointer.create(address) as Pointer | null,
    ptrAddress: (p) => BigInt(UnsafePointer.value(p as object)),
    readCString: (p, byteLength) =>
      byteLength === undefined
        ? UnsafePointerView.getCString(p as object)
        : new TextDecoder().decode(UnsafePointerView.getArrayBuffer(p as object, byteLength)),
    toArrayBuffer: (p, byteLength) => UnsafePointerView.getArrayBuffer(p as object, byteLength),
  };
}
