#!/usr/bin/env python3
"""A network's colour bias at the start of real games: its value for White after each game's
opening, against how those games ended, over as many games as there are records (the
openings' positions differ only by a few plies, so no game's own moves are needed: each
record's `opening` is enough, and thousands of games make the outcome's noise small).

    scripts/opening-bias.py SOURCE... --model M [--model M2 ...] [--size 6] [--visits 1]
                            [--bredon target/release/bredon]

SOURCE is an arena record (`results.jsonl`, or a copy in experiments/results/) or a file
of openings, one a line, PTN moves separated by spaces (../shared/data/openings/), for
which there is no outcome to compare with. Only records of `--size` are read; each game
counts with its own komi. For each model it runs `bredon analyse --json` once (`--visits 1`
is the raw value head) and prints, over the games, the mean value for White after the
opening (White to move after a 4-ply opening, Black after a 2-ply one: the value is
always White's), the mean result for White (win 1, draw 0, loss -1), and the mean of
value - result with its standard error: a network biased toward White reads > 0.

With two models or more, each after the first also gets a paired line: the mean of its
value minus the first model's over the same games. The games' results cancel out of that
difference, so it says whether one network reads White lower than another far more
precisely than the two biases' own errors do; its standard error treats the games of one
opening as one cluster (their values are the same), so it is the error over openings.
It says nothing of the scatter between checkpoints of one run, which is far larger
(docs/training.md: ±0.1 within ten generations): compare averaged networks
(`bredon export --average`), not single checkpoints.
"""
import argparse
import json
import math
import subprocess
import sys
from pathlib import Path


def mean_se(xs: list) -> tuple:
    n = len(xs)
    m = sum(xs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return m, sd / math.sqrt(n)


def clustered_mean_se(xs: list, keys: list) -> tuple:
    """Mean of xs and its standard error with the xs of one key as one cluster (the
    cluster-robust sandwich estimator, with the small-sample factor G / (G - 1))."""
    n = len(xs)
    m = sum(xs) / n
    sums = {}
    for x, k in zip(xs, keys):
        sums[k] = sums.get(k, 0.0) + (x - m)
    g = len(sums)
    if g < 2:
        return m, 0.0
    var = sum(v * v for v in sums.values()) * g / (g - 1) / (n * n)
    return m, math.sqrt(var)


def read_source(path: Path, size: int) -> list:
    """(opening moves, half komi, result for White or None) for every game or opening."""
    if path.suffix == ".jsonl":
        games = []
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            if r["size"] != size or r.get("white_score") is None:
                continue
            games.append((tuple(r["opening"].split()), r["half_komi"], 2 * r["white_score"] - 1))
        return games
    half_komi = 4 if size >= 6 else 0
    return [(tuple(l.split()), half_komi, None) for l in path.read_text().splitlines() if l.strip()]


def opening_values(bredon: str, model: str, size: int, visits: int, positions: list) -> dict:
    """{(moves, half komi): the network's value for White after the moves}."""
    engine = subprocess.Popen([bredon, "analyse", "--json", "--model", model],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    for i, (moves, half_komi) in enumerate(positions):
        ptn = f'[Size "{size}"]\n\n' + " ".join(moves)
        query = {"id": str(i), "ptn": ptn, "plies": [len(moves)], "visits": visits,
                 "komi": half_komi / 2, "perspective": "white"}
        engine.stdin.write(json.dumps(query) + "\n")
    engine.stdin.close()
    values = {}
    for line in engine.stdout:
        a = json.loads(line)
        if "error" in a:
            raise SystemExit(f"{model}: opening {' '.join(positions[int(a['id'])][0])}: {a['error']}")
        values[positions[int(a["id"])]] = a["value"]
    if engine.wait() != 0:
        raise SystemExit(f"{model}: bredon analyse exited with status {engine.returncode}")
    if len(values) != len(positions):
        raise SystemExit(f"{model}: {len(values)} answers for {len(positions)} positions")
    return values


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", nargs="+", type=Path)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--size", type=int, default=6)
    ap.add_argument("--visits", type=int, default=1)
    ap.add_argument("--each", action="store_true", help="a line per source as well as the total")
    ap.add_argument("--bredon", default="target/release/bredon")
    args = ap.parse_args()
    sources = {p: read_source(p, args.size) for p in args.source}
    games = [g for gs in sources.values() for g in gs]
    if not games:
        print(f"no {args.size}x{args.size} games or openings in the sources", file=sys.stderr)
        return 1
    positions = sorted({(moves, hk) for moves, hk, _ in games})
    values = {m: opening_values(args.bredon, m, args.size, args.visits, positions) for m in args.model}

    def report(name: str, gs: list) -> None:
        played = [g for g in gs if g[2] is not None]
        line = f"{name:<52} {len(gs):5}"
        if played:
            r, r_se = mean_se([g[2] for g in played])
            line += f"  result {r:+.3f} ± {r_se:.3f}"
        print(line)
        for m in args.model:
            v, v_se = mean_se([values[m][(g[0], g[1])] for g in gs])
            out = f"    {Path(m).name:<48} value {v:+.3f} ± {v_se:.3f}"
            if played:
                b, b_se = mean_se([values[m][(g[0], g[1])] - g[2] for g in played])
                out += f"  value - result {b:+.3f} ± {b_se:.3f}"
            print(out)
        first = args.model[0]
        keys = [(g[0], g[1]) for g in gs]
        for m in args.model[1:]:
            d, d_se = clustered_mean_se([values[m][k] - values[first][k] for k in keys], keys)
            print(f"    {Path(m).name:<48} value - {Path(first).name}'s {d:+.3f} ± {d_se:.3f} (paired, by opening)")

    print(f"{args.size}x{args.size}, {len(positions)} distinct openings, {args.visits} visit(s); "
          "values and results for White")
    if args.each or len(sources) == 1:
        for p, gs in sources.items():
            if gs:
                report(p.name if p.name != "results.jsonl" else str(p.parent), gs)
    if len(sources) > 1:
        report("all", games)
    return 0


if __name__ == "__main__":
    sys.exit(main())
