#!/usr/bin/env python3
"""Real games' endgames as an openings file: for each game one player played as a colour
(and that ended by the rules), the moves up to the first position where the fewer pieces
in hand of the two sides is at most --reserves. `bredon arena` then plays on from those
positions (`[openings] kind = "file"`), so a network's own continuations can be set beside
the real games' results. Prints the positions' count, the real games' mean result for
White from them and the network's raw value for White there (1 visit, `--model`).

    scripts/endgame-openings.py DIR PLAYER --colour white|black --reserves 5 --out FILE
                                [--bredon target/release/bredon] [--model M]

DIR is an arena output directory or a held-out folder (as for scripts/endgame-error.py).
"""
import argparse
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("endgame_error", HERE / "endgame-error.py")
endgame_error = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(endgame_error)

RESULT = re.compile(r"^(R-0|0-R|F-0|0-F|1-0|0-1|1/2-1/2)$")


def moves_of(ptn: str) -> list[str]:
    """The PTN's moves in order: tags, comments, move numbers and the result dropped."""
    body = re.sub(r"\[[^\]]*\]", "", ptn)
    body = re.sub(r"\{[^}]*\}", "", body)
    return [t for t in body.split() if not re.match(r"^\d+\.$", t) and not RESULT.match(t)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("player")
    ap.add_argument("--colour", choices=["white", "black"], required=True)
    ap.add_argument("--reserves", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bredon", default="target/release/bredon")
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    root = Path(args.dir)
    if not (root / "results.jsonl").is_file():
        print(f"{root} holds no results.jsonl: not an arena output directory or a held-out folder",
              file=sys.stderr)
        return 1
    records = [json.loads(l) for l in (root / "results.jsonl").read_text().splitlines() if l.strip()]
    games = [r for r in records if r[args.colour] == args.player and r.get("ptn_file")
             and r.get("termination", {}).get("kind") == "rules"]
    if not games:
        print(f"no games of {args.player} as {args.colour} that ended by the rules in {root}",
              file=sys.stderr)
        return 1
    cmd = [args.bredon, "analyse", "--json"] + (["--model", args.model] if args.model else [])
    engine = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines, results, values = [], [], []
    for i, rec in enumerate(games):
        ptn = endgame_error.ptn_path(root, rec).read_text()
        moves = moves_of(ptn)
        if len(moves) != rec["plies"]:
            # A move with a mark this reader does not strip: the prefix would be wrong.
            print(f"{rec['ptn_file']}: read {len(moves)} moves, the record says {rec['plies']}; skipped",
                  file=sys.stderr)
            continue
        answers = endgame_error.analyse_game(engine, ptn, rec, str(i), 1)
        for a in answers:
            if a["result"] is not None or a["ply"] == 0:
                continue
            _, white_left, black_left, _ = endgame_error.board_counts(a["tps"], rec["size"])
            if min(white_left, black_left) <= args.reserves:
                lines.append(" ".join(moves[: a["ply"]]))
                results.append(endgame_error.score_for_white(rec["result"]))
                values.append(a["value"] if a["to_move"] == "white" else -a["value"])
                break
    engine.stdin.close()
    engine.wait()
    if not lines:
        print(f"no game reached {args.reserves} reserves", file=sys.stderr)
        return 1
    Path(args.out).write_text("\n".join(lines) + "\n")
    won = sum(1 for r in results if r > 0)
    lost = sum(1 for r in results if r < 0)
    print(f"{len(lines)} positions written to {args.out}")
    print(f"the real games from them: White {won} won, {lost} lost, {len(lines) - won - lost} drawn, "
          f"mean result for White {sum(results) / len(results):+.3f}")
    print(f"raw value for White there: {sum(values) / len(values):+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
