#!/usr/bin/env bash
# The GPU check, in one command (on the GPU machine, or anywhere to see what is missing):
#
#   bash scripts/gpu-check/run.sh [--quick] [--recording] [step ...]
#
# --quick: smaller timing problems. --recording: without a GPU, run check.ts's device checks
# and timings over backend-cuda's RecordingLayer (the scripts' own code; no numerics).
#
# steps (default: all, in this order):
#   machine  nvidia-smi, the driver, torch's view of the device, the libraries found
#   check    backend-cuda + backend-cudnn: conformance, device checks, timings (check.ts, Deno)
#   tests    the cuda and cudnn packages' tests that skip without a GPU (deno test)
#   torch    PyTorch's timings of the same cases (torch-peers.py)
#   webgpu   backend-webgpu on the GPU's Vulkan driver: conformance and timings (webgpu.ts, Deno)
#   report   report.md: every figure side by side, with ratios (report.ts)
#   probe    (not in the default list) which attention graphs cuDNN plans for, with cuDNN's
#            logs and PyTorch's CUDNN_ATTENTION graph traced for comparison; where a cuDNN
#            conv2d call's host time goes (conv-profile.ts)
#
# Deno comes from PATH, node_modules/.bin, or .gpu/deno.xz (pack.sh makes it; the GPU machine
# has no registry). Results go to $OUT (the device tool's folder) or artifacts/gpu-check.
# Each step has its own time limit, so one that hangs cannot eat the others' time.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-artifacts/gpu-check}
mkdir -p "$out"
flags=()
steps=()
for a in "$@"; do
  case $a in
    --quick | --recording) flags+=("$a") ;;
    *) steps+=("$a") ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || steps=(machine check torch webgpu tests report)
exec > >(tee -a "$out/run.log") 2>&1

# --- Deno ---------------------------------------------------------------------------------
if command -v deno >/dev/null; then deno=$(command -v deno)
elif [ -x node_modules/.bin/deno ]; then deno=node_modules/.bin/deno
elif [ -f .gpu/deno.xz ]; then
  deno=/tmp/backplane-gpu/deno
  [ -x $deno ] || { mkdir -p /tmp/backplane-gpu && xz -dc .gpu/deno.xz >$deno && chmod +x $deno; }
else
  echo "gpu-check: no Deno (not on PATH, no node_modules/.bin/deno, no .gpu/deno.xz: run scripts/gpu-check/pack.sh)"
  exit 1
fi
export DENO_DIR=${DENO_DIR:-/tmp/backplane-gpu/deno-dir} DENO_NO_UPDATE_CHECK=1 NO_COLOR=1
deno_run=("$deno" run -A --no-check --config deno.json)

# --- Libraries ------------------------------------------------------------------------------
# The loaders look for pip's NVIDIA wheels in $VIRTUAL_ENV (and the usual prefixes): name the
# environment whose python3 holds PyTorch, as activating it would.
py=${PYTHON:-python3}
if [ -z "${VIRTUAL_ENV:-}" ] && command -v "$py" >/dev/null; then
  VIRTUAL_ENV=$("$py" -c 'import sys; print(sys.prefix)' 2>/dev/null) && export VIRTUAL_ENV
fi
# Where the wheels keep a library outside the directories the loaders search, say so and
# point the loader's variable at it (the loader's search is what this run checks first).
for spec in cudnn:libcudnn.so.9:nvidia/cudnn/lib cublas:libcublas.so.13:nvidia/cu13/lib; do
  IFS=: read -r name file dir <<<"$spec"
  var=BACKPLANE_$(echo "$name" | tr a-z A-Z)_PATH
  [ -n "${VIRTUAL_ENV:-}" ] && [ -z "${!var:-}" ] || continue
  found=$(find "$VIRTUAL_ENV" -name "$file" 2>/dev/null | head -1)
  if [ -n "$found" ] && [[ "$found" != */$dir/$file ]]; then
    echo "gpu-check: $file is at $found, not under */$dir: $var set"
    export "$var=$found"
  fi
