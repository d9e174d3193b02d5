/**
 * Imports every Backplane backend package that is installed, so each registers itself.
 * A package that is missing is a reason, not an error.
 */
import { ready } from "@backplane/core";
import { NAMESPACE_PACKAGES } from "@backplane/core/backend";
import { readEnv } from "@backplane/core/cpu";

export interface BackendLoad {
  packageName: string;
  loaded: boolean;
  reason?: string;
}

export const KNOWN_BACKEND_PACKAGES: string[] = [
  ...new Set([
    "@backplane/backend-cpu-mkl",
    "@backplane/backend-openmp",
    "@backplane/backend-opt-einsum",
    "@backplane/backend-nnpack",
    "@backplane/backend-webgpu",
    "@backplane/backend-cuda",
    "@backplane/backend-cudnn",
    "@backplane/backend-mps",
    ...Object.values(NAMESPACE_PACKAGES).filter((p): p is string => p !== null),
  ]),
];

/** Backends of GPU devices: opening their drivers prints driver noise and takes time. */
const GPU_PACKAGES = new Set([
  "@backplane/backend-webgpu",
  "@backplane/backend-cuda",
  "@backplane/backend-cudnn",
  "@backplane/backend-mps",
]);

/**
 * Imports the known backend packages plus those named in BACKPLANE_BACKENDS
 * (comma-separated). `gpu: false` leaves out the GPU backends, for commands that only
 * run CPU work (no driver is opened, so nothing prints Vulkan or Dawn warnings).
 */
export async function loadInstalledBackends(opts: { gpu?: boolean } = {}): Promise<BackendLoad[]> {
  const extra = (readEnv("BACKPLANE_BACKENDS") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const out: BackendLoad[] = [];
  // Once each: a package named again (or already known) would be listed twice in the report.
  for (const packageName of new Set([...KNOWN_BACKEND_PACKAGES, ...extra])) {
    if (opts.gpu === false && GPU_PACKAGES.has(packageName)) continue;
    try {
      await import(/* @vite-ignore */ packageName);
      out.push({ packageName, loaded: true });
    } catch (e) {
      const err = e as { code?: string; message?: string };
      const missing =
        err.code === "ERR_MODULE_NOT_FOUND" ||
        /Cannot find (module|package)|not found|Could not resolve/i.test(err.message ?? "");
      out.push({
        packageName,
        loaded: false,
        reason:
          missing && (err.message ?? "").includes(packageName)
            ? "not installed"
            : `failed to load: ${err.message}`,
      });
    }
  }
  // Backends with asynchronous initialisation (native libraries, GPU adapters) finish here.
  await ready().catch(() => {});
  return out;
}
