/**
 * backends.cudnn.status().detail: where libcudnn is not found, the search report (every path
 * tried) reaches the namespace's status. Run in a Node child without PYTHONPATH and with
 * BACKPLANE_CUDNN_PATH at a missing file, so the pip wheels CI installs are out of reach.
 */
import { builtinModule } from "@backplane/core/cpu";
import { describe, expect, it } from "vitest";

const cp =
  "Bun" in globalThis || "Deno" in globalThis
    ? undefined
    : builtinModule<typeof import("node:child_process")>("node:child_process");
const itNode = cp ? it : it.skip;

const MISSING = "/nonexistent/backplane-test/libcudnn.so.9";

describe("backends.cudnn.status() without the library", () => {
  itNode("says why in reason and lists the paths tried in detail", () => {
    const index = new URL("../src/index.ts", import.meta.url).href;
    const script = `import { backends } from "@backplane/core"; await import(${JSON.stringify(index)}); const s = backends.cudnn.status(); console.log(JSON.stringify({ reason: s.reason, detail: s.detail }));`;
    const env: Record<string, string | undefined> = {
      ...process.env,
      BACKPLANE_CUDNN_PATH: MISSING,
    };
    delete env.PYTHONPATH;
    delete env.VIRTUAL_ENV;
    delete env.CONDA_PREFIX;
    const r = cp!.spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { encoding: "utf8", env, timeout: 60_000 },
    );
    expect(r.status, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as {
      reason: string;
      detail?: string;
    };
    // A system-wide cuDNN would be found after the missing path: nothing to check then.
    if (!s.reason.startsWith("libcudnn")) return;
    expect(s.reason).toMatch(/^libcudnn\.so\.9 not found: cuDNN is not installed/);
    expect(s.detail).toContain("not found (tried: ");
    expect(s.detail).toContain(MISSING);
  });
});
