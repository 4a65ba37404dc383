#!/usr/bin/env bash
# Strength report of a finished training run (what the closing notes quote):
#   1. the Elo ladder of its checkpoints (writes <run>/arena/: ratings, elo.svg, TensorBoard),
#   2. its newest checkpoint against the uniform and rollout baselines at several visit
#      counts (writes <run>/arena/baselines/),
#   3. the newest checkpoint exported to <run>/exports/.
# Usage: scripts/report-run.sh checkpoints/4x4-main [games-per-pairing]
set -euo pipefail
run=${1:?usage: $0 RUN_DIR [GAMES]}
games=${2:-20}
bredon=${BREDON:-target/release/bredon}
[ -x "$bredon" ] || cargo build --release --bin bredon
size=$(sed -n 's/^size *= *\([0-9]\).*/\1/p' "$run/config.toml" | head -1)
half_komi=$(awk -F'[=#]' '/^komi *=/ {printf "%d", $2 * 2; exit}' "$run/config.toml")
latest=$(cat "$run/latest")

"$bredon" arena --run "$run" --games "$games"

"$bredon" arena --out "$run/arena/baselines" --size "$size" --half-komi "${half_komi:-0}" --schedule gauntlet --games "$games" \
  --player "checkpoint:$run/checkpoints/$latest;name=$latest;visits=96" \
  --player uniform:50 --player uniform:200 --player uniform:800 \
  --player rollout:100 --player rollout:400 --player rollout:1600

"$bredon" export --run "$run"
