#!/usr/bin/env python3
"""Where a network misjudges the end of the game: its value error on every position of a
match's games, by how far the game was from its end (reserves left, empty squares), for
one player's games. Runs `bredon analyse --json` (the network at `--visits`, 1 = the raw
value head) on each game's PTN and compares the value with the game's real result from
the side to move's point of view; the margin head with the real final flat margin.

    scripts/endgame-error.py DIR PLAYER [--bredon target/release/bredon] [--model M]
                             [--visits 1] [--games N] [--colour white|black]

DIR is an arena output directory (results.jsonl and games/), or a held-out folder of
experiments/heldout/ (the PTN files beside results.jsonl). PLAYER names the games to
look at (those PLAYER played; with --colour, only those it played as that colour); the
positions of both sides are judged.
"""
import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

RESERVES = {3: (10, 0), 4: (15, 0), 5: (21, 1), 6: (30, 1), 7: (40, 2), 8: (50, 2)}


def score_for_white(result: str) -> float:
    if result.startswith("1/2") or result.startswith("½"):
        return 0.0
    return 1.0 if result.endswith("-0") else -1.0


def board_counts(tps: str, size: int):
    """(empty squares, white flats left, black flats left, white flats - black flats on top)."""
    rows = tps.split()[0].split("/")
    empty, placed, caps, top = 0, {1: 0, 2: 0}, {1: 0, 2: 0}, 0
    for row in rows:
        for cell in row.split(","):
            if cell.startswith("x"):
                empty += int(cell[1:] or 1)
                continue
            stack = cell.rstrip("SC")
            for ch in stack:
                placed[int(ch)] += 1
            if cell.endswith("C"):
                caps[int(stack[-1])] += 1
            elif not cell.endswith("S"):
                top += 1 if stack[-1] == "1" else -1
    flats, _ = RESERVES[size]
    left = {c: flats - (placed[c] - caps[c]) for c in (1, 2)}
    return empty, left[1], left[2], top


def bucket(n: int, edges):
    for lo, hi in edges:
        if lo <= n <= hi:
            return f"{lo}-{hi}" if hi < 999 else f"{lo}+"
    return "?"


def ptn_path(root: Path, rec: dict) -> Path:
    """A game's PTN file: under games/ in an arena output directory, beside results.jsonl
    in a held-out folder (experiments/heldout/)."""
    path = root / rec["ptn_file"]
    return path if path.exists() else root / Path(rec["ptn_file"]).name


def analyse_game(engine, ptn: str, rec: dict, ident: str, visits: int) -> list:
    """`bredon analyse --json`'s answers for every position of one game (its PTN text and
    results.jsonl record), up to its last (an error is reported on stderr and ends the list)."""
    query = {"id": ident, "ptn": ptn, "visits": visits,
             "komi": rec["half_komi"] / 2, "perspective": "side_to_move"}
    engine.stdin.write(json.dumps(query) + "\n")
    engine.stdin.flush()
    answers = []
    while True:
        a = json.loads(engine.stdout.readline())
        if "error" in a:
            print(f"{rec['ptn_file']}: {a['error']}", file=sys.stderr)
            break
        answers.append(a)
        # The game's last position: over by the rules, or (a forfeit, a crash, an
        # adjudication) not, when `bredon analyse` reports no result to stop on.
        if a["result"] is not None or a["ply"] >= rec["plies"]:
            break
    return answers


