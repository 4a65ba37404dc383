#!/usr/bin/env python3
"""Bredon's forward pass against onnxruntime on the same network, side by side.

For each network, runs `bredon bench nn` (fast and burn paths; it also exports the
network it measures as ONNX), then times that ONNX file in onnxruntime (CPU provider) at
the same batch sizes, and prints positions/s in one table.

    scripts/bench-onnxruntime.py                       # shipped 4x4 model and a 6x6 b6c64 net
    scripts/bench-onnxruntime.py --net model:checkpoints/4x4/exports/gen-0100.bredon
    scripts/bench-onnxruntime.py --net 5:6:64 --batches 1,64 --seconds 5

Needs `python3 -m pip install onnxruntime` and a release build (`cargo build --release`).

For one network in every peer runtime (onnxruntime, OpenVINO f32/bf16, PyTorch bf16) at
their best settings, with each one's agreement with Bredon's outputs, see
`scripts/bench-peers.py`.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bredon_rates(bredon, net, batches, seconds, onnx_path):
    """Runs `bredon bench nn` for one net; returns the net name, the fast kernels' ISA and
    {batch: {column: rate}} with the columns of its main table (`fast:f32`, `fast:int8`
    where the CPU runs 8-bit integers, `burn`)."""
    cmd = [bredon, "bench", "nn", "--batches", ",".join(map(str, batches)), "--seconds", str(seconds), "--onnx", onnx_path]
    if net.startswith("model:"):
        cmd += ["--model", net[len("model:"):]]
    else:
        size, blocks, channels = net.split(":")
        cmd += ["--sizes", size, "--blocks", blocks, "--channels", channels]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rates, name, isa, cols = {}, None, "?", []
    for line in out.splitlines():
        if line.startswith("#") and rates:
            break  # the phase-by-phase table that follows the main one
        if line.startswith("size"):
            isa = line.split("fast kernels on the CPU:", 1)[-1].split(";")[0].strip(" )")
            words = line.split("    (", 1)[0].split()[3:]
            cols = []
            for w in words:  # "fast:f32 x2/s" (batches in flight) is one column
                if re.fullmatch(r"x\d+/s", w) and cols:
                    cols[-1] += " " + w[:-2]
                else:
                    cols.append(w[:-2] if w.endswith("/s") else w)
            continue
        parts = line.split()
        if cols and len(parts) >= 3 + len(cols) and parts[0][0].isdigit():
            name = f"{parts[0]} {parts[1]}"
            rates[int(parts[2])] = dict(zip(cols, map(float, parts[3:3 + len(cols)])))
    return name, isa, rates


def ort_rate(session, size, batch, seconds):
    import numpy as np
    rng = np.random.default_rng(batch)
    planes = session.get_inputs()[0].shape[1]  # 27 (input version 1) or 31 (version 2)
    x = (rng.random((max(batch, 1024), planes, size, size)) < 0.2).astype(np.float32)
    session.run(None, {"planes": x[:batch]})  # warm-up
    done, i, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds or done == 0:
        lo = (i * batch) % (len(x) - batch + 1)
        session.run(None, {"planes": x[lo:lo + batch]})
        done += batch
        i += 1
    return done / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bredon", default=os.path.join(ROOT, "target", "release", "bredon"))
    ap.add_argument("--net", action="append",
                    help="model:FILE (a .bredon file or checkpoint directory) or SIZE:BLOCKS:CHANNELS (fresh net); repeatable")
    ap.add_argument("--batches", default="1,16,64,256")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="onnxruntime intra-op threads")
    args = ap.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        sys.exit("needs onnxruntime: python3 -m pip install onnxruntime")
    if not os.path.exists(args.bredon):
        sys.exit(f"{args.bredon} not found: cargo build --release")
    nets = args.net or [f"model:{os.path.join(ROOT, 'checkpoints', 'shipped', '4x4.bredon')}", "6:6:64"]
    batches = [int(b) for b in args.batches.split(",")]
    print("(scripts/bench-peers.py times one network in every peer runtime, with agreement checks)", file=sys.stderr)
    print(f"onnxruntime {ort.__version__}, {args.threads} threads; {args.seconds:g} s per measurement; positions/s")
    print(f"{'net':<14} {'batch':>5} {'bredon f32':>11} {'bredon int8':>12} {'bredon burn':>12} {'onnxruntime':>12} {'f32/ort':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for k, net in enumerate(nets):
            onnx_path = os.path.join(tmp, f"net{k}.onnx")
            name, isa, rates = bredon_rates(args.bredon, net, batches, args.seconds, onnx_path)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = args.threads
            opts.inter_op_num_threads = 1
            opts.add_session_config_entry("session.set_denormal_as_zero", "1")  # as Bredon's kernels do
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
            size = session.get_inputs()[0].shape[2]
            for b in batches:
                r = rates[b]
                fast, int8, burn = r.get("fast:f32", r.get("fast")), r.get("fast:int8"), r.get("burn")
                o = ort_rate(session, size, b, args.seconds)
                cell = lambda x, w: f"{x:>{w}.0f}" if x is not None else f"{'-':>{w}}"
                print(f"{name:<14} {b:>5} {cell(fast, 11)} {cell(int8, 12)} {cell(burn, 12)} {o:>12.0f} "
                      + (f"{fast / o:>7.2f}x" if fast else f"{'-':>8}"), flush=True)
    print(f"(bredon fast kernels: {isa})")


if __name__ == "__main__":
    main()
