/**
 * The contract every runtime adapter (bun.ts, deno.ts, koffi.ts) fulfils, and the lazily
 * created, cached adapter of the current runtime.
 */
import { FfiError } from "../errors.ts";
import { createBunAdapter } from "./bun.ts";
import { createDenoAdapter } from "./deno.ts";
import { createKoffiAdapter } from "./koffi.ts";
import { detectRuntime } from "./runtime.ts";
import type { FfiInit, FfiRuntime, LibraryDecl, Pointer } from "./types.ts";
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

let active: FfiAdapter | undefined;
let pending: Promise<FfiAdapter | string> | undefined;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

async function create(): Promise<FfiAdapter | string> {
  const runtime = detectRuntime();
  try {
    switch (runtime) {
      case "bun":
        return await createBunAdapter();
      case "deno":
        return await createDenoAdapter();
      case "node":
        return await createKoffiAdapter();
      default:
        return "no FFI on this runtime (need Bun, Deno, or Node.js with koffi)";
    }
  } catch (e) {
    if (runtime === "node") {
      return `koffi is not available (${message(e)}); install it to use native libraries on Node.js: npm install koffi`;
    }
    return `the ${runtime} FFI could not be initialised: ${message(e)}`;
  }
}

/** The current runtime's adapter, or the reason there is none. Created once. */
export async function loadAdapter(): Promise<FfiAdapter | string> {
  if (active) return active;
  pending ??= create();
  const result = await pending;
  if (typeof result === "string") pending = undefined;
  else active = result;
  return result;
}

/** The adapter for the synchronous pointer helpers: they need {@link initFfi} (or any open) first. */
export function currentAdapter(what: string): FfiAdapter {
  if (active) return active;
  throw new FfiError(
    `${what}: the FFI is not initialised yet; await initFfi() or openLibrary() first`,
  );
}

/**
 * Loads the runtime's FFI (bun:ffi, Deno.dlopen, or koffi on Node) so that the synchronous
 * helpers work. Never throws: a missing FFI is a reason.
 */
export async function initFfi(): Promise<FfiInit> {
  const a = await loadAdapter();
  return typeof a === "string" ? { ok: false, reason: a } : { ok: true, runtime: a.runtime };
}
