#!/usr/bin/env node
// The packages as a user gets them: `npm pack` core and three backends, install the
// tarballs into a fresh project outside the workspace, and run one script that imports
// them and checks matmul, conv2d and SDPA against known values, on Node, Bun and Deno.
// Then the same checks in a page built by Vite from that project, served with and without
// the COOP/COEP headers and opened in headless Chromium (vite-page.mjs). Needs the
// packages built. Exit 1 when a runtime fails.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const repo = join(new URL(".", import.meta.url).pathname, "..");
const PACKAGES = ["core", "testkit", "cli", "backend-cpu-mkl", "backend-openmp", "backend-nnpack"];
const dir = mkdtempSync(join(tmpdir(), "backplane-consumer-"));
const tarballs = join(dir, "tarballs");
mkdirSync(tarballs);

// One check module, shared by the runtimes (run.mjs) and the page (vite-page.mjs): it
// loads the backends itself, so a page can set the .wasm location before they load.
const CHECK = `
export async function check() {
  const { backends, conv2d, matmul, ready, runtime, scaledDotProductAttention, tensor } =
    await import("@backplane/core");
  await import("@backplane/backend-cpu-mkl");
  await import("@backplane/backend-openmp");
  await import("@backplane/backend-nnpack");
  await ready();
  const flat = (t) => t.toArray().flat(9);
  const close = (got, want, what) => {
    if (got.length !== want.length || got.some((g, i) => Math.abs(g - want[i]) > 1e-5))
      throw new Error(what + ": got " + JSON.stringify(got) + ", want " + JSON.stringify(want));
  };
  const { calls } = backends.record(() => {
    close(flat(matmul(tensor([[1, 2], [3, 4]]), tensor([[5, 6], [7, 8]]))), [19, 22, 43, 50], "matmul");
    const x = tensor(Array.from({ length: 16 }, (_, i) => i), { shape: [1, 1, 4, 4] });
    const w = tensor([1, 0, 0, 1], { shape: [1, 1, 2, 2] }); // x[i][j] + x[i+1][j+1]
    close(flat(conv2d(x, w)), [5, 7, 9, 13, 15, 17, 21, 23, 25], "conv2d");
    // Equal keys: every weight is 1/3, so each output row is the mean of v's rows.
    const q = tensor([[[0.5, -1]]]);
    const k = tensor([[[1, 2], [1, 2], [1, 2]]]);
    const v = tensor([[[1, 10], [2, 20], [6, 30]]]);
    close(flat(scaledDotProductAttention(q, k, v)), [3, 20], "sdpa");
  });
  return {
    result: "ok " + runtime().name + ": " + calls.map((c) => c.op + "=" + c.kernel).join(", ") +
      ", mkl.status: " + (backends.mkl.status().reason ?? "available"),
    openmp: backends.openmp.isAvailable() ? "available" : backends.openmp.status().reason,
  };
}
`;
const RUN = `import { check } from "./check.mjs";
const { result, openmp } = await check();
console.log(result + "; openmp: " + openmp);
`;

try {
  for (const p of PACKAGES)
    execFileSync("npm", ["pack", "--silent", "--pack-destination", tarballs], {
      cwd: join(repo, "packages", p),
      stdio: ["ignore", "ignore", "inherit"],
    });
  const deps = Object.fromEntries(
    readdirSync(tarballs).map((f) => [
      `@backplane/${f.replace(/^backplane-/, "").replace(/-\d+\.\d+\.\d+\.tgz$/, "")}`,
      `file:./tarballs/${f}`,
    ]),
  );
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify(
      { name: "consumer", private: true, type: "module", dependencies: deps },
      null,
      2,
    ),
  );
  writeFileSync(join(dir, "check.mjs"), CHECK);
  writeFileSync(join(dir, "run.mjs"), RUN);
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--silent"], {
    cwd: dir,
    stdio: "inherit",
  });
  const bin = (tool) => join(repo, "node_modules", ".bin", tool);
  let failed = 0;
  for (const [name, cmd, args] of [
    ["node", process.execPath, ["run.mjs"]],
    ["bun", bin("bun"), ["run.mjs"]],
    ["deno", bin("deno"), ["run", "-A", "run.mjs"]],
  ]) {
    const r = spawnSync(cmd, args, { cwd: dir, encoding: "utf8" });
    const line = r.stdout.trim().split("\n").pop() ?? "";
    if (r.status === 0 && line.startsWith(`ok ${name}`)) console.log(line);
    else {
      failed++;
      console.log(`FAIL ${name} (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
    }
  }
  // The CLI as a user installs it: its bin runs from the consumer project.
  const cli = spawnSync(
    join(dir, "node_modules", ".bin", "backplane"),
    ["explain", "matmul", "--shapes", "4x3,3x2"],
    {
      cwd: dir,
      encoding: "utf8",
    },
  );
  if (cli.status === 0 && /matmul: runs /.test(cli.stdout))
    console.log(`ok backplane (installed bin): ${cli.stdout.split("\n")[0]}`);
  else {
    failed++;
    console.log(
      `FAIL backplane (installed bin), exit ${cli.status}:\n${cli.stdout}\n${cli.stderr}`,
    );
  }
  const { checkVitePage } = await import("./vite-page.mjs");
  failed += await checkVitePage(dir);
  process.exitCode = failed ? 1 : 0;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
