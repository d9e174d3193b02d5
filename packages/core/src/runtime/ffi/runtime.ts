/** Which JS runtime we are on, and the host facts the library search needs. */
import { builtinModule } from "../host.ts";
import type { FfiRuntime } from "./types.ts";

interface RuntimeGlobals {
  Bun?: unknown;
  Deno?: {
    build?: { os?: string; arch?: string };
    env?: { get(name: string): string | undefined };
  };
  process?: {
    versions?: { node?: string };
    platform?: string;
    arch?: string;
    env?: Record<string, string | undefined>;
  };
}

const g = globalThis as unknown as RuntimeGlobals;

/** The runtime whose FFI we bind through: Bun and Deno first (both also define process). */
export function detectRuntime(): FfiRuntime | null {
  if (typeof g.Bun !== "undefined") return "bun";
  if (typeof g.Deno !== "undefined") return "deno";
  if (typeof g.process?.versions?.node === "string") return "node";
  return null;
}

/** Host facts, injectable so the search can be tested for other OSes. */
export interface HostInfo {
  /** Node-style: "linux", "darwin", "win32", "freebsd"... */
  readonly platform: string;
  /** Node-style: "x64", "arm64"... */
  readonly arch: string;
  readonly env: (name: string) => string | undefined;
  /** The entries of a directory, or undefined when it cannot be read (no filesystem access). */
  readonly listDir?: (dir: string) => readonly string[] | undefined;
}

const DENO_OS: Record<string, string> = { windows: "win32" };
const DENO_ARCH: Record<string, string> = { x86_64: "x64", aarch64: "arm64" };

function readEnv(name: string): string | undefined {
  try {
    const v = g.process?.env?.[name];
    if (v !== undefined) return v;
  } catch {
    // Deno without --allow-env: treat as unset.
  }
  try {
    return g.Deno?.env?.get(name);
  } catch {
    return undefined;
  }
}

export function hostInfo(): HostInfo {
  const os = g.Deno?.build?.os;
  const arch = g.Deno?.build?.arch;
  return {
    platform: g.process?.platform ?? (os ? (DENO_OS[os] ?? os) : "unknown"),
    arch: g.process?.arch ?? (arch ? (DENO_ARCH[arch] ?? arch) : "unknown"),
    env: readEnv,
    listDir,
  };
}

function listDir(dir: string): readonly string[] | undefined {
  try {
    const fs = builtinModule<{ readdirSync(p: string): string[] }>("node:fs");
    if (fs) return fs.readdirSync(dir);
    const deno = g.Deno as { readDirSync?(p: string): Iterable<{ name: string }> } | undefined;
    return deno?.readDirSync ? [...deno.readDirSync(dir)].map((e) => e.name) : undefined;
  } catch {
    return undefined;
  }
}
