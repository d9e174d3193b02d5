#!/usr/bin/env bash
# Fills .gpu/ (git-ignored through .git/info/exclude) with what the GPU machine lacks and
# cannot download: Deno's binary (xz) and Debian's Vulkan loader. The device call carries
# .gpu and runs scripts/gpu-check/run.sh. Run from the repository root after `npm ci`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
mkdir -p .gpu
deno=node_modules/deno/deno
[ -x "$deno" ] || { echo "pack: $deno is missing; run npm ci first" >&2; exit 1; }
if [ ! -f .gpu/deno.xz ] || [ "$deno" -nt .gpu/deno.xz ]; then
  xz -T0 -6 -c "$deno" >.gpu/deno.xz.tmp && mv .gpu/deno.xz.tmp .gpu/deno.xz
fi
# The Vulkan loader (libvulkan.so.1): NVIDIA's driver ships the ICD, not the loader.
if ! ls .gpu/libvulkan1_*.deb >/dev/null 2>&1; then
  lists=$(mktemp -d)
  mkdir -p "$lists/partial"
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
  apt-get "${o[@]}" update -qq
  (cd .gpu && apt-get "${o[@]}" download libvulkan1)
fi
du -sh .gpu/*
