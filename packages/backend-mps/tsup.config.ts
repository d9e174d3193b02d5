import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  tsconfig: "tsconfig.build.json",
  target: "es2022",
  dts: true,
  clean: true,
  sourcemap: true,
  external: ["@backplane/core", "koffi", "bun:ffi"],
});
