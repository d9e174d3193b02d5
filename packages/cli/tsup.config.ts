import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", cli: "src/cli.ts" },
  format: ["esm"],
  tsconfig: "tsconfig.build.json",
  target: "es2022",
  dts: { entry: { index: "src/index.ts" } },
  clean: true,
  sourcemap: true,
  banner: { js: "" },
  external: ["@backplane/core", "@backplane/testkit", "@backplane/bench", /^@backplane\/backend-/],
});
