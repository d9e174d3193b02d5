/**
 * @backplane/core/ffi: open a native library from candidate names and paths, and bind its
 * symbols from one declaration format, over bun:ffi (Bun), Deno.dlopen (Deno) and koffi
 * (Node, optional peer dependency loaded on first use).
 *
 * ```ts
 * const r = await openLibrary(
 *   { name: "cudart", candidates: ["cudart"], versions: ["13", "12"], env: "BACKPLANE_CUDART_PATH" },
 *   { cudaRuntimeGetVersion: { args: ["buffer"], returns: "i32" } },
 * );
 * if (!r.ok) console.warn(r.reason); // "libcudart.so.13 not found (tried: ...)"
 * else { const v = new Int32Array(1); r.lib.symbols.cudaRuntimeGetVersion(v); }
 * ```
 *
 * Importing this module loads nothing native; a missing library or symbol is a reason.
 */
export { initFfi } from "./adapter.ts";
export {
  defineLibrary,
  FFI_TYPES,
  ffiCall,
  ffiOptionalStatus,
  ffiStatus,
  validateDeclaration,
} from "./decl.ts";
export { openLibrary } from "./open.ts";
export {
  isNullPtr,
  nullPtr,
  ptrAddress,
  ptrFromAddress,
  ptrOf,
  readCString,
  readPointer,
  toArrayBuffer,
} from "./pointer.ts";
export { detectRuntime, type HostInfo, hostInfo } from "./runtime.ts";
export {
  type Attempt,
  defaultSearchDirs,
  libraryFileNames,
  planSearch,
  pythonSitePackages,
  SEARCH_PATH_ENV,
  type SearchPlan,
} from "./search.ts";
export type {
  ArgValue,
  ArgValues,
  BoundFunction,
  BoundSymbols,
  FfiInit,
  FfiRuntime,
  FfiType,
  LibraryDecl,
  LibrarySpec,
  NativeLibrary,
  OpenOptions,
  OpenResult,
  Pointer,
  ReturnValue,
  SymbolDecl,
  WideIntType,
} from "./types.ts";
