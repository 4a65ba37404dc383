#!/usr/bin/env python3
"""A client of Bredon's JSON analysis engine (docs/analysis-engine.md), standard library only.

Usage: python3 docs/examples/analyse.py [PATH_TO_BREDON]

Starts `bredon analyse --json` (PATH_TO_BREDON, else $BREDON, else `bredon` on PATH),
sends three queries — a 6x6 position as TPS with the ownership map, two plies of a short
5x5 game given as PTN, and one malformed query — prints what comes back and checks it.
crates/cli/tests/it/analysis_engine.rs runs this very file in CI.
"""
import json
import os
import subprocess
import sys

BREDON = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BREDON", "bredon")

QUERIES = [
    # One position (a 6x6 game after 14 plies, white to move) with komi 2, and who will
    # own each square at the end.
    {
        "id": "middle",
        "tps": "x5,2/x6/x,2,1,1C,1,x/2,1,2,2C,1,2/x2,1,x,2,x/1,x5 1 8",
        "komi": 2,
        "visits": 64,
        "ownership": True,
    },
    # A game: the positions after 0 and 3 plies (0 = the start), three top moves each.
    {
        "id": "game",
        "ptn": '[Size "5"]\n[Komi "0"]\n\n1. a1 e5\n2. c3 c2\n3. d3\n',
        "plies": [0, 3],
        "visits": 48,
        "multipv": 3,
    },
    # A typo: answered with an error naming the field, and the engine goes on.
    {"id": "typo", "tps": "x5/x5/x5/x5/x5 1 1", "komy": 2},
]


def show_ownership(own, size):
    """The ownership map as text, rank `size` on top: W/w white, B/b black, . unsure."""
    rows = []
    for rank in reversed(range(size)):
        cells = []
        for col in range(size):
            o = own[rank * size + col]
            cells.append("W" if o > 0.4 else "w" if o > 0.1 else "B" if o < -0.4 else "b" if o < -0.1 else ".")
        rows.append(f"  {rank + 1} " + " ".join(cells))
    rows.append("    " + " ".join("abcdefgh"[:size]))
    return "\n".join(rows)


def main():
    engine = subprocess.Popen(
        [BREDON, "analyse", "--json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    for q in QUERIES:
        engine.stdin.write(json.dumps(q) + "\n")
    engine.stdin.flush()
    engine.stdin.close()  # the engine answers everything pending, then exits
    answers = [json.loads(line) for line in engine.stdout]
    assert engine.wait(timeout=300) == 0, "bredon analyse --json failed"

    for a in answers:
        if "error" in a:
            print(f"{a['id']}: error in field {a['field']!r}: {a['error']}")
            continue
        where = f" ply {a['ply']}" if "ply" in a else ""
        w, d, l = a["wdl"] if a["wdl"] else (None, None, None)
        print(
            f"{a['id']}{where}: {a['to_move']} to move, value {a['value']:+.2f} for {a['perspective']}"
            + (f", W/D/L {w:.2f}/{d:.2f}/{l:.2f}" if w is not None else "")
            + (f", margin {a['margin']:+.1f} flats" if a["margin"] is not None else "")
            + f", best {a['best_move']} ({a['visits']} visits, {a['time_ms']} ms)"
        )
        for m in a["moves"]:
            print(f"    {m['move']:<6} visits {m['visits']:>4}  prior {m['prior']:.3f}  line {' '.join(m['pv'])}")
        if a.get("ownership"):
            print(show_ownership(a["ownership"], round(len(a["ownership"]) ** 0.5)))

    by_id = {}
    for a in answers:
        by_id.setdefault(a["id"], []).append(a)
    # The TPS: one answer, every field present, the map has 36 squares in [-1, 1]; a1
    # (white's first flat, alone in its corner) leans white, f6 (black's) black.
    (middle,) = by_id["middle"]
    assert middle["to_move"] == "white" and middle["komi"] == 2, middle
    own = middle["ownership"]
    assert len(own) == 36 and all(-1 <= o <= 1 for o in own), own
    assert own[0] > 0 > own[35], (own[0], own[35])
    assert abs(sum(middle["wdl"]) - 1) < 1e-3, middle["wdl"]
    assert middle["best_move"] == middle["pv"][0] == middle["moves"][0]["move"]
    # The game: one answer per ply asked for, in that order; after 3 plies black moves.
    assert [a["ply"] for a in by_id["game"]] == [0, 3], by_id["game"]
    assert by_id["game"][1]["to_move"] == "black"
    assert all(1 <= len(a["moves"]) <= 3 for a in by_id["game"])
    assert "ownership" not in by_id["game"][0], "not asked for"
    # The typo: an error naming the field.
    (typo,) = by_id["typo"]
    assert typo["field"] == "komy" and "unknown field" in typo["error"], typo
    print("all answers as expected")


if __name__ == "__main__":
    main()
