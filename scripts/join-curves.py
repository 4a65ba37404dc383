#!/usr/bin/env python3
"""Joins the Elo curve of a run started with `bredon train --init-from` to the curve of the
run its model came from, on one Elo scale.

The continuation's ladder is anchored at its gen-0000, which is the source run's checkpoint
ANCHOR: its points are shifted by ANCHOR's Elo in the source curve, and its generations are
renumbered to continue the source's (gen-0000 of the continuation = ANCHOR, not repeated).
Minutes are taken as they are (the continuation's curve already counts the source's minutes
when init.json records them). Intervals stay relative to each curve's own anchor.

A joined curve can be the source of a further continuation (its `part` column goes on).

Usage: scripts/join-curves.py SOURCE_CURVE.csv ANCHOR CONTINUATION_CURVE.csv > joined.csv
(the curves are `elo-curve.csv` files: name,generation,step,minutes,elo,lo95,hi95)
"""
import csv
import sys


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-2])
    source, anchor, cont = read(sys.argv[1]), sys.argv[2], read(sys.argv[3])
    base = next((r for r in source if r["name"] == anchor), None)
    if base is None:
        sys.exit(f"{anchor} is not in {sys.argv[1]}")
    shift, gen0 = float(base["elo"]), int(base["generation"])
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["name", "generation", "step", "minutes", "elo", "lo95", "hi95", "part"])
    # A source that is itself a joined curve keeps its parts; the continuation is the next.
    part = max((int(r.get("part") or 1) for r in source), default=1) + 1
    for r in source:
        if int(r["generation"]) <= gen0:
            out.writerow([r["name"], r["generation"], r["step"], r["minutes"], r["elo"], r["lo95"], r["hi95"], r.get("part") or 1])
    for r in cont:
        g = int(r["generation"])
        if g == 0:
            continue
        row = [f"gen-{gen0 + g:04}", gen0 + g, r["step"], r["minutes"]]
        row += [f"{float(r[k]) + shift:.1f}" for k in ("elo", "lo95", "hi95")]
        out.writerow(row + [part])


if __name__ == "__main__":
    main()
