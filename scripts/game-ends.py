#!/usr/bin/env python3
"""How a match's games ended, for one player: wins, losses and draws by road, flats and
anything else (time, forfeit, adjudication), from an arena directory's results.jsonl.

    scripts/game-ends.py DIR PLAYER
"""
import json
import sys
from pathlib import Path


def kind(result: str) -> str:
    if "R" in result:
        return "road"
    if "F" in result:
        return "flats"
    if result in ("1/2-1/2", "½-½"):
        return "draw"
    return "other"


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, player = Path(sys.argv[1]) / "results.jsonl", sys.argv[2]
    rows = {(o, k): 0 for o in ("won", "lost", "drawn") for k in ("road", "flats", "draw", "other")}
    games, points = 0, 0.0
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if player not in (r["white"], r["black"]):
            continue
        score = r["white_score"] if r["white"] == player else 1.0 - r["white_score"]
        games += 1
        points += score
        outcome = "won" if score == 1.0 else "lost" if score == 0.0 else "drawn"
        rows[(outcome, kind(r["result"]))] += 1
    if games == 0:
        print(f"no games of {player} in {path}", file=sys.stderr)
        return 1
    print(f"{player}: {games} games, {points:g} points ({100 * points / games:.1f} %)")
    print(f"| {player} | road | flats | draw | other |")
    print("|---|---|---|---|---|")
    for o in ("won", "lost", "drawn"):
        cells = " | ".join(str(rows[(o, k)]) for k in ("road", "flats", "draw", "other"))
        print(f"| {o} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
