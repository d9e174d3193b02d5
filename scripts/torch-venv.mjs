#!/usr/bin/env node
// `npm run bench:torch`: PyTorch 2.13's CPU wheel in a venv the benchmarks find
// (~/.cache/backplane/torch-venv, or $BACKPLANE_CACHE_DIR/torch-venv). The wheel is installed
// with --no-deps; its dependencies come from Debian (a venv with --system-site-packages),
// except typing_extensions, which torch 2.13 needs newer than Debian 12's 4.4.
// Environment: TORCH_WHEEL=<path or requirement> (default "torch==2.13.*"); PIP_INDEX_URL as pip reads it.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";

// The same directory as the core's userCacheDir() on Linux (the benchmarks look there).
const base =
  process.env.BACKPLANE_CACHE_DIR ??
  `${process.env.XDG_CACHE_HOME ?? `${homedir()}/.cache`}/backplane`;
const venv = `${base}/torch-venv`;
const python = `${venv}/bin/python`;
const wheel = process.env.TORCH_WHEEL ?? "torch==2.13.*";
const DEBIAN = [
  "python3-venv",
  "python3-sympy",
  "python3-filelock",
  "python3-fsspec",
  "python3-jinja2",
  "python3-networkx",
  "python3-typing-extensions",
];

function run(cmd, args, opts = {}) {
  console.log(`$ ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { stdio: "inherit", ...opts });
  return r.status === 0;
}

const torchVersion = () => {
  const r = spawnSync(python, ["-c", "import torch; print(torch.__version__)"], {
    encoding: "utf8",
  });
  return r.status === 0 ? r.stdout.trim() : undefined;
};

if (existsSync(python) && torchVersion()?.startsWith("2.13")) {
  console.log(`torch ${torchVersion()} is ready: ${python}`);
  process.exit(0);
}
if (process.getuid?.() === 0 && existsSync("/usr/bin/apt-get")) {
  run("apt-get", ["install", "-y", "-q", ...DEBIAN], {
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
} else
  console.log(`(not root: make sure these Debian packages are installed: ${DEBIAN.join(" ")})`);
const ok =
  (existsSync(python) || run("/usr/bin/python3", ["-m", "venv", "--system-site-packages", venv])) &&
  run(python, ["-m", "pip", "install", "-q", "--no-deps", wheel]) &&
  run(python, ["-m", "pip", "install", "-q", "--upgrade", "--no-deps", "typing_extensions"]);
const version = ok ? torchVersion() : undefined;
if (!version) {
  console.error("could not install torch into the venv (see the output above)");
  process.exit(1);
}
console.log(`torch ${version} is ready: ${python}`);
