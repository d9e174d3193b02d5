/** Which JavaScript runtime we are on, and what it can do. Detected once, never throws. */
import { builtinModule, host } from "./host.ts";

export type RuntimeName = "bun" | "deno" | "node" | "browser" | "unknown";

export interface RuntimeInfo {
  name: RuntimeName;
  version: string;
  platform: string;
  arch: string;
  wasm: boolean;
  wasmSimd: boolean;
  wasmThreads: boolean;
  sharedArrayBuffer: boolean;
  crossOriginIsolated: boolean;
  hardwareConcurrency: number;
}

const g = host;

function detectName(): RuntimeName {
  if (typeof g.Bun !== "undefined") return "bun";
  if (typeof g.Deno !== "undefined") return "deno";
  if (g.process?.versions?.node) return "node";
  if (typeof g.window !== "undefined" || typeof g.WorkerGlobalScope !== "undefined")
    return "browser";
  return "unknown";
}

// The smallest modules that validate only with SIMD (a v128.const) and with shared memory.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 22, 1, 20, 0, 253, 12, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11,
]);
const THREADS_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 5, 4, 1, 3, 1, 1, 10, 11, 1, 9, 0, 65,
  0, 254, 16, 2, 0, 26, 11,
]);

function validates(bytes: Uint8Array<ArrayBuffer>): boolean {
  try {
    return typeof WebAssembly !== "undefined" && WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

function detect(): RuntimeInfo {
  const name = detectName();
  const proc = g.process;
  let version = "";
  if (name === "bun") version = g.Bun?.version ?? "";
  else if (name === "deno") version = g.Deno?.version?.deno ?? "";
  else if (name === "node") version = proc?.versions.node ?? "";
  else if (typeof g.navigator !== "undefined") version = g.navigator.userAgent ?? "";
  const platform = g.Deno?.build?.os ?? proc?.platform ?? g.navigator?.platform ?? "unknown";
  const arch = g.Deno?.build?.arch ?? proc?.arch ?? "unknown";
  let cores = g.navigator?.hardwareConcurrency ?? 1;
  try {
    const os = builtinModule<typeof import("node:os")>("node:os");
    if (os?.availableParallelism) cores = os.availableParallelism();
  } catch {
    // keep navigator's answer
  }
  const sab = typeof SharedArrayBuffer !== "undefined";
  return {
    name,
    version,
    platform,
    arch,
    wasm: typeof WebAssembly !== "undefined",
    wasmSimd: validates(SIMD_PROBE),
    wasmThreads: sab && validates(THREADS_PROBE),
    sharedArrayBuffer: sab,
    // Servers and CLIs are "isolated" by nature; only a page can lack it.
    crossOriginIsolated: name === "browser" ? g.crossOriginIsolated === true : true,
    hardwareConcurrency: cores,
  };
}

let cached: RuntimeInfo | undefined;
export function runtime(): RuntimeInfo {
  // Frozen: every caller shares it, and the backends' availability reads it (a caller that
  // set runtime().wasmSimd = false turned the WASM kernels off for the whole process).
  cached ??= Object.freeze(detect());
  return cached;
}

/** Reads an environment variable on any runtime; undefined where there is no environment or no permission. */
export function readEnv(name: string): string | undefined {
  try {
    if (typeof g.Deno !== "undefined") return g.Deno.env.get(name) ?? undefined;
    return g.process?.env?.[name];
  } catch {
    return undefined;
  }
}
