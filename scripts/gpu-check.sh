#!/usr/bin/env bash
# Every GPU figure of issue 41 in one call, side by side with the same host's CPU, for a
# session that is lent a GPU machine for a few minutes. It builds nothing there:
# `scripts/gpu-bundle.sh` builds the wgpu binary here and puts it, stripped and
# compressed, in .gpu/ with the Vulkan loader's package, checks that it all fits what the
# device tool carries, and prints the call:
#
#   scripts/gpu-check.sh [BREDON] [DEVICE]     # defaults: target/release/bredon, wgpu
#   scripts/gpu-check.sh .gpu/bredon.xz wgpu   # the bundle's binary, unpacked first
#
# Before measuring it makes Vulkan work on a bare GPU machine: where `ldconfig -p` shows no
# Vulkan loader (libvulkan.so.1) or no GLVND (libGLX.so.0, libEGL.so.1, which NVIDIA's
# Vulkan driver needs) it unpacks the bundle's loader packages into /, and where no
# Vulkan driver manifest is in the loader's usual folders but NVIDIA's is under
# /usr/local/nvidia, it points VK_DRIVER_FILES at it.
#
# Prints, for the shipped 6x6 network (checkpoints/shipped/6x6.bredon), with both of the
# search's GPU forward passes (burn's, and Bredon's own WGSL kernels: `--inference wgsl`):
#   1. the forward pass, positions/s at batches up to 4,096 on DEVICE (burn, wgsl, wgsl
#      with two passes in flight) and on the CPU's fast path, each phase of a pass (encode,
#      upload, kernels, readback, convert), and every head's largest difference from the
#      CPU;
#   2. the training step at batch 512, samples/s on DEVICE (its convolutions as burn's
#      direct ones, the default, and as matrix products over rows) and on the CPU,
#      three steps' losses on both, each phase's time (and the host thread's), and CubeCL's profile of
#      one step: how many kernels each phase launches and which take the device's time,
#      and the host's cost of a launch (a 16-channel net at batch 1: nearly empty kernels);
#   3. self-play with the shipped weights (configs/6x6-gpu.toml on DEVICE with each path,
#      the wgsl kernels in f32 and on tensor cores,
#      configs/6x6-pool-continue.toml on the CPU): evaluations/s, games/h, and where the
#      inference service's time goes;
#   4. a short real run (`bredon train` with configs/6x6-gpu.toml and the wgsl path, on
#      tensor cores where step 1 found they agree with f32; one small generation), its
#      log's games/h and samples/s.
# Each step has its own time limit (they add up to 551 s, inside the device call's 600; on a GPU most
# steps end well before theirs, so the script takes a few minutes). A step that
# fails or runs out of time says so and the next one runs.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/bredon}
DEV=${2:-wgpu}
MODEL=checkpoints/shipped/6x6.bredon
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
trap 'exit 143' TERM INT
START=$(date +%s)

section() { echo; echo "== $* (t = $(( $(date +%s) - START )) s)"; }
# step LIMIT_SECONDS COMMAND...: runs the command under a time limit, output as it comes.
step() {
  local limit=$1
  shift
  echo "\$ $*"
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "(stopped: over its ${limit} s limit)"
  elif [ "$rc" -ne 0 ]; then
    echo "(failed: exit $rc)"
  fi
}

# Mesa's and wgpu's GL probing complain on every start without a runtime directory.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR="$TMP/xdg"
  mkdir -p -m 700 "$XDG_RUNTIME_DIR"
fi
# Everything printed also goes to a log, which the summary at the end reads.
LOG="$TMP/gpu-check.log"
exec > >(tee "$LOG") 2>&1

# unpack BIN NAME: a .xz binary (checked against its .sha256 when there is one) unpacked
# into $TMP/NAME, whose path it prints; any other path as it is.
unpack() {
  local bin=$1 name=$2
  if [[ "$bin" != *.xz ]]; then
    echo "$bin"
    return
  fi
  if [ -f "$bin.sha256" ] && ! (cd "$(dirname "$bin")" && sha256sum --quiet -c "$(basename "$bin").sha256" >&2); then
    echo "error: $bin does not match its checksum $bin.sha256 (a broken copy?)" >&2
    return 1
  fi
  if command -v xz >/dev/null; then
    xz -dc "$bin" >"$TMP/$name"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$bin" "$TMP/$name"
  fi
  chmod +x "$TMP/$name"
  echo "$TMP/$name"
}
BUNDLE_DIR=$(dirname "$BIN")
BIN=$(unpack "$BIN" bredon) || exit 1
if [ ! -x "$BIN" ]; then
  echo "error: $BIN is not an executable bredon (build it with --features wgpu and pass its path)" >&2
  exit 1
