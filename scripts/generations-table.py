#!/usr/bin/env python3
"""Prints a run's logs/generations.jsonl as a table (every K-th generation with an
evaluation; EVERY = 0: every generation), for reports.
Usage: scripts/generations-table.py RUN_DIR [EVERY]"""
import json
import sys
from pathlib import Path

run = Path(sys.argv[1])
every = int(sys.argv[2]) if len(sys.argv) > 2 else 10
rows = [json.loads(l) for l in (run / "logs" / "generations.jsonl").read_text().splitlines() if l.strip()]
print(f"{'gen':>4} {'step':>6} {'loss p':>7} {'loss v':>7} {'plies':>6} {'W/B/D %':>10} "
      f"{'evals/s':>8} {'games/h':>8} {'samples/s':>9}  eval scores")
last = None
for r in rows:
    evals = dict((name, score) for name, score in r.get("eval", []))
    if not evals and every > 0:
        continue
    if last is not None and r["generation"] - last < every and r is not rows[-1]:
        continue
    last = r["generation"]
    wbd = f"{r['white_wins']*100:.0f}/{r['black_wins']*100:.0f}/{r['draws']*100:.0f}"
    ev = "  ".join(f"vs {k} {v*100:.0f}%" for k, v in evals.items())
    print(f"{r['generation']:>4} {r['step']:>6} {r['policy_loss']:>7.3f} {r['value_loss']:>7.3f} "
          f"{r['avg_plies']:>6.1f} {wbd:>10} {r['evals_per_sec']:>8.0f} {r['games_per_hour']:>8.0f} "
          f"{r['samples_per_sec']:>9.0f}  {ev}")