def low_end(name: str) -> int:
    """The lower bound of a bucket's name (`bucket`'s "3-5" or "15+"), to sort by."""
    return int(name.split("-")[0].rstrip("+"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("player")
    ap.add_argument("--bredon", default="target/release/bredon")
    ap.add_argument("--model", default=None)
    ap.add_argument("--visits", type=int, default=1)
    ap.add_argument("--games", type=int, default=0, help="at most this many games (0: all)")
    ap.add_argument("--colour", choices=["white", "black"], default=None,
                    help="only the games PLAYER played as this colour")
    args = ap.parse_args()
    root = Path(args.dir)
    records = [json.loads(l) for l in (root / "results.jsonl").read_text().splitlines() if l.strip()]
    games = [r for r in records if args.player in (r["white"], r["black"]) and r.get("ptn_file")]
    if args.colour:
        games = [r for r in games if r[args.colour] == args.player]
    if args.games:
        games = games[: args.games]
    if not games:
        print(f"no games of {args.player} in {root}", file=sys.stderr)
        return 1
    cmd = [args.bredon, "analyse", "--json"] + (["--model", args.model] if args.model else [])
    engine = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    # (reserves bucket, empty bucket) -> [positions, sum sq error, wrong sign,
    # sum |margin error| over flat-win and drawn games, their positions]
    table = defaultdict(lambda: [0, 0.0, 0, 0.0, 0])
    by_result = defaultdict(lambda: [0, 0.0, 0])
    by_reserves = defaultdict(lambda: [0, 0.0, 0])
    # reserves bucket -> [positions, sum of the value for white, sum of the result for white]
    bias = defaultdict(lambda: [0, 0.0, 0.0])
    skipped = 0
    for i, rec in enumerate(games):
        size, white = rec["size"], score_for_white(rec["result"])
        answers = analyse_game(engine, ptn_path(root, rec).read_text(), rec, str(i), args.visits)
        if not answers or answers[-1]["result"] is None:
            # No error, or a game not ended by the rules: its values cannot be judged
            # against a result the position does not show.
            skipped += 1
            continue
        final_empty, _, _, final_top = board_counts(answers[-1]["tps"], size)
        final_margin_white = final_top - rec["half_komi"] / 2
        for a in answers[:-1]:
            if a["value"] is None:
                continue
            white_to_move = a["to_move"] == "white"
            truth = white if white_to_move else -white
            err = a["value"] - truth
            empty, wl, bl, _ = board_counts(a["tps"], size)
            reserves = min(wl, bl)
            key = (bucket(reserves, [(0, 2), (3, 5), (6, 9), (10, 14), (15, 999)]),
                   bucket(empty, [(0, 2), (3, 5), (6, 9), (10, 999)]))
            b = bias[key[0]]
            b[0] += 1
            b[1] += a["value"] if white_to_move else -a["value"]
            b[2] += white
            total = by_reserves[key[0]]
            total[0] += 1
            total[1] += err * err
            total[2] += int(truth != 0 and a["value"] * truth < 0)
            row = table[key]
            row[0] += 1
            row[1] += err * err
            row[2] += int(truth != 0 and a["value"] * truth < 0)
            if a.get("margin") is not None and "R" not in rec["result"]:
                truth_margin = final_margin_white if white_to_move else -final_margin_white
                row[3] += abs(a["margin"] - truth_margin)
                row[4] += 1
            mover = rec["white"] if white_to_move else rec["black"]
            if mover == args.player:
                outcome = "won" if truth > 0 else "lost" if truth < 0 else "drawn"
                r = by_result[(outcome, key[0])]
                r[0] += 1
                r[1] += err * err
                r[2] += int(truth != 0 and a["value"] * truth < 0)
    engine.stdin.close()
    engine.wait()
    as_colour = f" as {args.colour}" if args.colour else ""
    if skipped:
        print(f"skipped {skipped} game(s) with an error or not ended by the rules", file=sys.stderr)
    print(f"{len(games) - skipped} games of {args.player}{as_colour} in {root}, the network at {args.visits} visit(s)")
    print()
    print("All positions, by the mover's-side reserves left (fewer of the two) and empty squares:")
    print("| reserves | empty | positions | value MSE | wrong side | margin error (flats; games not won by a road) |")
    print("|---|---|---|---|---|---|")
    for key in sorted(table, key=lambda k: (low_end(k[0]), low_end(k[1]))):
        n, sq, wrong, merr, mn = table[key]
        margin = f"{merr / mn:.2f}" if mn else "-"
        print(f"| {key[0]} | {key[1]} | {n} | {sq / n:.3f} | {100 * wrong / n:.1f} % | {margin} |")
    print()
    print("All positions, by the reserves left only (the figures to compare two networks by):")
    print("| reserves | positions | value MSE | wrong side |")
    print("|---|---|---|---|")
    for key in sorted(by_reserves, key=low_end):
        n, sq, wrong = by_reserves[key]
        print(f"| {key} | {n} | {sq / n:.3f} | {100 * wrong / n:.1f} % |")
    print()
    print("Bias: the mean value for white against the mean result for white, by the reserves left")
    print("(a network that overrates the positions its own search steers into shows it here):")
    print("| reserves | positions | value for white | result for white | value − result |")
    print("|---|---|---|---|---|")
    for key in sorted(bias, key=low_end):
        n, v, t = bias[key]
        print(f"| {key} | {n} | {v / n:+.3f} | {t / n:+.3f} | {(v - t) / n:+.3f} |")
    print()
    print(f"{args.player} to move, by how its game ended and the reserves left:")
    print("| game | reserves | positions | value MSE | wrong side |")
    print("|---|---|---|---|---|")
    for key in sorted(by_result):
        n, sq, wrong = by_result[key]
        print(f"| {key[0]} | {key[1]} | {n} | {sq / n:.3f} | {100 * wrong / n:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
