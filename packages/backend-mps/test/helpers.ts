/**
 * The CPU stand-in helper for the tests: the package's C sources with bp_mps_cpu.c in
 * place of the Metal file, built by this machine's cc once per source hash into the temp
 * directory, and loaded through the real FFI path of the runtime running the tests.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readEnv } from "@backplane/core/cpu";
// @ts-expect-error: a plain .mjs build script, untyped
import { buildStandin, STANDIN_SOURCES } from "../scripts/build-helper.mjs";

const nativeDir = join(dirname(fileURLToPath(import.meta.url)), "..", "native");

/** .ci/run sets this: a machine without a C compiler fails instead of skipping. */
export const EXPECT_STANDIN = readEnv("BACKPLANE_EXPECT_MPS_STANDIN") === "1";

function sourceHash(): string {
  const h = createHash("sha256");
  for (const f of [...(STANDIN_SOURCES as string[]), "bp_mps.h", "bp_mps_impl.h"])
    h.update(readFileSync(join(nativeDir, f)));
  return h.digest("hex").slice(0, 16);
}

let built: { path?: string; reason?: string } | undefined;

/** The stand-in's path, built on first use, or why it cannot be built here. */
export function standin(): { path?: string; reason?: string } {
  if (built) return built;
  if (spawnSync("cc", ["--version"], { stdio: "ignore" }).status !== 0) {
    built = { reason: "no C compiler (cc) to build the CPU stand-in helper" };
  } else {
    const path = join(tmpdir(), `backplane-mps-standin-${sourceHash()}`, "libbackplane_mps.so");
    try {
      if (!existsSync(path)) buildStandin(path);
      built = { path };
    } catch (e) {
      built = { reason: `building the CPU stand-in failed: ${(e as Error).message}` };
    }
  }
  if (!built.path && EXPECT_STANDIN)
    throw new Error(`BACKPLANE_EXPECT_MPS_STANDIN=1 but ${built.reason}`);
  if (!built.path)
    console.log(
      `[backend-mps] stand-in tests skipped: ${built.reason}; install a C compiler (apt-get install gcc)`,
    );
  return built;
}
