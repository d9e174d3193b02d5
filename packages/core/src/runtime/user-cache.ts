/**
 * A small JSON file per purpose in the user's cache directory (kernel calibration...):
 * BACKPLANE_CACHE_DIR, else $XDG_CACHE_HOME/backplane or ~/.cache/backplane on Linux,
 * ~/Library/Caches/backplane on macOS, %LOCALAPPDATA%\backplane on Windows. Where there is
 * no file system (browsers) nothing is stored. Never throws: a cache that cannot be read
 * or written is simply empty.
 */
import { readEnv, runtime } from "./detect.ts";
import { builtinModule } from "./host.ts";

interface FsLike {
  readFileSync(path: string, encoding: "utf8"): string;
  writeFileSync(path: string, data: string): void;
  mkdirSync(path: string, opts: { recursive: boolean }): void;
  renameSync(from: string, to: string): void;
}

/** The directory, or undefined where there is none (a browser, no HOME). */
export function userCacheDir(): string | undefined {
  const own = readEnv("BACKPLANE_CACHE_DIR");
  if (own) return own;
  const platform = runtime().platform;
  if (platform === "win32" || platform === "windows") {
    const local = readEnv("LOCALAPPDATA");
    return local ? `${local}\\backplane` : undefined;
  }
  const home = readEnv("HOME");
  if (platform === "darwin") return home ? `${home}/Library/Caches/backplane` : undefined;
  const xdg = readEnv("XDG_CACHE_HOME");
  if (xdg) return `${xdg}/backplane`;
  return home ? `${home}/.cache/backplane` : undefined;
}

const fs = (): FsLike | undefined => builtinModule<FsLike>("node:fs");

/** The parsed file `name` of the cache directory, or undefined. */
export function readCacheFile(name: string): unknown {
  const dir = userCacheDir();
  const f = fs();
  if (!dir || !f) return undefined;
  try {
    return JSON.parse(f.readFileSync(`${dir}/${name}`, "utf8"));
  } catch {
    return undefined;
  }
}

/** Writes `value` as JSON (to a temporary file first, so readers never see half of it). */
export function writeCacheFile(name: string, value: unknown): boolean {
  const dir = userCacheDir();
  const f = fs();
  if (!dir || !f) return false;
  try {
    f.mkdirSync(dir, { recursive: true });
    const tmp = `${dir}/${name}.${Math.random().toString(36).slice(2)}.tmp`;
    f.writeFileSync(tmp, JSON.stringify(value));
    f.renameSync(tmp, `${dir}/${name}`);
    return true;
  } catch {
    return false;
  }
}
