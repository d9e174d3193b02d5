/**
 * Imports each backend package on its own, so a package that fails to load (or is not in
 * this checkout) is a reason on screen, never a broken page.
 */
import { ready } from "@backplane/core";

export interface PackageLoad {
  packageName: string;
  loaded: boolean;
  reason?: string;
}

// Literal specifiers, so Vite bundles each package (and emits its .wasm files).
const IMPORTS: [string, () => Promise<unknown>][] = [
  ["@backplane/backend-cpu-mkl", () => import("@backplane/backend-cpu-mkl")],
  ["@backplane/backend-openmp", () => import("@backplane/backend-openmp")],
  ["@backplane/backend-opt-einsum", () => import("@backplane/backend-opt-einsum")],
  ["@backplane/backend-nnpack", () => import("@backplane/backend-nnpack")],
  ["@backplane/backend-webgpu", () => import("@backplane/backend-webgpu")],
];

export const loads: PackageLoad[] = [];

export async function loadBackends(readyTimeoutMs = 15_000): Promise<PackageLoad[]> {
  for (const [packageName, load] of IMPORTS) {
    try {
      await load();
      loads.push({ packageName, loaded: true });
    } catch (e) {
      loads.push({ packageName, loaded: false, reason: (e as Error).message });
    }
  }
  // WASM modules, worker threads and the GPU adapter initialise asynchronously.
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    ready().catch(() => {}),
    new Promise((r) => {
      timer = setTimeout(r, readyTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  return loads;
}

export function loaded(packageName: string): PackageLoad | undefined {
  return loads.find((l) => l.packageName === packageName);
}
