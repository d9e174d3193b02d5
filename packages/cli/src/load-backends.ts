/**
 * Imports every Backplane backend package that is installed, so each registers itself.
 * A package that is missing is a reason, not an error.
 */
import { ready } from "@backplane/core";
import { NAMESPACE_PACKAGES, readEnv } from "@backplane/core/backend";

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

/** Imports the known backend packages plus those named in BACKPLANE_BACKENDS (comma-separated). */
export async function loadInstalledBackends(): Promise<BackendLoad[]> {
  const extra = (readEnv("BACKPLANE_BACKENDS") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const out: BackendLoad[] = [];
  for (const packageName of [...KNOWN_BACKEND_PACKAGES, ...extra]) {
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
