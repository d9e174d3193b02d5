import { defineConfig } from "tsup";

// Three entries: the user API, the backend contract and the CPU toolkit
// (scripts/workspaces.mjs maps dist/<entry>.js back to src/<entry>.ts for tests and type checks).
const entry = { index: "src/index.ts", backend: "src/backend.ts", cpu: "src/cpu.ts" };

export default defineConfig({
  entry,
  format: ["esm"],
  tsconfig: "tsconfig.build.json",
  // es2022 lowers `using` for Node 20, which has no native explicit resource management.
  target: "es2022",
  dts: { entry },
  clean: true,
  sourcemap: true,
  splitting: true,
  external: ["koffi", "bun:ffi"],
});
