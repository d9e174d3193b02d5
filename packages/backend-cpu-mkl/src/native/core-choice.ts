/**
 * Choosing OpenBLAS's core by measurement (see openblas-core.ts for why). For each
 * candidate core: a private copy of the library file (a second dlopen of the same file
 * would return the instance already loaded) in the user's cache directory, loaded with
 * OPENBLAS_CORETYPE set through libc's setenv (Bun's process.env does not reach getenv),
 * then a one-thread sgemm timed on it and on the core OpenBLAS chose. The fastest wins;
 * the choice is cached per library file and CPU, so a later start loads it directly.
 */
import { backends } from "@backplane/core";
import { builtinModule, readCacheFile, userCacheDir, writeCacheFile } from "@backplane/core/cpu";
import { cstr, type Libc, libc } from "./libc.ts";
import { type CoreCheck, checkCore } from "./openblas-core.ts";

interface Fs {
  statSync(p: string): { size: number; mtimeMs: number };
  realpathSync(p: string): string;
  existsSync(p: string): boolean;
  mkdirSync(p: string, o: { recursive: boolean }): void;
  copyFileSync(from: string, to: string): void;
  renameSync(from: string, to: string): void;
}

/** What each sgemm-capable instance needs for the timing. */
export interface GemmSymbols {
  cblas_sgemm(...args: never[]): void;
  openblas_set_num_threads?(n: number): void;
  openblas_get_corename?(): string | null;
}

export interface CoreChoice<L> {
  check: CoreCheck;
  /** The core in use after the choice. */
  core: string;
  /** The instance to use (the one loaded first, or a copy with a better core). */
  lib: L;
  path: string;
  /** GFLOP/s of a one-thread sgemm 256 per core, when measured. */
  measured: Record<string, number>;
  /** "measured", "cache" (an earlier measurement), or why nothing was tried. */
  how: string;
}

/** How fast an instance is, in GFLOP/s (the higher the better). */
export type MeasureGemm = (s: GemmSymbols) => number;

