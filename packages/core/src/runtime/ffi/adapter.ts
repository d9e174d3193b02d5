/** The lazily created, cached FFI adapter of the current runtime (contract.ts: its shape). */
import { FfiError } from "../../errors.ts";

export type { FfiAdapter, LoadAttempt } from "./contract.ts";

import { createBunAdapter } from "./bun.ts";
import type { FfiAdapter } from "./contract.ts";
import { createDenoAdapter } from "./deno.ts";
import { createKoffiAdapter } from "./koffi.ts";
import { detectRuntime } from "./runtime.ts";
import type { FfiInit } from "./types.ts";

const KOFFI_MISSING = "koffi is not available";

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
      return `${KOFFI_MISSING} (${message(e)}); install it to use native libraries on Node.js: npm install koffi`;
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
  if (typeof a !== "string") return { ok: true, runtime: a.runtime };
  return { ok: false, reason: a, notInstalled: a.startsWith(KOFFI_MISSING) };
}
