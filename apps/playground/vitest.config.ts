import { defineConfig } from "vitest/config";

// The browser test builds the app, serves dist/ with `vite preview` and drives Chromium.
export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ["test/**/*.test.ts"],
    testTimeout: 150_000,
    hookTimeout: 120_000,
  },
});
