#!/usr/bin/env bash
# What @backplane/backend-webgpu's tests need on a clean Debian (bookworm) machine without
# a GPU: two software Vulkan drivers, one per WebGPU implementation.
#   - Deno's WebGPU (wgpu) runs on Mesa's lavapipe (mesa-vulkan-drivers; found by itself).
#   - Node and Bun use the `webgpu` npm package (Dawn), which refuses lavapipe
#     ("Vulkan shaderUniform*ArrayDynamicIndexing required") and runs on SwiftShader,
#     whose Vulkan ICD ships in Debian's chromium package (chromium-common, its dependency).
#
# Source it so the exports reach the calling shell:
#   . packages/backend-webgpu/ci-setup.sh
#   npx vitest run packages/backend-webgpu                      # Node: SwiftShader
#   ./node_modules/.bin/bun test packages/backend-webgpu         # Bun: SwiftShader
#   VK_ICD_FILENAMES="$BACKPLANE_LAVAPIPE_ICD" \
#     ./node_modules/.bin/deno test -A --no-check --config deno.json packages/backend-webgpu
#
# Exports:
#   VK_ICD_FILENAMES        SwiftShader's ICD json (what Dawn needs). Deno honours it too and
#                           then prefers SwiftShader over lavapipe: it still passes, but without
#                           shader-f16, so float16 is refused rather than tested. Run Deno with
#                           VK_ICD_FILENAMES="$BACKPLANE_LAVAPIPE_ICD" (or unset) for lavapipe.
#   BACKPLANE_LAVAPIPE_ICD  lavapipe's ICD json.
#   XDG_RUNTIME_DIR         a private directory (the drivers print errors to stderr without one).
# On GitHub Actions the same variables are also appended to $GITHUB_ENV for later steps.

_bp_webgpu_setup() {
  local sudo=""
  if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || return 1
  # mesa-vulkan-drivers brings libvulkan1 (the Vulkan loader both implementations open).
  $sudo apt-get install -y -qq --no-install-recommends mesa-vulkan-drivers chromium || return 1

  local swiftshader lavapipe
  # (the SwiftShader files are in chromium-common, which chromium depends on)
  swiftshader="$(dpkg -S 'vk_swiftshader_icd.json' 2>/dev/null | head -n1 | cut -d: -f2- | tr -d ' ')"
  lavapipe="$(dpkg -L mesa-vulkan-drivers | grep -m1 'lvp_icd.*\.json$')"
  if [ -z "$swiftshader" ] || [ -z "$lavapipe" ]; then
    echo "ci-setup.sh: ICD json not found (swiftshader: '$swiftshader', lavapipe: '$lavapipe')" >&2
    return 1
  fi

  export VK_ICD_FILENAMES="$swiftshader"
  export BACKPLANE_LAVAPIPE_ICD="$lavapipe"
  export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/xdg-runtime-$(id -u)}"
  mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

  if [ -n "${GITHUB_ENV:-}" ]; then
    {
      echo "VK_ICD_FILENAMES=$VK_ICD_FILENAMES"
      echo "BACKPLANE_LAVAPIPE_ICD=$BACKPLANE_LAVAPIPE_ICD"
      echo "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR"
    } >>"$GITHUB_ENV"
  fi
  echo "ci-setup.sh: VK_ICD_FILENAMES=$VK_ICD_FILENAMES (Node, Bun); BACKPLANE_LAVAPIPE_ICD=$BACKPLANE_LAVAPIPE_ICD (Deno)"
}

if ! _bp_webgpu_setup; then
  unset -f _bp_webgpu_setup
  # `return` when sourced, `exit` when run
  return 1 2>/dev/null || exit 1
fi
unset -f _bp_webgpu_setup
