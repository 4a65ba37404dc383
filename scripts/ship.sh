#!/usr/bin/env bash
# Ships a run's newest checkpoint as checkpoints/shipped/NAME.bredon (+ NAME.onnx) with
# its Elo ladder: NAME-elo.svg (Elo against minutes of training), NAME-elo-curve.csv,
# NAME-ratings.csv and NAME-generations.txt (the generation log as a table).
# The ladder is the run's own (`[eval] arena_every` / `arena_games` / `visits`), brought up
# to date first (games the training hook already played are not replayed), plus a coarse
# ladder of every fifth of its checkpoints with four times the games.
# Usage: scripts/ship.sh RUN_DIR NAME
set -euo pipefail
run=${1:?usage: $0 RUN_DIR NAME}
name=${2:?usage: $0 RUN_DIR NAME}
bredon=${BREDON:-target/release/bredon}
[ -x "$bredon" ] || cargo build --release --bin bredon
out=checkpoints/shipped
mkdir -p "$out"
key() { awk -F'[=#]' -v k="$1" '$1 ~ "^"k" *$" {gsub(/ /, "", $2); print $2; exit}' "$run/config.toml"; }
every=$(key arena_every); every=${every:-10}; [ "$every" -gt 0 ] || every=10
games=$(key arena_games); games=${games:-10}

# A coarse pass first: every fifth ladder checkpoint with four times the games, so that
# checkpoints far apart meet directly (neighbours 10 games apart cannot resolve slow
# progress); then the ladder itself, fitted on all games played.
"$bredon" arena --run "$run" --every $((every * 5)) --games $((games * 4))
"$bredon" arena --run "$run" --every "$every" --games "$games"
"$bredon" export --run "$run" -o "$out/$name.bredon"
"$bredon" export "$out/$name.bredon" --format onnx -o "$out/$name.onnx"
cp "$run/arena/elo.svg" "$out/$name-elo.svg"
cp "$run/arena/elo-curve.csv" "$out/$name-elo-curve.csv"
cp "$run/arena/ratings.csv" "$out/$name-ratings.csv"
python3 scripts/generations-table.py "$run" "$every" > "$out/$name-generations.txt"
echo "shipped $(cat "$run/latest") of $run as $out/$name.bredon"
