#!/usr/bin/env python3
"""Soak test of `bredon tei` (not run by CI; a few minutes on 2 cores).

1. Arena: `bredon arena` plays GAMES games between two `bredon tei` engines (TEI players,
   `go nodes NODES`), each engine process living for the whole match. The engines' RSS is
   sampled every second from /proc.
2. Storm: one `bredon tei` process gets CYCLES rounds of `position` / `go infinite` /
   `stop` (a few ms apart, some with `isready` or a new `position` in the middle of the
   search), every search must answer with exactly one `bestmove`; RSS sampled every 100
   rounds.
3. Afterwards: every engine exited after `quit`, and no zombie children are left.

It prints the numbers and exits non-zero on a failure: an engine that hangs (no
`bestmove` within 30 s), a lost or extra `bestmove`, a zombie, an arena error, or RSS
growth beyond noise (last sample more than 20% or 16 MB above the first sample taken
after warm-up).

usage: scripts/soak-tei.py [--bredon target/release/bredon] [--model FILE] [--games 200]
                           [--nodes 50] [--cycles 1000] [--size 4]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def children(pid):
    """Direct children of pid: (pid, comm, state)."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1 : s.rindex(")")]
        fields = s[s.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            out.append((int(p), comm, fields[0]))
    return out


def grew(samples):
    """(first, last, max) after warm-up (the first fifth of the samples is skipped)."""
    warm = samples[len(samples) // 5 :] or samples
    return warm[0], warm[-1], max(warm)


def too_much(first, last):
    return last > first * 1.2 and last - first > 16 * 1024


def arena(args, tmp):
    engine = f"{args.bredon} tei --size {args.size}" + (f" --model {args.model}" if args.model else "")
    out = os.path.join(tmp, "arena")
    cmd = [
        args.bredon, "arena", "--out", out, "--size", str(args.size), "--games", str(args.games),
        "--threads", "2", "--schedule", "gauntlet",
        "--player", f"tei:{engine};name=a;nodes={args.nodes}",
        "--player", f"tei:{engine};name=b;nodes={args.nodes}",
    ]
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples = {}  # pid -> [rss kB]
    zombies = set()
    while proc.poll() is None:
        for pid, comm, state in children(proc.pid):
            if state == "Z":
                zombies.add(pid)
            elif comm == "bredon":
                r = rss_kb(pid)
                if r:
                    samples.setdefault(pid, []).append(r)
        time.sleep(1.0)
    output = proc.stdout.read()
    secs = time.time() - t0
    ok = proc.returncode == 0
    results = os.path.join(out, "results.jsonl")
    games = sum(1 for _ in open(results)) if os.path.exists(results) else 0
    print(f"arena: {games} games in {secs:.0f} s, exit {proc.returncode}, {len(samples)} engine processes, "
          f"{len(zombies)} zombie engines seen")
    ok &= not zombies
    if not ok or games < args.games:
        print(output[-3000:])
        ok = False
    for pid, s in sorted(samples.items()):
        first, last, peak = grew(s)
        bad = too_much(first, last)
        ok &= not bad
        print(f"  engine {pid}: {len(s)} samples, RSS after warm-up {first} kB -> {last} kB (max {peak} kB)"
              + ("  GROWTH" if bad else ""))
    return ok


class Engine:
    def __init__(self, args):
        cmd = [args.bredon, "tei", "--size", str(args.size)] + (["--model", args.model] if args.model else [])
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, bufsize=1)
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append(line.strip())
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)
            self.cv.notify_all()

    def send(self, s):
        self.p.stdin.write(s + "\n")
        self.p.stdin.flush()

    def wait(self, pred, timeout=30.0):
        """Waits for a line matching pred; returns it and the lines consumed before it."""
        deadline = time.time() + timeout
        with self.cv:
            while True:
                for i, l in enumerate(self.lines):
                    if l is None:
                        raise RuntimeError("engine exited")
                    if pred(l):
                        before = self.lines[:i]
                        del self.lines[: i + 1]
                        return l, before
                left = deadline - time.time()
                if left <= 0:
                    raise RuntimeError("timed out: the engine hangs")
                self.cv.wait(left)


def storm(args):
    e = Engine(args)
    e.send("tei")
    e.wait(lambda l: l == "teiok")
    e.send(f"teinewgame {args.size}")
    e.send("isready")
    e.wait(lambda l: l == "readyok")
    samples, t0, extra = [], time.time(), 0
    moves = ["a1", "b2", "c3"] if args.size >= 3 else []
    for i in range(args.cycles):
        e.send("position startpos moves " + " ".join(moves[: i % 4]))
        e.send("go infinite")
        time.sleep((i % 5) * 0.002)
        if i % 7 == 3:
            e.send("isready")  # answered during the search
        if i % 11 == 5:
            e.send("position startpos")  # stops the search, which sends its bestmove
        else:
            e.send("stop")
        _, before = e.wait(lambda l: l.startswith("bestmove"))
        extra += sum(1 for l in before if l.startswith("bestmove"))
        if i % 7 == 3 and "readyok" not in before:
            e.wait(lambda l: l == "readyok")
        if i % 100 == 0:
            samples.append(rss_kb(e.p.pid))
    # Nothing further may arrive: a stray bestmove would show up before this readyok.
    e.send("isready")
    _, before = e.wait(lambda l: l == "readyok")
    extra += sum(1 for l in before if l.startswith("bestmove"))
    samples.append(rss_kb(e.p.pid))
    secs = time.time() - t0
    e.send("quit")
    try:
        code = e.p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        e.p.kill()
        code = "hung after quit"
    first, last, peak = grew(samples)
    bad = too_much(first, last)
    print(f"storm: {args.cycles} go infinite/stop cycles in {secs:.1f} s, {extra} extra bestmoves, exit {code}")
    print(f"  RSS after warm-up {first} kB -> {last} kB (max {peak} kB), samples {samples}" + ("  GROWTH" if bad else ""))
    return extra == 0 and code == 0 and not bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bredon", default="target/release/bredon")
    ap.add_argument("--model", default="checkpoints/shipped/4x4.bredon")
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--size", type=int, default=4)
    ap.add_argument("--skip-arena", action="store_true", help="only the go infinite/stop storm")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ok = args.skip_arena or arena(args, tmp)
        ok &= storm(args)
    zombies = [c for c in children(os.getpid()) if c[2] == "Z"]
    print(f"zombie children: {len(zombies)}")
    ok &= not zombies
    print("soak: OK" if ok else "soak: FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