fi
# The same build with burn's kernel fusion (`--features wgpu-fusion`), where the bundle has
# it: its training step is measured beside the plain one.
FUSED=
if [ -f "$BUNDLE_DIR/bredon-fusion.xz" ]; then
  FUSED=$(unpack "$BUNDLE_DIR/bredon-fusion.xz" bredon-fusion) || FUSED=
fi

section "the machine"
nproc
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
# has_lib NAME: whether the dynamic linker's cache knows NAME. (`grep -c` reads all of
# `ldconfig -p`: `grep -q` stops at the first match, and under pipefail the SIGPIPE that
# ldconfig then gets made the check fail with the library right there.)
has_lib() { ldconfig -p 2>/dev/null | grep -c "$1" >/dev/null; }
# NVIDIA's Vulkan driver lives in libGLX_nvidia, which needs GLVND's dispatch libraries
# (libGLX, libEGL, ...) besides the Vulkan loader: without them the loader finds the
# driver's manifest but "could not get vkCreateInstance" from it.
if ! has_lib 'libvulkan\.so\.1' || ! has_lib 'libGLX\.so\.0' || ! has_lib 'libEGL\.so\.1'; then
  for deb in "$BUNDLE_DIR"/lib*.deb; do
    [ -f "$deb" ] || continue
    echo "no Vulkan/GLVND loader here: unpacking $deb"
    dpkg -x "$deb" /
  done
  ldconfig
  has_lib 'libvulkan\.so\.1' || echo "warning: still no Vulkan loader (libvulkan.so.1): wgpu will find no adapter"
  has_lib 'libGLX\.so\.0' || echo "warning: still no GLVND (libGLX.so.0): NVIDIA's Vulkan driver will not start"
fi
NV_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$NV_ICD" ] &&
  ! ls /etc/vulkan/icd.d/nvidia*.json /usr/share/vulkan/icd.d/nvidia*.json /usr/local/share/vulkan/icd.d/nvidia*.json >/dev/null 2>&1; then
  echo "NVIDIA's Vulkan driver manifest is only under /usr/local/nvidia: VK_DRIVER_FILES=$NV_ICD"
  export VK_DRIVER_FILES=$NV_ICD
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
step 20 "$BIN" devices

section "1. forward pass, shipped 6x6 (fast = the CPU's kernels, burn = $DEV)"
step 90 "$BIN" --device "$DEV" bench nn --model "$MODEL" --batches 64,256,1024,4096 --seconds 1 --compare-cpu \
  --arithmetic f32
echo "-- the trunk on cooperative matrices (tensor cores; never run on a real GPU before: its own step, so that"
echo "   a failure costs nothing else): positions/s, whether it agrees with f32, every head against the CPU"
step 60 "$BIN" --device "$DEV" --inference wgsl bench nn --model "$MODEL" --batches 1024,4096 --seconds 1 --compare-cpu \
  --arithmetic tensor
# The real run (4.) takes the tensor kernels only where they ran and agreed with f32 here.
RUN_INFERENCE=wgsl
if grep -qE '^[0-9]+x[0-9]+ +[^ ]+ +[0-9]+ +tensor .*within 1e-3 of f32' "$LOG"; then
  RUN_INFERENCE=wgsl:tensor
fi

section "2. training step, batch 512"
step 35 "$BIN" --device "$DEV" bench train --model "$MODEL" --batch 512 --seconds 6 --compare-cpu
echo "-- the same step with its convolutions as matrix products over rows instead of burn's direct ones (the default since the H200's figures, docs/gpu.md)"
step 20 "$BIN" --device "$DEV" bench train --model "$MODEL" --batch 512 --seconds 4 --convolutions matmul
step 20 "$BIN" --device cpu bench train --model "$MODEL" --batch 512 --seconds 6
echo "-- the step's kernels on $DEV (CubeCL's own profile of the last timed step: kernels launched and their device time, per phase)"
step 30 env CUBECL_DEBUG_LOG="$TMP/cubecl-train.log" CUBECL_DEBUG_OPTION=profile \
  "$BIN" --device "$DEV" bench train --model "$MODEL" --batch 512 --seconds 2
