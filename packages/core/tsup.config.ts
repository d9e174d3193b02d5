import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "ffi/index": "src/ffi/index.ts" },
  format: ["esm"],
  tsconfig: "tsconfig.build.json",
  // es2022 lowers `using` for Node 20, which has no native explicit resource management.
  target: "es2022",
  dts: { entry: { index: "src/index.ts", "ffi/index": "src/ffi/index.ts" } },
  clean: true,
  sourcemap: true,
  splitting: true,
  external: ["koffi", "bun:ffi"],
});
