import { defineConfig } from "tsup";

export default defineConfig({
  // The expression set is its own entry: the tests and @backplane/bench share it.
  entry: ["src/index.ts", "src/expressions.ts"],
  format: ["esm"],
  tsconfig: "tsconfig.build.json",
  target: "es2022",
  dts: true,
  clean: true,
  sourcemap: true,
  external: ["@backplane/core"],
});