done
# Debian's Vulkan loader (carried in .gpu/), unpacked beside, not over, the system.
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 '; then
  for f in .gpu/*.deb; do
    [ -f "$f" ] && mkdir -p /tmp/backplane-gpu/vk && dpkg -x "$f" /tmp/backplane-gpu/vk
  done
  [ -d /tmp/backplane-gpu/vk ] &&
    export LD_LIBRARY_PATH=/tmp/backplane-gpu/vk/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f $icd ] && ! ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1; then
  export VK_DRIVER_FILES=$icd
fi

step() { # name, seconds, command... (a shell function runs without the limit: keep it short)
  local name=$1 limit=$2
  shift 2
  echo "=== $name (limit ${limit}s) $(date -u +%H:%M:%S)"
  local t0=$SECONDS
  if declare -F "$1" >/dev/null; then "$@"; else timeout -k 10 "$limit" "$@"; fi
  local rc=$?
  [ $rc -eq 124 ] && echo "=== $name: TIMED OUT after ${limit}s"
  echo "=== $name: exit $rc in $((SECONDS - t0))s"
  echo "$name $rc $((SECONDS - t0))" >>"$out/steps.txt"
}

machine() {
  date -u
  timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi: none (no NVIDIA driver here)"
  uname -r
  "$deno" --version | head -1
  [ -n "${VIRTUAL_ENV:-}" ] && find "$VIRTUAL_ENV" -name 'lib*.so.*' -path '*nvidia*' 2>/dev/null | grep -E 'cudnn.so|cublas|cufft.so|cusolver.so|cudart' | head -20
  echo "VIRTUAL_ENV=${VIRTUAL_ENV:-} VK_DRIVER_FILES=${VK_DRIVER_FILES:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  timeout 60 "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device")' 2>&1 || true
}

for s in "${steps[@]}"; do
  case $s in
    machine) step machine 60 machine ;;
    check)
      step conformance 100 "${deno_run[@]}" scripts/gpu-check/check.ts --out "$out" --only conformance "${flags[@]}"
      step checks+timings 220 "${deno_run[@]}" scripts/gpu-check/check.ts --out "$out" --only checks,timings "${flags[@]}" ;;
    tests)
      # Without node_modules (the GPU machine), the import map of pack.sh with its bundled shim.
      config=(--config deno.json)
      [ -d node_modules/expect ] || config=(--no-config --import-map .gpu/import-map.json)
      step tests 50 "$deno" test -A --no-check "${config[@]}" \
      packages/backend-cuda/test packages/backend-cudnn/test ;;
    torch) step torch 90 env PYTHONUNBUFFERED=1 "$py" scripts/gpu-check/torch-peers.py "$out" "${flags[@]/--recording/}" ;;
    webgpu) VK_LOADER_DEBUG=error step webgpu 70 "${deno_run[@]}" scripts/gpu-check/webgpu.ts --out "$out" "${flags[@]}" ;;
    probe)
      # Which attention graphs cuDNN plans for (attention-probe.ts), with cuDNN's own log of why
      # engines refuse, beside the API-level trace of PyTorch's CUDNN_ATTENTION graph.
      logs=/tmp/backplane-gpu/probe-logs && rm -rf $logs && mkdir -p $logs
      step attention-probe 150 env CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=$logs/ours-l2.log \
        "${deno_run[@]}" scripts/gpu-check/attention-probe.ts --out "$out"
      step attention-base 60 env CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=$logs/ours-l3.log \
        "${deno_run[@]}" scripts/gpu-check/attention-probe.ts --out "$out" --base
      step torch-trace 90 env CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=$logs/torch-l3.log \
        CUDNN_FRONTEND_LOG_INFO=1 CUDNN_FRONTEND_LOG_FILE=$logs/torch-frontend.log \
        "$py" scripts/gpu-check/torch-attention-trace.py
      step conv-profile 90 "${deno_run[@]}" scripts/gpu-check/conv-profile.ts --out "$out"
      ls -la $logs
      tar -C $logs -czf "$out/probe-logs.tgz" . ;;
    report) step report 60 "${deno_run[@]}" scripts/gpu-check/report.ts --out "$out" ;;
    *) echo "gpu-check: unknown step $s (machine check tests torch webgpu report probe)"; exit 2 ;;
  esac
done
