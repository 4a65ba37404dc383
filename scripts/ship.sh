#!/usr/bin/env bash
# Ships a run's newest checkpoint as checkpoints/shipped/NAME.bredon (+ NAME.onnx) with
# its Elo ladder: NAME-elo.svg (Elo against minutes of training), NAME-elo-curve.csv,
# NAME-ratings.csv and NAME-generations.txt (the generation log as a table), and
# NAME-halfway.csv: the checkpoint at half the training time against the newest, 200
# colour-swapped games (HALFWAY_GAMES) at the ladder's visits from shared openings
# (scripts/openings.sh), to tell whether the second half of the run still made progress
# (a ladder's neighbours are too few games apart to resolve that).
# The ladder is the run's own (`[eval] arena_every` / `arena_games` / `visits`), brought up
# to date first (games the training hook already played are not replayed), plus a coarse
# ladder of every fifth of its checkpoints with four times the games.
# A run started with --init-from counts its source model's minutes (init.json) in the
# half-way point too. SHIP_COARSE=0 skips the coarse pass (it can take a quarter of an
# hour on 5x5).
# Usage: scripts/ship.sh RUN_DIR NAME
set -euo pipefail
run=${1:?usage: $0 RUN_DIR NAME}
name=${2:?usage: $0 RUN_DIR NAME}
bredon=${BREDON:-target/release/bredon}
source "$(dirname "$0")/openings.sh"
[ -x "$bredon" ] || cargo build --release --bin bredon
out=checkpoints/shipped
mkdir -p "$out"
# The run's settings (its config copy; config defaults where a key is absent, and a ladder
# every 10 checkpoints where the run kept none) and the half-way checkpoint: the last one
# at or before half the newest's training time.
read -r every games size half_komi visits half newest < <(python3 - "$run" <<'PY'
import json, sys, pathlib, tomllib
run = pathlib.Path(sys.argv[1])
cfg = tomllib.loads((run / "config.toml").read_text())
game, ev = cfg.get("game", {}), cfg.get("eval", {})
# A run started from a trained model (init.json) counts that model's training time too.
init = run / "init.json"
before = (json.loads(init.read_text()).get("minutes") or 0) * 60 if init.is_file() else 0
states = {}
for d in (run / "checkpoints").iterdir():
    if (d / "model.bpk").is_file() and (d / "state.json").is_file():
        states[d.name] = before + json.loads((d / "state.json").read_text())["elapsed_secs"]
newest = (run / "latest").read_text().strip()
half = max((n for n, t in states.items() if t <= states[newest] / 2), default=min(states))
print(ev.get("arena_every", 0) or 10, ev.get("arena_games", 10), game.get("size", 4),
      int(round(game.get("komi", 0.0) * 2)), ev.get("visits", 64), half, newest)
PY
)

# A coarse pass first: every fifth ladder checkpoint with four times the games, so that
# checkpoints far apart meet directly (neighbours 10 games apart cannot resolve slow
# progress); then the ladder itself, fitted on all games played.
if [ "${SHIP_COARSE:-1}" != 0 ]; then
  "$bredon" arena --run "$run" --every $((every * 5)) --games $((games * 4))
fi
"$bredon" arena --run "$run" --every "$every" --games "$games"

# Half-way checkpoint vs newest.
hw="$run/arena/halfway-$newest"   # resumable: a killed ship.sh replays only missing games
hw_games=${HALFWAY_GAMES:-200}
mkdir -p "$hw"
cat > "$hw.toml" <<TOML
size = $size
half_komi = $half_komi
visits = $visits
games_per_pairing = $hw_games
[openings]
$(openings_toml "$size" $(( (hw_games + 1) / 2 )) 3)
TOML
"$bredon" arena --out "$hw" --config "$hw.toml" \
  --player "checkpoint:$run/checkpoints/$newest;name=$newest" --player "checkpoint:$run/checkpoints/$half;name=$half"

"$bredon" export --run "$run" -o "$out/$name.bredon"
"$bredon" export "$out/$name.bredon" --format onnx -o "$out/$name.onnx"
cp "$run/arena/elo.svg" "$out/$name-elo.svg"
cp "$run/arena/elo-curve.csv" "$out/$name-elo-curve.csv"
cp "$run/arena/ratings.csv" "$out/$name-ratings.csv"
cp "$hw/ratings.csv" "$out/$name-halfway.csv"
python3 scripts/generations-table.py "$run" "$every" > "$out/$name-generations.txt"
echo "shipped $(cat "$run/latest") of $run as $out/$name.bredon"
