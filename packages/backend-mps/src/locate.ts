/**
 * Where the helper is: BACKPLANE_MPS_HELPER (a build of your own, or the tests' CPU
 * stand-in), else the prebuilt Mach-O for this Mac's architecture that the package ships
 * in prebuilt/darwin-{arm64,x64}. From a remote module (JSR over https) the helper is
 * fetched once into the user's cache and checked against prebuilt/manifest.json's sha256.
 */
import { builtinModule, hostInfo } from "@backplane/core/cpu";

export const HELPER_ENV = "BACKPLANE_MPS_HELPER";
export const MAC_PLATFORMS = ["darwin-arm64", "darwin-x64"] as const;
const FILE = "libbackplane_mps.dylib";

type Fs = {
  existsSync(p: string): boolean;
  readFileSync(p: string, enc?: "utf8"): string | Uint8Array;
  writeFileSync(p: string, data: Uint8Array): void;
  mkdirSync(p: string, o: { recursive: boolean }): void;
};

/** A prebuilt helper's location (a file URL where the package is on disk). */
function prebuiltUrl(platform: string): URL {
  return new URL(`../prebuilt/${platform}/${FILE}`, import.meta.url);
}

/** Whether the package holds both Mac helpers (isBuilt). */
export function shippedHelpers(): { built: boolean; reason?: string } {
  const fs = builtinModule<Fs>("node:fs");
  const base = new URL(import.meta.url);
  if (base.protocol !== "file:") return { built: true }; // a registry copy: JSR ships prebuilt/
  if (!fs)
    return {
      built: false,
      reason: "no filesystem access here: the MPS helper loads through FFI on Bun, Deno or Node",
    };
  const missing = MAC_PLATFORMS.filter(
    (p) => !fs.existsSync(decodeURIComponent(prebuiltUrl(p).pathname)),
  );
  return missing.length
    ? { built: false, reason: `the package lacks its prebuilt helper for ${missing.join(", ")}` }
    : { built: true };
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", bytes as BufferSource);
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Copies a remote helper into the cache once, checking its hash; returns the file path. */
async function cached(platform: string): Promise<string> {
  const fs = builtinModule<Fs>("node:fs");
  const home = hostInfo().env("HOME");
  if (!fs || !home) throw new Error("no filesystem or HOME to cache the MPS helper in");
  const manifestUrl = new URL("../prebuilt/manifest.json", import.meta.url);
  const manifest = (await (await fetch(manifestUrl)).json()) as {
    helpers: Record<string, { sha256: string }>;
  };
  const want = manifest.helpers[platform]?.sha256;
  if (!want) throw new Error(`prebuilt/manifest.json has no helper for ${platform}`);
  const dir = `${home}/Library/Caches/backplane/mps/${want}`;
  const path = `${dir}/${FILE}`;
  if (fs.existsSync(path)) return path;
  const bytes = new Uint8Array(await (await fetch(prebuiltUrl(platform))).arrayBuffer());
  const got = await sha256(bytes);
  if (got !== want) throw new Error(`the fetched MPS helper's sha256 is ${got}, expected ${want}`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path, bytes);
  return path;
}

/** The helper to open, or why there is none for this machine (never throws). */
export async function helperPath(): Promise<{ path?: string; reason?: string }> {
  const host = hostInfo();
  const own = host.env(HELPER_ENV);
  if (own) return { path: own };
  const platform = `${host.platform}-${host.arch}`;
  if (host.platform !== "darwin")
    return {
      reason: `MPS needs macOS 12.3+ on Apple silicon or an AMD GPU; this is ${platform}`,
    };
  if (!(MAC_PLATFORMS as readonly string[]).includes(platform))
    return { reason: `no MPS helper is built for ${platform}` };
  const url = prebuiltUrl(platform);
  if (url.protocol === "file:") return { path: decodeURIComponent(url.pathname) };
  try {
    return { path: await cached(platform) };
  } catch (e) {
    return { reason: `could not fetch the MPS helper: ${(e as Error).message}` };
  }
}
