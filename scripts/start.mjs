#!/usr/bin/env node
// `npm start`: builds the packages quietly (turbo's output is shown only when the build
// fails), then prints the doctor report, so the report is the only thing on the screen.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const root = join(new URL(".", import.meta.url).pathname, "..");
const turbo = join(root, "node_modules", ".bin", "turbo");
const build = spawnSync(turbo, ["run", "build", "--output-logs=errors-only"], {
  cwd: root,
  encoding: "utf8",
  env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1" },
});
if (build.status !== 0) {
  process.stdout.write(build.stdout ?? "");
  process.stderr.write(build.stderr ?? "");
  console.error(`\nthe build failed (exit ${build.status}): the report needs the packages built`);
  process.exit(build.status ?? 1);
}
const info = spawnSync(
  process.execPath,
  [join(root, "packages/cli/dist/cli.js"), "info", ...process.argv.slice(2)],
  {
    cwd: root,
    stdio: "inherit",
  },
);
process.exit(info.status ?? 1);