python3 scripts/cubecl-profile-summary.py "$TMP/cubecl-train.log" --top 6 || echo "(no profile)"
echo "-- the host's cost of a launch: the same network with 16 channels at batch 1, whose kernels have almost"
echo "   nothing to do, so a step is the host issuing its kernels (about 1,150: a kernel costs the step's ms x 1000 / 1,150 us)"
step 20 "$BIN" --device "$DEV" bench train --config configs/6x6-pool.toml --channels 16 --batch 1 --seconds 3
if [ -n "$FUSED" ]; then
  echo "-- the same step with burn's kernel fusion (--features wgpu-fusion)"
  step 25 "$FUSED" --device "$DEV" bench train --model "$MODEL" --batch 512 --seconds 6 --compare-cpu
  step 25 env CUBECL_DEBUG_LOG="$TMP/cubecl-train-fused.log" CUBECL_DEBUG_OPTION=profile \
    "$FUSED" --device "$DEV" bench train --model "$MODEL" --batch 512 --seconds 2
  python3 scripts/cubecl-profile-summary.py "$TMP/cubecl-train-fused.log" --top 6 || echo "(no profile)"
  echo "-- the host's cost of a step of nearly empty kernels with fusion"
  step 10 "$FUSED" --device "$DEV" bench train --config configs/6x6-pool.toml --channels 16 --batch 1 --seconds 2
else
  echo "-- (no bredon-fusion.xz beside $BUNDLE_DIR/bredon.xz: the fused build is not measured; scripts/gpu-bundle.sh --fusion bundles it)"
fi

section "3. self-play with the shipped weights"
# wgsl:tensor: the trunk on tensor cores, checked against f32 at start-up (f32 with a
# warning where the adapter lacks them or they disagree).
for PATH_KIND in wgsl wgsl:tensor burn; do
  step 30 "$BIN" --device "$DEV" --inference "$PATH_KIND" bench selfplay --config configs/6x6-gpu.toml --model "$MODEL" \
    --games 1024 --max-seconds 20 --seconds 1
done
step 20 "$BIN" --device cpu bench selfplay --config configs/6x6-pool-continue.toml --model "$MODEL" --games 1024 --max-seconds 15 --seconds 1

section "4. a short real run on $DEV (configs/6x6-gpu.toml with inference = \"$RUN_INFERENCE\", one generation of 192 games and 50 steps)"
sed -e 's/^games_per_generation = .*/games_per_generation = 192/' \
  -e "s/^inference = .*/inference = \"$RUN_INFERENCE\"/" \
  -e 's/^max_steps_per_generation = .*/max_steps_per_generation = 50/' \
  -e 's/^window_min = .*/window_min = 1000/' configs/6x6-gpu.toml >"$TMP/6x6-gpu-short.toml"
step 85 "$BIN" --device "$DEV" train --config "$TMP/6x6-gpu-short.toml" --run "$TMP/run" \
  --init-from "$MODEL" --minutes 1.5
echo "-- the run's generations (logs/generations.jsonl):"
grep -o -E '"(generation|games|evals_per_sec|games_per_hour|samples_per_sec)":[0-9.]+' \
  "$TMP/run/logs/generations.jsonl" 2>/dev/null | paste -sd ' ' || echo "(no generation finished)"

cp "$LOG" "$TMP/measured.log"
MEASURED="$TMP/measured.log"
section "summary (issue 41's bars: forward >= 400k positions/s at batch >= 1,024, every head within 1e-3; training >= 30k samples/s at batch 512; self-play >= 150k evals/s)"
echo "-- forward, positions/s (columns: size net batch fast burn wgsl wgsl-x2):"
grep -E '^[0-9]+x[0-9]+ +[^ ]+ +(1024|4096) +[0-9]+ ' "$MEASURED" | grep -v 'priors\|logits' || echo "(no forward figures)"
echo "-- the wgsl kernels by the trunk's arithmetic (f32: shader multiply-adds; tensor: cooperative matrices):"
grep -E '^[0-9]+x[0-9]+ +[^ ]+ +([0-9]+|-) +(f32|f16-pairs|tensor) ' "$MEASURED" || echo "(none printed)"
echo "-- head differences:"
grep -E 'within 1e-3|ABOVE 1e-3' "$MEASURED" || echo "(none printed)"
echo "-- training and self-play:"
grep -E '^train |^  step +[0-9.]+ wall|^self-play |evaluations in .* evals/s|host work per network evaluation' "$MEASURED" || echo "(none printed)"
echo "-- steps that failed or ran out of time:"
grep -E '^\(stopped: over|^\(failed: exit' "$MEASURED" || echo "(none)"

section "done"
