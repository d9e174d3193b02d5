import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  tsconfig: "tsconfig.build.json",
  target: "es2022",
  // The public types name GPUDevice, GPUBuffer...: consumers get them from @webgpu/types.
  dts: { banner: '/// <reference types="@webgpu/types" />' },
  clean: true,
  sourcemap: true,
  external: ["@backplane/core", "webgpu"],
});
