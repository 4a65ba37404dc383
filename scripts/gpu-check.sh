#!/usr/bin/env bash
# Every GPU figure of issue 41 in one call, side by side with the same host's CPU, for a
# session that is lent a GPU machine for a few minutes. It builds nothing: build here with
# `cargo build --release -p bredon-cli --features wgpu` and carry the binary.
#
#   scripts/gpu-check.sh [BREDON] [DEVICE]     # defaults: target/release/bredon, wgpu
#
# Prints, for the shipped 6x6 network (checkpoints/shipped/6x6.bredon), with both of the
# search's GPU forward passes (burn's, and Bredon's own WGSL kernels: `--inference wgsl`):
#   1. the forward pass, positions/s at batches up to 4,096 on DEVICE (burn, wgsl, wgsl
#      with two passes in flight) and on the CPU's fast path, each phase of a pass (encode,
#      upload, kernels, readback, convert), and every head's largest difference from the
#      CPU;
#   2. the training step at batch 512, samples/s on DEVICE and on the CPU, and three steps'
#      losses on both;
#   3. self-play with the shipped weights (configs/6x6-gpu.toml on DEVICE with each path,
#      configs/6x6-pool-continue.toml on the CPU): evaluations/s, games/h, and where the
#      inference service's time goes;
#   4. a short real run (`bredon train` with configs/6x6-gpu.toml and the wgsl path, one
#      small generation), its log's games/h and samples/s.
# Each step has its own time limit; the whole script stays under 8 minutes. A step that
# fails or runs out of time says so and the next one runs.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/bredon}
DEV=${2:-wgpu}
MODEL=checkpoints/shipped/6x6.bredon
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
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

if [ ! -x "$BIN" ]; then
  echo "error: $BIN is not an executable bredon (build it with --features wgpu and pass its path)" >&2
  exit 1
fi

section "the machine"
nproc
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
step 30 "$BIN" devices

section "1. forward pass, shipped 6x6 (fast = the CPU's kernels, burn = $DEV)"
step 110 "$BIN" --device "$DEV" bench nn --model "$MODEL" --batches 64,256,1024,4096 --seconds 1 --compare-cpu

section "2. training step, batch 512"
step 45 "$BIN" --device "$DEV" bench train --model "$MODEL" --batch 512 --seconds 10 --compare-cpu
step 30 "$BIN" --device cpu bench train --model "$MODEL" --batch 512 --seconds 8

section "3. self-play with the shipped weights"
for PATH_KIND in wgsl burn; do
  step 60 "$BIN" --device "$DEV" --inference "$PATH_KIND" bench selfplay --config configs/6x6-gpu.toml --model "$MODEL" \
    --games 1024 --max-seconds 40 --seconds 1
done
step 45 "$BIN" --device cpu bench selfplay --config configs/6x6-pool-continue.toml --model "$MODEL" --games 1024 --max-seconds 30 --seconds 1

section "4. a short real run on $DEV (configs/6x6-gpu.toml with the wgsl path, one generation of 192 games and 50 steps)"
sed -e 's/^games_per_generation = .*/games_per_generation = 192/' \
  -e 's/^inference = .*/inference = "wgsl"/' \
  -e 's/^max_steps_per_generation = .*/max_steps_per_generation = 50/' \
  -e 's/^window_min = .*/window_min = 1000/' configs/6x6-gpu.toml >"$TMP/6x6-gpu-short.toml"
step 100 "$BIN" --device "$DEV" train --config "$TMP/6x6-gpu-short.toml" --run "$TMP/run" \
  --init-from "$MODEL" --minutes 1.5
echo "-- the run's generations (logs/generations.jsonl):"
grep -o -E '"(generation|games|evals_per_sec|games_per_hour|samples_per_sec)":[0-9.]+' \
  "$TMP/run/logs/generations.jsonl" 2>/dev/null | paste -sd ' ' || echo "(no generation finished)"

section "done"
