#!/usr/bin/env python3
"""Summarises CubeCL's own kernel profile of a `bredon bench train` run on a GPU device.

    CUBECL_DEBUG_LOG=LOG CUBECL_DEBUG_OPTION=profile bredon --device wgpu bench train ...
    scripts/cubecl-profile-summary.py LOG [--tables 3] [--top 8]

With profiling on, CubeCL (burn's GPU runtime) writes a table of every kernel it ran each
time the device is synchronised. `bench train` ends with steps that synchronise after each
phase (prepare, forward, backward, update; the prepare phase only uploads and launches no
kernel), so the log's last three tables are the last step's forward, backward and update:
how many kernels each launched, their device time, and which kernels took it. Thousands of
small kernels a step mean the step is bound by launching them (burn without fusion runs one
kernel per tensor operation), a few large ones that it is bound by their speed.
"""

import argparse
import collections
import re
import sys

DURATION = re.compile(r"^([0-9.]+)(ns|µs|us|ms|s)$")
UNIT = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}


def millis(text):
    m = DURATION.match(text.strip())
    return float(m.group(1)) * UNIT[m.group(2)] if m else None


def kind_and_name(parts):
    """A kernel's kind and name from its cells (`kind, ..., name`, or `name` alone for
    kernels that have no kind: their name less its hash is the kind)."""
    name = parts[-1]
    return (parts[0] if len(parts) > 1 else re.sub(r"_[0-9a-f]{6,}$", "", name)), name


def summarise(launches):
    """Launches timed one by one, `(kind, name, ms)` each, as a summary table."""
    rows = collections.OrderedDict()
    for kind, name, ms in launches:
        k, n, total, count = rows.get(name, (kind, name, 0.0, 0))
        rows[name] = (k, n, total + ms, count + 1)
    return (sum(ms for _, _, ms in launches), len(launches), list(rows.values()))


def tables(path):
    """Each summary table as (total_ms, kernels, rows); a row is (kind, name, ms, count).

    CubeCL writes a line per kernel as it is timed and a summary of them when the device
    is synchronised; the summary of the last synchronisation is written by a background
    task that a process ending at once may not leave time for, so kernels listed after
    the last summary make one more table of their own."""
    out, rows, launches = [], [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("| "):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "Total" and len(cells) >= 3:
                total, count = millis(cells[1]), cells[2]
                if total is not None and count.isdigit():
                    out.append((total, int(count), rows))
                rows, launches = [], []
            elif len(cells) >= 2 and millis(cells[0]) is not None and not cells[-1].endswith("%"):
                # `| duration | kind | ... | name`: one launch, timed.
                launches.append((*kind_and_name(cells[1:]), millis(cells[0])))
            elif len(cells) >= 4 and cells[-1].endswith("%"):
                # `| kind | name | time | count | % |`, `| name | time | count | % |` for
                # kernels that have no kind (convolutions, copies), or a generic kernel's
                # kind, its type parameters and its name (`| MatmulEntry | TensorArgs |
                # ... | RowMajorGlobalPartitionMatmul_… | time | count | % |`).
                ms, count = millis(cells[-3]), cells[-2]
                if ms is not None and count.isdigit():
                    rows.append((*kind_and_name(cells[:-3]), ms, int(count)))
    if launches:
        out.append(summarise(launches))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--tables", type=int, default=3, help="how many of the last tables to show")
    ap.add_argument("--top", type=int, default=8, help="kernels shown per table")
    a = ap.parse_args()
    found = tables(a.log)
    if not found:
        print(f"no CubeCL profile tables in {a.log} (was CUBECL_DEBUG_OPTION=profile set?)")
        return 1
    names = ["forward", "backward", "update"] if a.tables == 3 and len(found) >= 3 else []
    last = found[-a.tables :]
    step_ms = sum(t for t, _, _ in last)
    step_kernels = sum(k for _, k, _ in last)
    print(f"{len(found)} profile tables; the last {len(last)}: {step_kernels} kernels, {step_ms:.2f} ms of kernel time")
    for i, (total, kernels, rows) in enumerate(last):
        label = names[i] if names else f"table {len(found) - len(last) + i + 1}"
        by_kind = collections.Counter()
        for kind, _, ms, _ in rows:
            by_kind[kind] += ms
        kinds = ", ".join(f"{k} {ms:.2f}" for k, ms in by_kind.most_common(5))
        print(f"  {label}: {kernels} kernels, {total:.2f} ms ({total * 1e3 / max(kernels, 1):.1f} us a kernel); by kind (ms): {kinds}")
        for kind, name, ms, count in sorted(rows, key=lambda r: -r[2])[: a.top]:
            print(f"    {ms:9.3f} ms {count:6d} x  {kind} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
