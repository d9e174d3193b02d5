#!/usr/bin/env bash
# Fills .gpu/ (git-ignored) with what a GPU machine without a package registry lacks: Deno's
# binary (xz), Debian's Vulkan loader and glvnd, and the vitest shim bundled for Deno. Carry
# .gpu beside the checkout and run scripts/gpu-check/run.sh there (docs/gpu-check.md).
# Run from the repository root after `npm ci`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mkdir -p .gpu
deno=node_modules/deno/deno
[ -x "$deno" ] || { echo "pack: $deno is missing; run npm ci first" >&2; exit 1; }
if [ ! -f .gpu/deno.xz ] || [ "$deno" -nt .gpu/deno.xz ]; then
  xz -T0 -6 -c "$deno" >.gpu/deno.xz.tmp && mv .gpu/deno.xz.tmp .gpu/deno.xz
fi
# The Vulkan loader (libvulkan.so.1) and glvnd (libGLX_nvidia, NVIDIA's Vulkan ICD, needs
# libGLdispatch): NVIDIA's driver ships the ICD, not these.
if ! ls .gpu/libglvnd0_*.deb >/dev/null 2>&1; then
  lists=$(mktemp -d)
  mkdir -p "$lists/partial"
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
  apt-get "${o[@]}" update -qq
  (cd .gpu && apt-get "${o[@]}" download libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 2>&1 | grep -v unsandboxed)
fi
# The packages' tests under Deno without node_modules: the vitest shim bundled with jest's
# expect, and an import map that points at it.
# (An import map, not a config: Deno finds the repository's deno.json above the tests anyway.)
node_modules/.bin/esbuild scripts/deno-vitest.ts --bundle --format=esm --platform=node \
  --banner:js='import { createRequire } from "node:module"; const require = createRequire(import.meta.url); const __dirname = import.meta.dirname; const __filename = import.meta.filename;' \
  --log-level=warning --outfile=.gpu/vitest.js
node -e '
  const { imports } = JSON.parse(require("fs").readFileSync("deno.json", "utf8"));
  for (const k of Object.keys(imports)) imports[k] = imports[k].replace(/^\.\//, "../");
  imports.vitest = "./vitest.js";
  require("fs").writeFileSync(".gpu/import-map.json", JSON.stringify({ imports }, null, 2));
'

du -sh .gpu/*
