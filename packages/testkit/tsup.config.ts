import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/c-header.ts", "src/plain-memory.ts", "src/abi.ts"],
  format: ["esm"],
  tsconfig: "tsconfig.build.json",
  target: "es2022",
  dts: true,
  clean: true,
  sourcemap: true,
  external: ["@backplane/core"],
});
