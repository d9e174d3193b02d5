#!/usr/bin/env node
// The `backplane` command. A file that exists before the build, so npm links the bin in a
// fresh checkout (npm ci builds the packages afterwards); the command itself is dist/cli.js.
try {
  await import("../dist/cli.js");
} catch (e) {
  if (e?.code === "ERR_MODULE_NOT_FOUND" && String(e.message).includes("dist/cli.js")) {
    console.error("backplane: the CLI is not built yet; run `npm run build` in the repository");
    process.exit(2);
  }
  throw e;
}
