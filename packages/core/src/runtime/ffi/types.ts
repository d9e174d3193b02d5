/**
 * The one declaration format of the FFI layer, and the TypeScript types derived from it.
 *
 * Value conventions, identical on Bun, Deno and Node (koffi):
 * - `i64`, `u64`, `usize` arguments accept `number | bigint`; their return values are ALWAYS
 *   `bigint` (exact, one type to branch on). This is what bun:ffi and Deno return natively, so
 *   only koffi needs a conversion.
 * - `pointer` values are opaque ({@link Pointer}): a number on Bun, a pointer object on Deno, a
 *   bigint on Node. A NULL pointer is returned as `null`, and `null` is accepted as an argument.
 *   A `pointer` argument also accepts any ArrayBufferView (its data pointer is passed; on Deno
 *   this costs a per-call ArrayBuffer.isView dispatch, a few ns).
 * - `buffer` is an argument-only pointer type that accepts only `ArrayBufferView | null`: it is
 *   the zero-overhead way to pass typed arrays (no per-call wrapper on any runtime).
 * - `cstring` arguments accept a JS string (encoded to NUL-terminated UTF-8 per call), a
 *   NUL-terminated byte view, or `null`; `cstring` results are `string | null` (NULL -> null).
 */

/** C value types a symbol may take or return. */
export type FfiType =
  | "void"
  | "bool"
  | "i8"
  | "u8"
  | "i16"
  | "u16"
  | "i32"
  | "u32"
  | "i64"
  | "u64"
  | "f32"
  | "f64"
  | "usize"
  | "pointer"
  | "buffer"
  | "cstring";

/** The 64-bit integer types: `number | bigint` in, `bigint` out. */
export type WideIntType = "i64" | "u64" | "usize";

/** One native function: its argument types, its result type, and whether it may be absent. */
export interface SymbolDecl {
  readonly args: readonly FfiType[];
  readonly returns: FfiType;
  /** When true, a library without this symbol still opens; the bound symbol is then `null`. */
  readonly optional?: boolean;
}

/** Symbol name -> declaration. The names are the exported C names. */
export type LibraryDecl = Readonly<Record<string, SymbolDecl>>;

/** Which native library to look for. */
export interface LibrarySpec {
  /** A label for messages, e.g. "cudart". */
  readonly name: string;
  /**
   * What to look for, in order of preference. Each entry is either
   * - a base name ("cudart", "openblas"), expanded per OS: libcudart.so.13, libcudart.so
   *   (Linux), libcudart.13.dylib, libcudart.dylib (macOS), cudart13.dll, cudart.dll (Windows);
   * - a file name ("libc.so.6", "libopenblas.so.0"), searched as is;
   * - a path (contains a slash), tried as is.
   */
  readonly candidates: readonly string[];
  /** Preferred sonames versions, most preferred first (e.g. ["13", "12"]). */
  readonly versions?: readonly string[];
  /**
   * Environment variable that may name the library file (or a directory holding it),
   * e.g. "BACKPLANE_CUDART_PATH". It is tried before anything else.
   */
  readonly env?: string;
  /**
   * Directories inside a Python site-packages where a pip wheel installs the library
   * ("nvidia/cudnn/lib", "nvidia/cu13/lib"), searched in every Python environment found:
   * PYTHONPATH entries, VIRTUAL_ENV, CONDA_PREFIX, ~/.local, /usr/local and /usr.
   */
  readonly pip?: readonly string[];
}

/** Options of {@link openLibrary}. */
export interface OpenOptions {
  /**
   * Directories to search, replacing the defaults (BACKPLANE_FFI_SEARCH_PATH, LD_LIBRARY_PATH,
   * CUDA_HOME..., /usr/local/cuda/lib64, /usr/lib/x86_64-linux-gnu, ...). `[]` searches none.
   */
  readonly searchPaths?: readonly string[];
  /**
   * Also hand bare file names to the OS loader (dlopen's own search: rpath, LD_LIBRARY_PATH,
   * ld.so.cache, PATH on Windows). Default true.
   */
  readonly systemSearch?: boolean;
}

/** The JS runtimes the FFI layer binds through. */
export type FfiRuntime = "bun" | "deno" | "node";

declare const pointerBrand: unique symbol;

/**
 * An opaque native pointer, as the current runtime represents it (number on Bun, pointer
 * object on Deno, bigint on Node). NULL is always `null`, never a Pointer.
 */
export type Pointer = { readonly [pointerBrand]: "Pointer" };

/** What a JS caller may pass for an argument of type T. */
export type ArgValue<T extends FfiType> = T extends "bool"
  ? boolean
  : T extends WideIntType
    ? number | bigint
    : T extends "pointer"
      ? Pointer | ArrayBufferView | null
      : T extends "buffer"
        ? ArrayBufferView | null
        : T extends "cstring"
          ? string | ArrayBufferView | null
          : T extends "void"
            ? never
            : number;

/** What a call returns for a result of type T. */
export type ReturnValue<T extends FfiType> = T extends "void"
  ? undefined
  : T extends "bool"
    ? boolean
    : T extends WideIntType
      ? bigint
      : T extends "pointer"
        ? Pointer | null
        : T extends "cstring"
          ? string | null
          : T extends "buffer"
            ? never
            : number;

/** The JS argument list for a declared argument list. */
export type ArgValues<A extends readonly FfiType[]> = {
  -readonly [I in keyof A]: A[I] extends FfiType ? ArgValue<A[I]> : never;
};

/** The JS function bound for one declaration. */
export type BoundFunction<S extends SymbolDecl> = (
  ...args: ArgValues<S["args"]>
) => ReturnValue<S["returns"]>;

/** Bound symbols of a library: optional ones may be `null`. */
export type BoundSymbols<D extends LibraryDecl> = {
  readonly [K in keyof D]: D[K] extends { readonly optional: true }
    ? BoundFunction<D[K]> | null
    : BoundFunction<D[K]>;
};

/** An opened native library. */
export interface NativeLibrary<D extends LibraryDecl> {
  /** The bound functions; each is the runtime's own function unless a conversion is needed. */
  readonly symbols: BoundSymbols<D>;
  /** The path (or bare name) that was loaded. */
  readonly path: string;
  readonly runtime: FfiRuntime;
  /** Optional symbols the library lacks (bound as null). */
  readonly missing: readonly string[];
  /** Unloads the library (idempotent). Calling a bound function afterwards is undefined behaviour. */
  close(): void;
}

/** The outcome of {@link openLibrary}: a library, or the reason there is none. */
export type OpenResult<D extends LibraryDecl> =
  | {
      readonly ok: true;
      readonly lib: NativeLibrary<D>;
      readonly path: string;
      readonly runtime: FfiRuntime;
      readonly missing: readonly string[];
      /** Every path tried before (and including) the one that loaded. */
      readonly tried: readonly string[];
    }
  | { readonly ok: false; readonly reason: string; readonly tried: readonly string[] };

/** The outcome of {@link initFfi}. */
export type FfiInit =
  | { readonly ok: true; readonly runtime: FfiRuntime }
  | {
      readonly ok: false;
      readonly reason: string;
      /** The FFI module is simply not installed (koffi on Node), as opposed to failing. */
      readonly notInstalled?: boolean;
    };
