#!/usr/bin/env bash
# A/B protocol for a training change (docs/arena.md "Experiments"): two configs trained for the
# same wall-clock time from the same seed, one after the other on a quiet machine (or side
# by side with AB_SIDE_BY_SIDE=1, each on half of it: both get the same machine either
# way), then their final exports play each other at a fixed time
# per move, colour-swapped from shared openings, and each plays fixed baselines.
#
# Usage: scripts/ab.sh NAME CONFIG_A CONFIG_B [MINUTES] [GAMES] [MOVETIME_MS]
#   writes experiments/runs/NAME/{a,b} (runs), experiments/runs/NAME/match (A vs B) and
#   experiments/runs/NAME/baselines; prints the A-vs-B Elo with its 95% interval.
# Add the result as a row of experiments/README.md, losers included.
set -euo pipefail
name=${1:?usage: $0 NAME CONFIG_A CONFIG_B [MINUTES] [GAMES] [MOVETIME_MS]}
config_a=${2:?config A}
config_b=${3:?config B}
minutes=${4:-20}
games=${5:-200}
movetime=${6:-100}
bredon=${BREDON:-target/release/bredon}
source "$(dirname "$0")/openings.sh"
[ -x "$bredon" ] || cargo build --release --bin bredon
out=experiments/runs/$name
mkdir -p "$out"
size=$(sed -n 's/^size *= *\([0-9]\).*/\1/p' "$config_a" | head -1)
half_komi=$(awk -F'[=#]' '/^komi *=/ {printf "%d", $2 * 2; exit}' "$config_a")

# AB_SIDES=b retrains only side B (e.g. after a crash), keeping A's finished run.
# AB_SIDE_BY_SIDE=1 trains both sides at once, each on half the machine (MINUTES is then
# wall-clock minutes of half the cores each): anything else the machine does meanwhile
# slows both sides alike, which one-after-the-other cannot promise on a busy machine.
train_side() {
  local side=$1 config=$config_a
  [ "$side" = b ] && config=$config_b
  # Resumable: a killed A/B continues where it stopped (the time limit counts per session).
  "$bredon" train --config "$config" --run "$out/$side" --minutes "$minutes" --quiet
  "$bredon" export --run "$out/$side" -o "$out/$side.bredon"
}
pids=()
for side in ${AB_SIDES:-a b}; do
  if [ "${AB_SIDE_BY_SIDE:-0}" = 1 ]; then
    train_side "$side" > "$out/$side.log" 2>&1 &
    pids+=($!)
    echo "side $side training in the background: $out/$side.log"
  else
    train_side "$side"
  fi
done
for pid in "${pids[@]}"; do wait "$pid"; done

cat > "$out/match.toml" <<TOML
size = $size
half_komi = ${half_komi:-0}
movetime_ms = $movetime
games_per_pairing = $games
max_plies = 300
[openings]
$(openings_toml "$size" $(( games / 2 )) 7)
TOML
"$bredon" arena --out "$out/match" --config "$out/match.toml" \
  --player "checkpoint:$out/a.bredon;name=A" --player "checkpoint:$out/b.bredon;name=B"
"$bredon" arena --out "$out/baselines" --size "$size" --half-komi "${half_komi:-0}" --schedule gauntlet --games 40 \
  --player "checkpoint:$out/b.bredon;name=B;visits=200" --player "checkpoint:$out/a.bredon;name=A;visits=200" \
  --player rollout:400 --player rollout:1600
