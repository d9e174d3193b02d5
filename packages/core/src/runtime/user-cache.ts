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
  unlinkSync(path: string): void;
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
  // The XDG spec: a relative path is invalid and ignored (it would follow the working directory).
  const xdg = readEnv("XDG_CACHE_HOME");
  if (xdg?.startsWith("/")) return `${xdg}/backplane`;
  return home ? `${home}/.cache/backplane` : undefined;
}

const fs = (): FsLike | undefined => builtinModule<FsLike>("node:fs");

/**
 * The parsed file `name` of the cache directory, or undefined. `onProblem` hears why a file
 * that exists could not be used (unreadable, not JSON); a missing file is no problem.
 */
export function readCacheFile(name: string, onProblem?: (why: string) => void): unknown {
  const dir = userCacheDir();
  const f = fs();
  if (!dir || !f) return undefined;
  let text: string;
  try {
    text = f.readFileSync(`${dir}/${name}`, "utf8");
  } catch (e) {
    if ((e as { code?: unknown } | null)?.code !== "ENOENT")
      onProblem?.(`${dir}/${name} cannot be read (${(e as Error)?.message ?? String(e)})`);
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    onProblem?.(`${dir}/${name} is not valid JSON (empty, truncated or corrupted)`);
    return undefined;
  }
}

/** Writes `value` as JSON (to a temporary file first, so readers never see half of it). */
export function writeCacheFile(name: string, value: unknown): boolean {
  const dir = userCacheDir();
  const f = fs();
  if (!dir || !f) return false;
  const tmp = `${dir}/${name}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    f.mkdirSync(dir, { recursive: true });
    f.writeFileSync(tmp, JSON.stringify(value));
    f.renameSync(tmp, `${dir}/${name}`);
    return true;
  } catch {
    // A rename that failed (the name is a directory) must not leave a file per start behind.
    try {
      f.unlinkSync(tmp);
    } catch {
      // never written
    }
    return false;
  }
}
