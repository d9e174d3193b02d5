/**
 * The WebAssembly types the API names, as the host's own types where it has them and a
 * structural minimum where it has none: the published .d.ts then type-checks in a Node
 * project without the DOM lib (@types/node declares no WebAssembly namespace), while code
 * with the DOM lib gets WebAssembly.Memory and friends themselves.
 */
type Host = typeof globalThis;

/** WebAssembly.Memory where declared; else what the API reads of one. */
export type WasmMemory = Host extends { WebAssembly: { Memory: { prototype: infer M } } }
  ? M
  : { readonly buffer: ArrayBuffer; grow(delta: number): number };

/** WebAssembly.Module where declared; else an opaque object. */
export type WasmModule = Host extends { WebAssembly: { Module: { prototype: infer M } } }
  ? M
  : object;

/** WebAssembly.Instance where declared; else its exports. */
export type WasmInstance = Host extends { WebAssembly: { Instance: { prototype: infer I } } }
  ? I
  : { readonly exports: Record<string, unknown> };

/** WebAssembly.Imports where declared; else modules of named values. */
export type WasmImports = Host extends {
  WebAssembly: { Instance: new (module: never, imports: infer I) => unknown };
}
  ? I
  : Record<string, Record<string, unknown>>;
