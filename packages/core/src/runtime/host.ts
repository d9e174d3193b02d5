/**
 * The host objects Backplane probes (Bun, Deno, Node's process, a browser's navigator),
 * typed as optional: code reads `host.Deno?.env.get(...)` instead of casting globalThis
 * to any. Only the members Backplane uses are listed.
 */

interface DenoLike {
  version: { deno: string };
  build: { os: string; arch: string };
  env: { get(name: string): string | undefined; toObject(): Record<string, string> };
  args: string[];
  execPath(): string;
  readFileSync(path: string | URL): Uint8Array;
  readFile(path: string | URL): Promise<Uint8Array<ArrayBuffer>>;
  exit(code: number): never;
  readTextFileSync(path: string | URL): string;
  unrefTimer?(id: number): void;
}

interface BunLike {
  version: string;
  gc(force: boolean): void;
}

interface ProcessLike {
  version: string;
  versions: { node?: string; bun?: string; deno?: string };
  release?: { name?: string };
  platform: string;
  arch: string;
  execPath: string;
  argv: string[];
  execArgv?: string[];
  env: Record<string, string | undefined>;
  /** A Node built-in module (node:fs, node:worker_threads...), typed by the caller. */
  getBuiltinModule?(id: string): unknown;
}

interface NavigatorLike {
  userAgent?: string;
  platform?: string;
  hardwareConcurrency?: number;
  /** WebGPU (typed by @webgpu/types where a backend needs it). */
  gpu?: unknown;
}

export interface HostGlobals {
  Bun?: BunLike;
  Deno?: DenoLike;
  process?: ProcessLike;
  navigator?: NavigatorLike;
  window?: unknown;
  WorkerGlobalScope?: unknown;
  crossOriginIsolated?: boolean;
  /** V8's gc(), exposed with --expose-gc. */
  gc?(): void;
}

export const host = globalThis as unknown as HostGlobals;

/** A Node built-in module by id ("node:fs"), where the runtime has them; typed by the caller. */
export function builtinModule<T>(id: string): T | undefined {
  try {
    return host.process?.getBuiltinModule?.(id) as T | undefined;
  } catch {
    return undefined;
  }
}
