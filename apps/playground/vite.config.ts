/**
 * The playground resolves every @backplane package from its TypeScript sources (as the
 * repo's vitest.config.ts does), so `npm run playground` needs no build step. A backend
 * whose sources are missing from this checkout resolves to a stub that throws on import,
 * and the app shows "not available: <reason>" for it.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
// @ts-expect-error: a plain .mjs script without types
import { sourceEntries } from "../../scripts/workspaces.mjs";

const repo = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));

/** What threads need: SharedArrayBuffer exists only on cross-origin-isolated pages. */
export const ISOLATION_HEADERS = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
};

// Every workspace package's entries, from the one list (scripts/workspaces.mjs).
const PACKAGES = sourceEntries() as Record<string, string>;

const MISSING = "\0backplane-missing:";

export default defineConfig({
  resolve: {
    alias: Object.entries(PACKAGES).map(([name, file]) => ({
      find: new RegExp(`^${name.replace(/[/.-]/g, "\\$&")}$`),
      replacement: existsSync(repo(file)) ? repo(file) : `${MISSING}${name}`,
    })),
  },
  plugins: [
    {
      name: "backplane-missing-package",
      resolveId: (id) => (id.startsWith(MISSING) ? id : undefined),
      load: (id) =>
        id.startsWith(MISSING)
          ? `throw new Error(${JSON.stringify(`${id.slice(MISSING.length)} is not in this checkout (no sources at build time)`)});`
          : undefined,
    },
  ],
  server: { host: "127.0.0.1", port: 5173, headers: ISOLATION_HEADERS },
  preview: { host: "127.0.0.1", port: 4173, headers: ISOLATION_HEADERS },
  build: { target: "es2022", outDir: "dist", emptyOutDir: true, chunkSizeWarningLimit: 2000 },
  esbuild: { target: "es2022" },
  optimizeDeps: { esbuildOptions: { target: "es2022" } },
  worker: { format: "es" },
});
