import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
// @ts-expect-error: a plain .mjs script without types
import { sourceEntries } from "./scripts/workspaces.mjs";

// Tests run against the TypeScript sources, so every package shares one core instance.
// The aliases come from the workspaces (scripts/workspaces.mjs), longest specifier first.
const src = (p: string) => fileURLToPath(new URL(`./${p}`, import.meta.url));
const entries = sourceEntries() as Record<string, string>;

export default defineConfig({
  resolve: {
    alias: Object.entries(entries).map(([name, file]) => ({
      find: new RegExp(`^${name.replace(/[/.]/g, "\\$&")}$`),
      replacement: src(file),
    })),
  },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    testTimeout: 60_000,
  },
});