/** One-thread sgemm 256, best of 5, in GFLOP/s. */
function gflops(s: GemmSymbols): number {
  const n = 256;
  const a = new Float32Array(n * n).map((_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
  const b = a.slice().reverse();
  const c = new Float32Array(n * n);
  s.openblas_set_num_threads?.(1);
  const run = () =>
    (s.cblas_sgemm as (...x: unknown[]) => void)(101, 111, 111, n, n, n, 1, a, n, b, n, 0, c, n);
  run();
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    run();
    best = Math.min(best, performance.now() - t0);
  }
  return (2 * n * n * n) / (best * 1e6);
}

/** The process environment as C code sees it (getenv), through libc. */
export async function cEnv(): Promise<
  | {
      get(name: string): string | null;
      set(name: string, v: string): void;
      unset(name: string): void;
    }
  | undefined
> {
  const c = await libc();
  return (
    c && {
      get: (name) => c.getenv(cstr(name)),
      set: (name, v) => void c.setenv(cstr(name), cstr(v), 1),
      unset: (name) => void c.unsetenv(cstr(name)),
    }
  );
}

/** Loads a private copy of the library at `path` with OPENBLAS_CORETYPE=core. */
export async function loadCopyWithCore<L>(
  path: string,
  core: string,
  open: (path: string) => Promise<L | undefined>,
): Promise<{ lib: L; path: string } | undefined> {
  const c = await libc();
  const fs = builtinModule<Fs>("node:fs");
  const copy = c && fs && copyFor(fs, path, core);
  if (!c || !copy) return undefined;
  const lib = await loadWithCore(c, copy, core, open);
  return lib && { lib, path: copy };
}

/** A private copy of `path` for `core`, made once per library file. */
function copyFor(fs: Fs, path: string, core: string): string | undefined {
  const dir = userCacheDir();
  if (!dir) return undefined;
  const real = fs.realpathSync(path);
  const st = fs.statSync(real);
  const base = real.slice(real.lastIndexOf("/") + 1);
  const folder = `${dir}/openblas/${core}-${st.size}-${Math.round(st.mtimeMs)}`;
  const copy = `${folder}/${base}`;
  if (fs.existsSync(copy)) return copy;
  fs.mkdirSync(folder, { recursive: true });
  const tmp = `${copy}.${Math.random().toString(36).slice(2)}.tmp`;
  fs.copyFileSync(real, tmp);
  fs.renameSync(tmp, copy);
  return copy;
}

/** Loads `path` with OPENBLAS_CORETYPE=core, restoring the variable after. */
async function loadWithCore<L>(
  c: Libc,
  path: string,
  core: string,
  open: (path: string) => Promise<L | undefined>,
): Promise<L | undefined> {
  const name = cstr("OPENBLAS_CORETYPE");
  c.setenv(name, cstr(core), 1);
  try {
    return await open(path);
  } finally {
    c.unsetenv(name);
  }
}

const CACHE = "openblas-core-v1.json";
type Cached = Record<string, { core: string; measured: Record<string, number> }>;

/**
 * The best core for the OpenBLAS loaded from `path` (symbols `lib`): the same instance when
 * its core is right for the CPU (or the user set OPENBLAS_CORETYPE), else the fastest of
 * it and copies loaded with better cores. `open` loads a path as the caller's library type;
 * `measure` rates an instance (tests pass fixed figures, which no load on the machine changes).
 */
export async function chooseCore<L extends { symbols: GemmSymbols }>(
  path: string,
  lib: L,
  open: (path: string) => Promise<L | undefined>,
  measure: MeasureGemm = gflops,
): Promise<CoreChoice<L>> {
  const loaded = lib.symbols.openblas_get_corename?.() ?? "";
  const features = backends.cpu.getCpuCapabilityInfo().features;
  const check = checkCore(loaded, features);
  const keep = (how: string): CoreChoice<L> => ({
    check,
    core: loaded,
    lib,
    path,
    measured: {},
    how,
  });
  const c = await libc();
  const fs = builtinModule<Fs>("node:fs");
  if (!c || !fs) return keep("no libc or file system to load a second copy with");
  if (c.getenv(cstr("OPENBLAS_CORETYPE"))) return keep("OPENBLAS_CORETYPE is set by the user");
  if (!check.belowCpu) return keep("the core OpenBLAS chose matches the CPU");
  try {
    return await measureCores(fs, c, path, lib, loaded, check, open, measure);
  } catch (e) {
    return keep(`could not try other cores: ${(e as Error).message}`);
  }
}

// Long: the cache lookup, then each candidate core loaded from its copy and timed against the core OpenBLAS chose.
async function measureCores<L extends { symbols: GemmSymbols }>(
  fs: Fs,
  c: Libc,
  path: string,
  lib: L,
  loaded: string,
  check: CoreCheck,
  open: (path: string) => Promise<L | undefined>,
  measure: MeasureGemm,
): Promise<CoreChoice<L>> {
  const cpu = backends.cpu.getCpuCapabilityInfo();
  const real = fs.realpathSync(path);
  const st = fs.statSync(real);
  const key = `${real}|${st.size}|${Math.round(st.mtimeMs)}|${cpu.model}|${cpu.features.join(" ")}`;
  const cache = (readCacheFile(CACHE) as Cached | undefined) ?? {};
  const hit = cache[key];
  if (hit && hit.core === loaded)
    return { check, core: loaded, lib, path, measured: hit.measured, how: "cache" };
  const measured: Record<string, number> = {};
  let best = { core: loaded, lib, path, gf: 0 };
  const tryCore = async (core: string, known?: number): Promise<void> => {
    const copy = copyFor(fs, path, core);
    const other = copy && (await loadWithCore(c, copy, core, open));
    if (!other || !copy) return;
    // A core the library cannot run on this CPU is refused by OpenBLAS: it keeps its own.
    if (other.symbols.openblas_get_corename?.()?.toLowerCase() !== core.toLowerCase()) return;
    const gf = known ?? measure(other.symbols);
    measured[core] = gf;
    if (gf > best.gf) best = { core, lib: other, path: copy, gf };
  };
  if (hit) {
    await tryCore(hit.core, hit.measured[hit.core] ?? 1);
    if (best.core === hit.core)
      return {
        check,
        core: hit.core,
        lib: best.lib,
        path: best.path,
        measured: hit.measured,
        how: "cache",
      };
  }
  measured[loaded] = measure(lib.symbols);
  best.gf = measured[loaded];
  for (const core of check.candidates) await tryCore(core);
  cache[key] = { core: best.core, measured };
  writeCacheFile(CACHE, cache);
  return { check, core: best.core, lib: best.lib, path: best.path, measured, how: "measured" };
}
