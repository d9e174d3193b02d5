import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Tests run against the TypeScript sources, so every package shares one core instance.
const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@backplane\/core\/ffi$/, replacement: src("./packages/core/src/ffi/index.ts") },
      { find: /^@backplane\/core$/, replacement: src("./packages/core/src/index.ts") },
      { find: /^@backplane\/testkit$/, replacement: src("./packages/testkit/src/index.ts") },
      { find: "@backplane/backend-cuda", replacement: src("./packages/backend-cuda/src/index.ts") },
      {
        find: /^@backplane\/backend-webgpu$/,
        replacement: src("./packages/backend-webgpu/src/index.ts"),
      },
      {
        find: /^@backplane\/backend-nnpack$/,
        replacement: src("./packages/backend-nnpack/src/index.ts"),
      },
      {
        find: /^@backplane\/backend-cpu-mkl$/,
        replacement: src("./packages/backend-cpu-mkl/src/index.ts"),
      },
      {
        find: /^@backplane\/backend-opt-einsum$/,
        replacement: src("./packages/backend-opt-einsum/src/index.ts"),
      },
      {
        find: /^@backplane\/backend-openmp$/,
        replacement: src("./packages/backend-openmp/src/index.ts"),
      },
      {
        find: /^@backplane\/bench$/,
        replacement: src("./packages/bench/src/index.ts"),
      },
    ],
  },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    testTimeout: 60_000,
  },
});
