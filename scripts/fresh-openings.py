#!/usr/bin/env python3
"""Balanced openings no earlier match of the repository has used: the openings of
`--from` (one PTN opening a line) minus every opening recorded in the repository's match
results (`experiments/**/*.jsonl`, `checkpoints/**/*.jsonl`: the arena's `opening` field,
for games of `--size`), shuffled with `--seed`, the first `--count` of them. Write the
output once and commit it with the match that uses it (later results would exclude it).

    scripts/fresh-openings.py --size 6 --count 50 --seed 5 \
        --from ../shared/data/openings/6s_4ply_balanced_openings.txt > experiments/openings/NAME.txt
"""
import argparse
import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def used_openings(size: int) -> set[str]:
    used = set()
    for pattern in ("experiments/**/*.jsonl", "checkpoints/**/*.jsonl"):
        for path in REPO.glob(pattern):
            for line in path.read_text(errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and record.get("size") == size and record.get("opening"):
                    used.add(" ".join(record["opening"].split()))
    return used


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="source", required=True, type=Path, help="openings file, one a line")
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    a = p.parse_args()
    lines = a.source.read_text().splitlines()
    openings = [" ".join(l.split()) for l in lines if l.strip() and not l.lstrip().startswith("#")]
    used = used_openings(a.size)
    fresh = [o for o in openings if o not in used]
    random.Random(a.seed).shuffle(fresh)
    if len(fresh) < a.count:
        print(f"only {len(fresh)} unused openings, {a.count} asked for", file=sys.stderr)
        return 1
    print(f"# {a.count} of the {len(fresh)} openings of {a.source.name} that no match recorded in the")
    print(f"# repository had used ({len(used)} used), shuffled with seed {a.seed}: scripts/fresh-openings.py")
    for o in fresh[: a.count]:
        print(o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
