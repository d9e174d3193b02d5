/**
 * The PTX shipped in the package (ptx/, built from kernels/ by scripts/build-kernels.mjs):
 * where it is, whether it is all there (isBuilt), and each module's image for cuModuleLoadData.
 */

export interface PtxModuleEntry {
  source: string;
  /** Virtual architecture the PTX targets ("compute_75"): it JIT-compiles for that and newer GPUs. */
  arch: string;
  sourceSha256: string;
  ptxSha256: string;
  functions: string[];
}

export interface PtxManifest {
  nvcc: string;
  assembledFor: string[];
  headers: string[];
  modules: Record<string, PtxModuleEntry>;
}

type Fs = typeof import("node:fs");
let fs: Fs | null = null;
try {
  const specifier = "node:fs";
  fs = (await import(specifier)) as Fs;
} catch {
  fs = null; // no filesystem (a browser): nothing to load PTX from
}

/** The package's ptx/ directory (src/ and dist/ are both one level below the package root). */
export const PTX_DIR = new URL("../ptx/", import.meta.url);

function read(url: URL): Uint8Array | undefined {
  if (!fs) return undefined;
  try {
    return fs.readFileSync(url);
  } catch {
    return undefined;
  }
}

let manifest: PtxManifest | string | undefined;

/** The manifest, or why it cannot be read. */
export function ptxManifest(): PtxManifest | string {
  if (manifest !== undefined) return manifest;
  if (!fs) return (manifest = "no filesystem to read the package's PTX from");
  const bytes = read(new URL("manifest.json", PTX_DIR));
  if (!bytes) return (manifest = `ptx/manifest.json is missing (${PTX_DIR.pathname})`);
  try {
    manifest = JSON.parse(new TextDecoder().decode(bytes)) as PtxManifest;
  } catch (e) {
    manifest = `ptx/manifest.json is not valid JSON: ${(e as Error).message}`;
  }
  return manifest;
}

/** `{ built: true }` when the manifest and every PTX file it lists are present. */
export function ptxStatus(): { built: boolean; reason?: string; modules: string[] } {
  const m = ptxManifest();
  if (typeof m === "string") return { built: false, reason: m, modules: [] };
  const missing = Object.keys(m.modules).filter(
    (name) => !fs?.existsSync(new URL(`${name}.ptx`, PTX_DIR)),
  );
  if (missing.length > 0)
    return {
      built: false,
      reason: `PTX missing from the package: ${missing.map((n) => `ptx/${n}.ptx`).join(", ")} (run npm run build:kernels)`,
      modules: Object.keys(m.modules),
    };
  return { built: true, modules: Object.keys(m.modules) };
}

const images = new Map<string, Uint8Array>();

/** A module's PTX, NUL-terminated for cuModuleLoadData. */
export function ptxImage(name: string): Uint8Array {
  let img = images.get(name);
  if (img) return img;
  const bytes = read(new URL(`${name}.ptx`, PTX_DIR));
  if (!bytes) throw new Error(`ptx/${name}.ptx is missing from @backplane/backend-cuda`);
  img = new Uint8Array(bytes.byteLength + 1);
  img.set(bytes);
  images.set(name, img);
  return img;
}

/** Which module holds a kernel (from the manifest). */
export function moduleOf(kernel: string): string | undefined {
  const m = ptxManifest();
  if (typeof m === "string") return undefined;
  return Object.entries(m.modules).find(([, e]) => e.functions.includes(kernel))?.[0];
}
